package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// ExtractResult is the outcome of Extract.
type ExtractResult struct {
	// Outcome is checkpoint.Applied, NothingToSummarise or Deleted (the
	// conversation is unknown or deleted).
	Outcome checkpoint.Outcome
	// Summarised is how many messages were folded.
	Summarised int
	// Cursor is the cursor after the extraction.
	Cursor int
	// PublishedAt is the publication time of the newest event the state now
	// includes (zero when unknown), for the lag metric.
	PublishedAt time.Time
}

// Extract folds the held messages of a conversation up to its newest user
// request into its evidence, under the conversation's lock, in a
// transaction of its own.
func (s *Store) Extract(ctx context.Context, userID, conversationID string) (ExtractResult, error) {
	var res ExtractResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		res, err = s.extract(ctx, tx, userID, conversationID)
		return err
	})
	if err != nil {
		return ExtractResult{}, err
	}
	return res, nil
}

// ExtractTx is Extract in the caller's transaction, which it leaves open:
// an extraction job completes itself in the transaction that writes the
// state, so that both commit or neither does.
func (s *Store) ExtractTx(ctx context.Context, tx pgx.Tx, userID, conversationID string) (ExtractResult, error) {
	return s.extract(ctx, tx, userID, conversationID)
}

func (s *Store) extract(ctx context.Context, tx pgx.Tx, userID, conversationID string) (ExtractResult, error) {
	var row convRow
	var prefix []byte
	var published *time.Time
	// One round trip: the lock, then the newest request after the cursor,
	// which the extraction summarises up to, with the held messages of the
	// first chunk the loop below reads. The second statement starts once
	// the first holds the lock, so it sees every message committed before;
	// its cursor is the locked row's.
	var newest *int
	var first pendingChunk
	b := &pgx.Batch{}
	b.Queue(`
SELECT version, "cursor", message_count, prefix_digest, body, deleted_at IS NOT NULL, published_at, archive_count, carry,
    notes_hold_from, notes_requested_at, notes_count
FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2
FOR UPDATE`, userID, conversationID)
	b.Queue(firstChunkSQL, userID, conversationID, string(checkpoint.RoleUser), s.extractChunk, extractChunkBytes)
	br := tx.SendBatch(ctx, b)
	err := br.QueryRow().Scan(&row.version, &row.cursor, &row.count, &prefix, &row.body, &row.deleted, &published, &row.archiveCount, &row.carry,
		&row.notesHoldFrom, &row.notesRequestedAt, &row.notesCount)
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		var merr error
		if newest, first, merr = scanFirstChunk(br); merr != nil {
			br.Close()
			return ExtractResult{}, merr
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.deleted) {
		return ExtractResult{Outcome: checkpoint.Deleted}, nil
	}
	if err != nil {
		return ExtractResult{}, fmt.Errorf("lock conversation: %w", err)
	}
	copy(row.prefix[:], prefix)
	res := ExtractResult{Outcome: checkpoint.NothingToSummarise, Cursor: row.cursor}
	if published != nil {
		res.PublishedAt = *published
	}

	// The held messages up to the newest request are read and folded in
	// chunks of s.extractChunk (and of extractChunkBytes of text), so that
	// a large snapshot is never held whole.
	if newest == nil {
		_, err := tx.Exec(ctx, `UPDATE recall_conversation SET extract_requested_at = NULL
WHERE user_id = $1 AND conversation_id = $2 AND extract_requested_at IS NOT NULL`, userID, conversationID)
		if err != nil {
			return ExtractResult{}, fmt.Errorf("update conversation: %w", err)
		}
		return res, nil
	}
	k := *newest
	rec := row.record(userID, conversationID)
	state, err := s.fold.StateOf(&rec)
	if err != nil {
		return ExtractResult{}, fmt.Errorf("decode stored evidence: %w", err)
	}
	x := s.fold.NewExtraction(state, &archive{db: tx, tx: tx, userID: userID, conversationID: conversationID, count: row.archiveCount, notes: row.notesCount}, row.archiveCount)
	var request checkpoint.Message // request k, read with the last chunk when it fits
	haveRequest := false
	for lo := row.cursor; lo < k; {
		end := min(lo+s.extractChunk, k)
		if end == k {
			end = k + 1
		}
		var msgs []checkpoint.Message
		var chains []checkpoint.Digest
		if lo == row.cursor {
			// Read with the lock.
			if msgs, chains, err = first.check(lo, end); err != nil {
				return ExtractResult{}, err
			}
		} else if msgs, chains, err = loadPending(ctx, tx, userID, conversationID, lo, end, extractChunkBytes); err != nil {
			return ExtractResult{}, err
		}
		hi := lo + len(msgs)
		if hi > k {
			request, haveRequest = msgs[len(msgs)-1], true
			msgs, chains, hi = msgs[:len(msgs)-1], chains[:len(chains)-1], k
		}
		if err := x.Add(ctx, msgs, chains[len(chains)-1]); err != nil {
			return ExtractResult{}, err
		}
		lo = hi
	}
	if !haveRequest {
		held, _, err := loadPending(ctx, tx, userID, conversationID, k, k+1, extractChunkBytes)
		if err != nil {
			return ExtractResult{}, err
		}
		request = held[0]
	}
	state, archiveCount, err := x.Finish(ctx, &request)
	if err != nil {
		return ExtractResult{}, err
	}
	var view, carry []byte
	if state.Shown != nil {
		if view, err = encodeView(state.Shown); err != nil {
			return ExtractResult{}, err
		}
		if carry, err = evidence.MarshalCarry(&state.Carry); err != nil {
			return ExtractResult{}, err
		}
	}
	body := evidence.AppendBody(nil, &state, 0)

	b = &pgx.Batch{}
	b.Queue(`
UPDATE recall_conversation
SET version = $3, "cursor" = $4, prefix_digest = $5, body = $6, updated_at = now(), extract_requested_at = NULL,
    archive_count = $7, view = $8, carry = $9
WHERE user_id = $1 AND conversation_id = $2`,
		userID, conversationID, state.Version, state.Cursor, state.PrefixDigest[:], body, archiveCount, view, carry)
	// Messages below the old cursor are gone already (but those the
	// follower holds): deleting the range keeps the index scan off the dead
	// entries earlier extractions left (until vacuum), so a turn costs the
	// same at message 10 and 10,000.
	hold, err := s.cfg.Follower.extracted(ctx, s, tx, b, userID, conversationID, &row, state.Cursor)
	if err != nil {
		return ExtractResult{}, err
	}
	if hold = min(hold, state.Cursor); hold > row.cursor {
		b.Queue(`DELETE FROM recall_message WHERE user_id = $1 AND conversation_id = $2 AND idx >= $3 AND idx < $4`,
			userID, conversationID, row.cursor, hold)
	}
	b.Queue(`SELECT pg_notify($1, $2)`, NotifyChannel, NotifyPayload(userID, conversationID, state.Cursor))
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return ExtractResult{}, fmt.Errorf("write evidence: %w", err)
	}
	res.Outcome, res.Summarised, res.Cursor = checkpoint.Applied, k-row.cursor, state.Cursor
	return res, nil
}

// extractChunkBytes bounds the text of the held messages an extraction reads
// and folds at once (beside Config.ExtractChunk's count): what the fold
// derives from a chunk (excerpts, keys, terms) is a few times its text, so
// that a snapshot of large messages would otherwise peak at several times
// its size.
const extractChunkBytes = 512 << 10

// loadPending returns the held messages from lo on, rebuilt as far as the
// fold needs them, with their chain digests: those of [lo, hi) whose text
// before them is less than maxBytes, so at least one.
func loadPending(ctx context.Context, tx pgx.Tx, userID, conversationID string, lo, hi, maxBytes int) ([]checkpoint.Message, []checkpoint.Digest, error) {
	rows, err := tx.Query(ctx, `
SELECT idx, chain, role, evidential, message_id, text, held FROM (
    SELECT idx, chain, role, evidential, message_id, text, count(*) OVER () AS held,
           sum(coalesce(octet_length(text), 0)) OVER (ORDER BY idx) - coalesce(octet_length(text), 0) AS before
    FROM recall_message
    WHERE user_id = $1 AND conversation_id = $2 AND idx >= $3 AND idx < $4
) m
WHERE before < $5
ORDER BY idx`, userID, conversationID, lo, hi, maxBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("load held messages: %w", err)
	}
	defer rows.Close()
	var c pendingChunk
	for rows.Next() {
		if err := c.scan(rows, nil); err != nil {
			return nil, nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("load held messages: %w", err)
	}
	return c.check(lo, hi)
}

// firstChunkSQL is loadPending's statement for the first chunk an
// extraction reads, from the cursor, with the newest request after the
// cursor ($3 is the user's role) on every row: the chunk ends at the
// request, or $4 messages (the extraction's chunk) after the cursor; a
// chunk that reaches the request includes it (the focus profile chooses
// its view for it). A conversation with no request after its cursor gives
// one row of nulls.
const firstChunkSQL = `
WITH c AS (SELECT "cursor" AS lo FROM recall_conversation WHERE user_id = $1 AND conversation_id = $2),
n AS (SELECT c.lo, (SELECT max(idx) FROM recall_message
                    WHERE user_id = $1 AND conversation_id = $2 AND role = $3 AND idx > c.lo) AS k FROM c),
r AS (SELECT n.lo, n.k, CASE WHEN least(n.lo + $4, n.k) = n.k THEN n.k + 1 ELSE least(n.lo + $4, n.k) END AS hi FROM n)
SELECT r.k, m.idx, m.chain, m.role, m.evidential, m.message_id, m.text, m.held
FROM r LEFT JOIN LATERAL (
    SELECT idx, chain, role, evidential, message_id, text, held FROM (
        SELECT idx, chain, role, evidential, message_id, text, count(*) OVER () AS held,
               sum(coalesce(octet_length(text), 0)) OVER (ORDER BY idx) - coalesce(octet_length(text), 0) AS before
        FROM recall_message
        WHERE user_id = $1 AND conversation_id = $2 AND idx >= r.lo AND idx < r.hi
    ) x
    WHERE before < $5
) m ON true
ORDER BY m.idx`

// scanFirstChunk reads firstChunkSQL's answer: the newest request (nil for
// none) and the chunk.
func scanFirstChunk(br pgx.BatchResults) (*int, pendingChunk, error) {
	var c pendingChunk
	rows, err := br.Query()
	if err != nil {
		return nil, c, fmt.Errorf("find the newest request: %w", err)
	}
	defer rows.Close()
	var newest *int
	for rows.Next() {
		if err := c.scan(rows, &newest); err != nil {
			return nil, c, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, c, fmt.Errorf("find the newest request: %w", err)
	}
	return newest, c, nil
}

// pendingChunk is held messages as loadPending reads them, from index lo.
type pendingChunk struct {
	lo     int
	msgs   []checkpoint.Message
	chains []checkpoint.Digest
	held   int
}

// scan reads one row of held messages; with newest set, the row begins
// with the newest request (firstChunkSQL), and its message may be null.
func (c *pendingChunk) scan(rows pgx.Rows, newest **int) error {
	var idx, held *int
	var chain, id, text []byte
	var role *string
	var evidential *bool
	dest := []any{&idx, &chain, &role, &evidential, &id, &text, &held}
	if newest != nil {
		dest = append([]any{newest}, dest...)
	}
	if err := rows.Scan(dest...); err != nil {
		return fmt.Errorf("load held messages: %w", err)
	}
	if idx == nil {
		return nil // no request after the cursor
	}
	if len(c.msgs) == 0 {
		c.lo = *idx
	} else if *idx != c.lo+len(c.msgs) {
		return fmt.Errorf("held messages of a conversation are not contiguous at %d", *idx)
	}
	c.msgs = append(c.msgs, heldMessage(checkpoint.Role(*role), *evidential, string(id), string(text)))
	c.chains = append(c.chains, checkpoint.Digest(chain))
	c.held = *held
	return nil
}

// check returns the chunk's messages when they are the held ones of
// [lo, hi), or at least their first.
func (c *pendingChunk) check(lo, hi int) ([]checkpoint.Message, []checkpoint.Digest, error) {
	if c.held != hi-lo || len(c.msgs) == 0 {
		return nil, nil, fmt.Errorf("held messages of a conversation are missing: have %d of [%d, %d)", c.held, lo, hi)
	}
	if c.lo != lo {
		return nil, nil, fmt.Errorf("held messages of a conversation are not contiguous at %d", c.lo)
	}
	return c.msgs, c.chains, nil
}

// heldMessage rebuilds a held message for the fold: its role, id and, when
// it may become evidence, its text.
func heldMessage(role checkpoint.Role, evidential bool, id, text string) checkpoint.Message {
	m := checkpoint.Message{Role: role, ID: id, Type: checkpoint.TypeChat, Text: text}
	if !evidential {
		// Not evidence: off the conversation channel, whatever it was.
		m.Type = checkpoint.TypeHeld
		m.Text = ""
	}
	return m
}
