package store

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/checkpoint"
)

// Result is the outcome of Ingest.
type Result struct {
	// Outcome is checkpoint.Accepted, Duplicate, Stale, Deleted, Gap or
	// Rejected.
	Outcome checkpoint.Outcome
	// Reason and Detail are set when Outcome is Rejected.
	Reason checkpoint.Reason
	Detail string
	// Enqueued reports whether an extraction job was inserted.
	Enqueued bool
}

// Meta describes where an event came from.
type Meta struct {
	Stream    string
	StreamSeq uint64
	// StreamCreated is the stream's creation time (see
	// Rejection.StreamCreated).
	StreamCreated time.Time
	PublishedAt   time.Time
	// Payload is the event as received, kept with a rejection for replay.
	Payload []byte
}

// Ingest records what an event adds to the history recall holds and, when
// there is something to summarise, enqueues the conversation's extraction,
// all in one transaction under the conversation's lock. Events that cannot
// be applied (prefix_mismatch, deleted) are recorded as rejections in the
// same transaction. An error means nothing was recorded: the caller retries.
func (s *Store) Ingest(ctx context.Context, ev *checkpoint.Event, meta Meta) (Result, error) {
	if s.cfg.Jobs == nil && ev.Kind != checkpoint.KindDelete {
		return Result{}, errors.New("store: Config.Jobs is required for ingest: give it an insert-only River client")
	}
	var res Result
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		res, err = s.ingest(ctx, tx, ev, meta)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

func (s *Store) ingest(ctx context.Context, tx pgx.Tx, ev *checkpoint.Event, meta Meta) (Result, error) {
	if ev.Kind == checkpoint.KindDelete {
		// A deletion waits for the conversation's extraction, before its
		// row lock (see lockExtraction).
		if err := lockExtraction(ctx, tx, ev.UserID, ev.ConversationID); err != nil {
			return Result{}, err
		}
	}
	row, err := lockConversation(ctx, tx, ev.UserID, ev.ConversationID)
	if err != nil {
		return Result{}, err
	}
	if ev.Kind == checkpoint.KindDelete {
		if row.deleted {
			return Result{Outcome: checkpoint.Deleted}, nil
		}
		return Result{Outcome: checkpoint.Deleted}, deleteLocked(ctx, tx, ev.UserID, ev.ConversationID)
	}
	if row.deleted {
		return rejectEvent(ctx, tx, ev, meta, checkpoint.ReasonDeleted, deletedDetail)
	}

	h := checkpoint.Held{Cursor: row.cursor, Count: row.count, Prefix: row.prefix}
	lo, hi := h.Range(ev)
	heldDigests, heldChains, err := loadChains(ctx, tx, ev.UserID, ev.ConversationID, lo, hi)
	if err != nil {
		return Result{}, err
	}
	lin, res, done, err := decideLineage(ctx, tx, h, ev, meta, heldDigests, heldChains)
	if done || err != nil {
		return res, err
	}

	// Write messages [From, n): an extension (From == held) or, when the
	// event diverges from the unsummarised tail, a replacement of it. The
	// deletion, the inserts and the update go in one round trip, but for a
	// large event (see insertMessages).
	d, n, cursor := lin.From, ev.End(), row.cursor
	b := &pgx.Batch{}
	if d < row.count {
		b.Queue(`DELETE FROM recall_message WHERE user_id = $1 AND conversation_id = $2 AND idx >= $3`,
			ev.UserID, ev.ConversationID, d)
	}
	needsExtraction, err := insertMessages(ctx, tx, b, ev, d, lin.Chain, cursor)
	if err != nil {
		return Result{}, err
	}
	enqueue := needsExtraction && (row.requestedAt == nil || time.Since(*row.requestedAt) > s.cfg.CoalesceWindow)
	b.Queue(`
UPDATE recall_conversation
SET message_count = $3, updated_at = now(),
    published_at = greatest(published_at, $4),
    extract_requested_at = CASE WHEN $5 THEN now() ELSE extract_requested_at END
WHERE user_id = $1 AND conversation_id = $2`,
		ev.UserID, ev.ConversationID, n, nullTime(meta.PublishedAt), enqueue)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return Result{}, fmt.Errorf("store messages and update conversation: %w", err)
	}
	if enqueue {
		if err := s.enqueue(ctx, tx, ev.UserID, ev.ConversationID); err != nil {
			return Result{}, fmt.Errorf("enqueue extraction: %w", err)
		}
	}
	return Result{Outcome: checkpoint.Accepted, Enqueued: enqueue}, nil
}

// rejectEvent records the rejection of ev in tx and returns its result.
func rejectEvent(ctx context.Context, tx pgx.Tx, ev *checkpoint.Event, meta Meta, reason checkpoint.Reason, detail string) (Result, error) {
	err := insertRejection(ctx, tx, Rejection{Reason: reason, Detail: detail, EventID: ev.EventID,
		UserID: ev.UserID, ConversationID: ev.ConversationID, Stream: meta.Stream, StreamCreated: meta.StreamCreated,
		StreamSeq: meta.StreamSeq, Payload: meta.Payload})
	return Result{Outcome: checkpoint.Rejected, Reason: reason, Detail: detail}, err
}

// decideLineage decides ev against the held history h and settles every
// outcome but acceptance: done reports that res is the event's result (a
// prefix mismatch is recorded as a rejection in tx); otherwise lin says
// what to write.
func decideLineage(ctx context.Context, tx pgx.Tx, h checkpoint.Held, ev *checkpoint.Event, meta Meta,
	digests, chains []checkpoint.Digest) (lin checkpoint.Lineage, res Result, done bool, err error) {
	lin, err = checkpoint.DecideLineage(h, ev, digests, chains)
	if err != nil {
		return lin, Result{}, true, err
	}
	switch lin.Outcome {
	case checkpoint.PrefixMismatch:
		res, err = rejectEvent(ctx, tx, ev, meta, checkpoint.ReasonPrefixMismatch, lin.Detail)
		return lin, res, true, err
	case checkpoint.Accepted:
		return lin, Result{}, false, nil
	default:
		return lin, Result{Outcome: lin.Outcome}, true, nil
	}
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// loadChains returns the digests and chain digests of held messages [lo, hi).
func loadChains(ctx context.Context, tx pgx.Tx, userID, conversationID string, lo, hi int) ([]checkpoint.Digest, []checkpoint.Digest, error) {
	if lo >= hi {
		return nil, nil, nil
	}
	rows, err := tx.Query(ctx, `
SELECT idx, digest, chain FROM recall_message
WHERE user_id = $1 AND conversation_id = $2 AND idx >= $3 AND idx < $4
ORDER BY idx`, userID, conversationID, lo, hi)
	if err != nil {
		return nil, nil, fmt.Errorf("load held messages: %w", err)
	}
	defer rows.Close()
	digests := make([]checkpoint.Digest, 0, hi-lo)
	chains := make([]checkpoint.Digest, 0, hi-lo)
	for rows.Next() {
		var idx int
		var d, c []byte
		if err := rows.Scan(&idx, &d, &c); err != nil {
			return nil, nil, fmt.Errorf("load held messages: %w", err)
		}
		if idx != lo+len(digests) {
			return nil, nil, fmt.Errorf("held messages of a conversation are not contiguous at %d", idx)
		}
		digests = append(digests, checkpoint.Digest(d))
		chains = append(chains, checkpoint.Digest(c))
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("load held messages: %w", err)
	}
	if len(digests) != hi-lo {
		return nil, nil, fmt.Errorf("held messages of a conversation are missing: have %d of [%d, %d)", len(digests), lo, hi)
	}
	return digests, chains, nil
}

// insertChunkBytes bounds the message text and ids one INSERT carries, so
// that a large snapshot is written in several statements and never needs its
// whole text encoded at once (pgx builds each array parameter, then the Bind
// message, in memory).
const insertChunkBytes = 512 << 10

// insertMessages stores the event's messages from index from on, chained
// from c (the chain digest of [0, from)). It reports whether any of them is
// a user request after the cursor, i.e. whether extraction has work. The
// insert of a chunk is queued into b, which is sent, with what was queued
// before, before a further chunk, so that one chunk's rows at most are held;
// the caller sends the rest.
func insertMessages(ctx context.Context, tx pgx.Tx, b *pgx.Batch, ev *checkpoint.Event, from int, c checkpoint.Digest, cursor int) (bool, error) {
	request := false
	for lo := from; lo < ev.End(); {
		hi, size := lo, 0
		for hi < ev.End() && (hi == lo || size < insertChunkBytes) {
			m := &ev.Messages[hi-ev.Offset]
			size += len(m.ID) + 64
			if m.Evidential() {
				size += len(m.Text)
			}
			hi++
		}
		var err error
		var req bool
		if b.Len() > 0 && (lo > from || size >= copyMinBytes) {
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return false, fmt.Errorf("store messages: %w", err)
			}
			*b = pgx.Batch{}
		}
		if c, req, err = insertChunk(ctx, tx, b, ev, lo, hi, c, cursor, size >= copyMinBytes); err != nil {
			return false, err
		}
		request = request || req
		lo = hi
	}
	return request, nil
}

// copyMinBytes is the size from which a chunk of messages is written with
// COPY, which pgx streams in 64 KiB buffers, rather than with one INSERT,
// whose array parameters and Bind message pgx builds whole (growing each
// buffer by doubling): for a large snapshot that garbage, not the event,
// set the worker's peak. Small chunks keep the INSERT: one round trip where
// COPY takes two.
const copyMinBytes = 128 << 10

// messageColumns are the columns insertChunk writes.
var messageColumns = []string{"user_id", "conversation_id", "idx", "digest", "chain", "role", "evidential", "message_id", "text"}

// insertChunk stores messages [lo, hi) chained from c, the chain digest of
// [0, lo), and returns the chain digest of [0, hi). A large chunk is written
// with COPY at once; a small one's INSERT is queued into b.
func insertChunk(ctx context.Context, tx pgx.Tx, b *pgx.Batch, ev *checkpoint.Event, lo, hi int, c checkpoint.Digest, cursor int, large bool) (checkpoint.Digest, bool, error) {
	count := hi - lo
	idx := make([]int32, count)
	digests := make([][]byte, count)
	chains := make([][]byte, count)
	roles := make([]string, count)
	evidential := make([]bool, count)
	ids := make([][]byte, count)
	texts := make([][]byte, count)
	request := false
	for j := range count {
		i := lo + j
		m := &ev.Messages[i-ev.Offset]
		d := ev.Digests[i-ev.Offset]
		c = c.Next(d)
		idx[j] = int32(i)
		digests[j] = d[:]
		cc := c
		chains[j] = cc[:]
		roles[j] = string(m.Role)
		evidential[j] = m.Evidential()
		ids[j] = stringBytes(m.ID)
		if evidential[j] {
			texts[j] = stringBytes(m.Text)
		}
		if m.IsRequest() && i > cursor {
			request = true
		}
	}
	if large {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"recall_message"}, messageColumns, pgx.CopyFromSlice(count, func(j int) ([]any, error) {
			return []any{ev.UserID, ev.ConversationID, idx[j], digests[j], chains[j], roles[j], evidential[j], ids[j], texts[j]}, nil
		}))
		if err != nil {
			return c, false, fmt.Errorf("store messages: %w", err)
		}
		return c, request, nil
	}
	b.Queue(`
INSERT INTO recall_message (user_id, conversation_id, idx, digest, chain, role, evidential, message_id, text)
SELECT $1, $2, t.idx, t.digest, t.chain, t.role, t.evidential, t.message_id, t.text
FROM unnest($3::int[], $4::bytea[], $5::bytea[], $6::text[], $7::bool[], $8::bytea[], $9::bytea[])
    AS t(idx, digest, chain, role, evidential, message_id, text)`,
		ev.UserID, ev.ConversationID, idx, digests, chains, roles, evidential, ids, texts)
	return c, request, nil
}

// stringBytes returns the bytes of s without a copy, for parameters pgx only
// reads: a large snapshot's text is not copied once more on its way to
// Postgres.
// "" is an empty slice, not nil, which pgx would write as NULL.
func stringBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
