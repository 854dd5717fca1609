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

// extractAttempts is how many times an extraction folds before it takes
// the conversation's row lock first: the last attempt holds it from its
// first read, as every extraction did before ingest stopped waiting for
// them, so that a conversation whose history keeps changing under the fold
// is still summarised.
const extractAttempts = 3

// extract folds under the key's extraction lock (lockExtraction), which
// ingest never takes: it reads the state and the held messages and folds
// them without the conversation's row lock, so that ingest records new
// messages meanwhile, then takes the row lock only to check that what it
// read is still there and to write. When the history it folded was
// replaced (a snapshot that diverges in the unsummarised tail) or the row
// changed, it undoes its writes (a savepoint) and folds again.
func (s *Store) extract(ctx context.Context, tx pgx.Tx, userID, conversationID string) (ExtractResult, error) {
	prelude := func(b *pgx.Batch) {
		queueLockExtraction(b, userID, conversationID)
		b.Queue(`SAVEPOINT recall_extract`)
	}
	for attempt := 1; ; attempt++ {
		res, done, err := s.extractOnce(ctx, tx, userID, conversationID, prelude, attempt == extractAttempts)
		if done || attempt == extractAttempts || ctx.Err() != nil {
			return res, err
		}
		// What was read changed, or reading it unlocked failed: undo the
		// attempt's writes and read again.
		prelude = func(b *pgx.Batch) { b.Queue(`ROLLBACK TO SAVEPOINT recall_extract`) }
	}
}

// extractOnce is one attempt of extract. It queues prelude's statements
// before its first read; with locked, it takes the row lock with that read.
// done is false when the attempt read a history or a row that changed
// before its write, or failed reading unlocked: the caller rolls back to
// the savepoint and tries again.
func (s *Store) extractOnce(ctx context.Context, tx pgx.Tx, userID, conversationID string, prelude func(*pgx.Batch), locked bool) (res ExtractResult, done bool, err error) {
	var row convRow
	var prefix []byte
	var published *time.Time
	// One round trip: the prelude, the state, then the newest request
	// after the cursor, which the extraction summarises up to, with the
	// held messages of the first chunk the loop below reads. Only an
	// extraction or a deletion, each under the extraction lock, moves the
	// cursor, so both statements read the same one.
	var newest *int
	var first pendingChunk
	b := &pgx.Batch{}
	prelude(b)
	n := b.Len()
	lock := ""
	if locked {
		lock = "\nFOR NO KEY UPDATE"
	}
	b.Queue(`
SELECT version, "cursor", message_count, prefix_digest, body, deleted_at IS NOT NULL, published_at, archive_count, carry,
    notes_hold_from, notes_requested_at, notes_count
FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2`+lock, userID, conversationID)
	b.Queue(firstChunkSQL, userID, conversationID, string(checkpoint.RoleUser), s.extractChunk, extractChunkBytes)
	br := tx.SendBatch(ctx, b)
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return ExtractResult{}, true, fmt.Errorf("lock the conversation for extraction: %w", err)
		}
	}
	err = br.QueryRow().Scan(&row.version, &row.cursor, &row.count, &prefix, &row.body, &row.deleted, &published, &row.archiveCount, &row.carry,
		&row.notesHoldFrom, &row.notesRequestedAt, &row.notesCount)
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		var merr error
		if newest, first, merr = scanFirstChunk(br); merr != nil {
			br.Close()
			return ExtractResult{}, locked, merr
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.deleted) {
		// Only a deletion, under the extraction lock, marks a row deleted.
		return ExtractResult{Outcome: checkpoint.Deleted}, true, nil
	}
	if err != nil {
		return ExtractResult{}, true, fmt.Errorf("read conversation: %w", err)
	}
	copy(row.prefix[:], prefix)
	res = ExtractResult{Outcome: checkpoint.NothingToSummarise, Cursor: row.cursor}
	if published != nil {
		res.PublishedAt = *published
	}

	// The held messages up to the newest request are read and folded in
	// chunks of s.extractChunk (and of extractChunkBytes of text), so that
	// a large snapshot is never held whole.
	if newest == nil {
		// Nothing to summarise: the pending request is done, unless ingest
		// recorded one since the read above (then fold again).
		b := &pgx.Batch{}
		b.Queue(`SELECT 1 FROM recall_conversation WHERE user_id = $1 AND conversation_id = $2 FOR NO KEY UPDATE`, userID, conversationID)
		b.Queue(newerRequestSQL, userID, conversationID, string(checkpoint.RoleUser), row.cursor)
		b.Queue(`UPDATE recall_conversation SET extract_requested_at = NULL
WHERE user_id = $1 AND conversation_id = $2 AND extract_requested_at IS NOT NULL
    AND NOT EXISTS (SELECT FROM recall_message m WHERE m.user_id = $1 AND m.conversation_id = $2 AND m.role = $3 AND m.idx > $4)`,
			userID, conversationID, string(checkpoint.RoleUser), row.cursor)
		br := tx.SendBatch(ctx, b)
		var newer bool
		_, err := br.Exec()
		if err == nil {
			err = br.QueryRow().Scan(&newer)
		}
		if err == nil {
			_, err = br.Exec()
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return ExtractResult{}, true, fmt.Errorf("update conversation: %w", err)
		}
		return res, !newer || locked, nil
	}
	k := *newest
	rec := row.record(userID, conversationID)
	state, err := s.fold.StateOf(&rec)
	if err != nil {
		return ExtractResult{}, true, fmt.Errorf("decode stored evidence: %w", err)
	}
	// read holds the index and chain digest of the last message of each
	// piece of the history read: where they still hold, with the row
	// locked, every message read is still the one held (a chain digest
	// covers the history up to it).
	var read struct {
		idx    []int32
		chains [][]byte
	}
	readTo := func(i int, ch checkpoint.Digest) {
		read.idx, read.chains = append(read.idx, int32(i)), append(read.chains, ch[:])
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
			// Read with the state.
			if msgs, chains, err = first.check(lo, end); err != nil {
				return ExtractResult{}, locked, err
			}
		} else if msgs, chains, err = loadPending(ctx, tx, userID, conversationID, lo, end, extractChunkBytes); err != nil {
			return ExtractResult{}, locked, err
		}
		hi := lo + len(msgs)
		readTo(hi-1, chains[len(chains)-1])
		if hi > k {
			request, haveRequest = msgs[len(msgs)-1], true
			msgs, chains, hi = msgs[:len(msgs)-1], chains[:len(chains)-1], k
		}
		if err := x.Add(ctx, msgs, chains[len(chains)-1]); err != nil {
			return ExtractResult{}, locked, err
		}
		lo = hi
	}
	if !haveRequest {
		held, chains, err := loadPending(ctx, tx, userID, conversationID, k, k+1, extractChunkBytes)
		if err != nil {
			return ExtractResult{}, locked, err
		}
		request = held[0]
		readTo(k, chains[0])
	}
	state, archiveCount, err := x.Finish(ctx, &request)
	if err != nil {
		return ExtractResult{}, locked, err
	}
	if s.foldedHook != nil {
		s.foldedHook()
	}
	var view, carry []byte
	if state.Shown != nil {
		if view, err = encodeView(state.Shown); err != nil {
			return ExtractResult{}, true, err
		}
		if carry, err = evidence.MarshalCarry(&state.Carry); err != nil {
			return ExtractResult{}, true, err
		}
	}
	body := evidence.AppendBody(nil, &state, 0)

	// One round trip: the row lock, the check that what was read still
	// holds, and the write, which the caller undoes when it does not.
	b = &pgx.Batch{}
	b.Queue(`
SELECT version, deleted_at IS NOT NULL, archive_count, notes_hold_from, notes_requested_at, notes_count
FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2
FOR NO KEY UPDATE`, userID, conversationID)
	b.Queue(`
SELECT count(*) FROM unnest($3::int[], $4::bytea[]) AS r(idx, chain)
JOIN recall_message m ON m.user_id = $1 AND m.conversation_id = $2 AND m.idx = r.idx AND m.chain = r.chain`,
		userID, conversationID, read.idx, read.chains)
	// A request recorded after the one folded gets another extraction: the
	// ingest that recorded it saw this one pending and enqueued none.
	b.Queue(newerRequestSQL, userID, conversationID, string(checkpoint.RoleUser), k)
	b.Queue(`
UPDATE recall_conversation
SET version = $3, "cursor" = $4, prefix_digest = $5, body = $6, updated_at = now(),
    extract_requested_at = CASE WHEN EXISTS (SELECT FROM recall_message m
        WHERE m.user_id = $1 AND m.conversation_id = $2 AND m.role = $10 AND m.idx > $11) THEN now() END,
    archive_count = $7, view = $8, carry = $9
WHERE user_id = $1 AND conversation_id = $2`,
		userID, conversationID, state.Version, state.Cursor, state.PrefixDigest[:], body, archiveCount, view, carry,
		string(checkpoint.RoleUser), k)
	// Messages below the old cursor are gone already (but those the
	// follower holds): deleting the range keeps the index scan off the dead
	// entries earlier extractions left (until vacuum), so a turn costs the
	// same at message 10 and 10,000.
	hold, err := s.cfg.Follower.extracted(ctx, s, tx, b, userID, conversationID, &row, state.Cursor)
	if err != nil {
		return ExtractResult{}, locked, err
	}
	if hold = min(hold, state.Cursor); hold > row.cursor {
		b.Queue(`DELETE FROM recall_message WHERE user_id = $1 AND conversation_id = $2 AND idx >= $3 AND idx < $4`,
			userID, conversationID, row.cursor, hold)
	}
	br = tx.SendBatch(ctx, b)
	var now convRow
	var matched int
	var newer bool
	err = br.QueryRow().Scan(&now.version, &now.deleted, &now.archiveCount, &now.notesHoldFrom, &now.notesRequestedAt, &now.notesCount)
	if err == nil {
		err = br.QueryRow().Scan(&matched)
	}
	if err == nil {
		err = br.QueryRow().Scan(&newer)
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return ExtractResult{}, locked, fmt.Errorf("write evidence: %w", err)
	}
	if matched != len(read.idx) || !row.unchanged(&now) {
		if locked {
			return ExtractResult{}, true, errors.New("write evidence: the conversation changed under its row lock")
		}
		return ExtractResult{}, false, nil
	}
	if newer && s.cfg.Jobs != nil {
		if err := s.enqueue(ctx, tx, userID, conversationID); err != nil {
			return ExtractResult{}, true, fmt.Errorf("enqueue extraction: %w", err)
		}
	}
	res.Outcome, res.Summarised, res.Cursor = checkpoint.Applied, k-row.cursor, state.Cursor
	return res, true, nil
}

// newerRequestSQL reports whether the conversation holds a request after
// index $4 ($3 is the user's role).
const newerRequestSQL = `
SELECT EXISTS (SELECT FROM recall_message WHERE user_id = $1 AND conversation_id = $2 AND role = $3 AND idx > $4)`

// unchanged reports whether now, the row read again under its lock, is
// as r was read for an extraction in what the extraction wrote from:
// only an extraction or a deletion (under the extraction lock) and the
// model lane's notes (which count a version) change these.
func (r *convRow) unchanged(now *convRow) bool {
	return now.version == r.version && now.deleted == r.deleted && now.archiveCount == r.archiveCount &&
		now.notesCount == r.notesCount && eqPtr(now.notesHoldFrom, r.notesHoldFrom) &&
		eqTimePtr(now.notesRequestedAt, r.notesRequestedAt)
}

func eqPtr(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func eqTimePtr(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

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
