package store

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/modelnote"
)

// The model lane (RECALL_EXTRACTOR=model) follows extraction: each
// extraction that moves a conversation's cursor makes sure a notes job
// (NotesArgs) is pending for it, in its own transaction, and the job, run
// by the jobs package, reads the range the lane has not had yet
// (ReadNotesRange), calls the model outside any lock and transaction, and
// writes the notes under the conversation's lock only if the conversation
// is unchanged in what matters (WriteNotesTx). Until then recall holds the
// messages the call needs: those from the lane's cursor, and the pair
// window before it, from notes_hold_from on.
//
// Which lane follows extraction is a value the store is given
// (Config.Follower), not a branch on a setting.

// NotesQueue is the River queue the model lane's jobs run on.
const NotesQueue = "recall_model_notes"

// NotesMaxAttempts bounds the attempts of a notes job: a call that still
// fails at the last one gives the range up (the conversation keeps the
// profile's evidence and goes on).
const NotesMaxAttempts = 5

// NotesStaleAfter is how old a pending notes job must be for an extraction
// to take it for lost and enqueue another: longer than any attempt and the
// back-off between them.
const NotesStaleAfter = 15 * time.Minute

// NotesArgs names the conversation whose summarised messages the model
// lane notes next: the key only, never text (River keeps a job's row after
// it ends). The job reads the range it covers when it runs, so one job
// serves every extraction committed before it reads.
type NotesArgs struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
}

// Kind implements river.JobArgs.
func (NotesArgs) Kind() string { return "recall_model_notes" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (NotesArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: NotesQueue, MaxAttempts: NotesMaxAttempts}
}

// Follower is what follows an extraction over the messages it summarised.
// NewFollower(nil) is the lexical extractor alone; NotesFollower the model
// lane.
type Follower interface {
	// extracted is called in the extraction's transaction, under the
	// conversation's lock, with the row as locked and the cursor the
	// extraction moves it to. It queues its writes into b and returns the
	// index from which the held messages below the new cursor stay held.
	extracted(ctx context.Context, s *Store, tx pgx.Tx, b *pgx.Batch, userID, conversationID string, row *convRow, cursor int) (int, error)
}

// Lexical is the follower of the lexical extractor alone: nothing follows,
// and the messages below the cursor go. A hold an earlier model lane left is
// released.
type Lexical struct{}

func (Lexical) extracted(_ context.Context, _ *Store, _ pgx.Tx, b *pgx.Batch, userID, conversationID string, row *convRow, cursor int) (int, error) {
	if row.notesHoldFrom != nil {
		b.Queue(`DELETE FROM recall_message WHERE user_id = $1 AND conversation_id = $2 AND idx >= $3 AND idx < $4`,
			userID, conversationID, *row.notesHoldFrom, row.cursor)
		b.Queue(`UPDATE recall_conversation SET notes_cursor = NULL, notes_hold_from = NULL, notes_requested_at = NULL
WHERE user_id = $1 AND conversation_id = $2`, userID, conversationID)
	}
	return cursor, nil
}

// Notes is the follower of the model lane: it keeps the messages the lane
// has not had yet, and a notes job pending.
type Notes struct{}

func (Notes) extracted(ctx context.Context, s *Store, tx pgx.Tx, b *pgx.Batch, userID, conversationID string, row *convRow, cursor int) (int, error) {
	// A conversation the lane meets for the first time starts at the old
	// cursor: the messages before it are gone.
	hold := row.cursor
	if row.notesHoldFrom != nil {
		hold = *row.notesHoldFrom
	}
	enqueue := row.notesRequestedAt == nil || time.Since(*row.notesRequestedAt) > NotesStaleAfter
	b.Queue(`UPDATE recall_conversation
SET notes_cursor = coalesce(notes_cursor, $3), notes_hold_from = coalesce(notes_hold_from, $3),
    notes_requested_at = CASE WHEN $4 THEN now() ELSE notes_requested_at END
WHERE user_id = $1 AND conversation_id = $2`, userID, conversationID, row.cursor, enqueue)
	if enqueue {
		if err := s.enqueueNotes(ctx, tx, userID, conversationID); err != nil {
			return 0, err
		}
	}
	return hold, nil
}

func (s *Store) enqueueNotes(ctx context.Context, tx pgx.Tx, userID, conversationID string) error {
	if s.cfg.Jobs == nil {
		return errors.New("store: Config.Jobs is required for the model lane: give it an insert-only River client")
	}
	if _, err := s.cfg.Jobs.InsertTx(ctx, tx, NotesArgs{UserID: userID, ConversationID: conversationID}, nil); err != nil {
		return fmt.Errorf("enqueue notes: %w", err)
	}
	return nil
}

// NotesRange is what the next call of a conversation's model lane covers,
// as ReadNotesRange read it.
type NotesRange struct {
	// Deleted reports an unknown or deleted conversation: nothing to note.
	Deleted bool
	// Lo is the lane's cursor, where the range starts; Hi where the
	// messages read end: the conversation's cursor, or less where their
	// text reached the bound. Lo == Hi: nothing to note.
	Lo, Hi int
	// Messages are the lane's messages (modelnote.FromHistory) of the held
	// ones from the pair window's start up to Hi.
	Messages []modelnote.Message
	// Quiet is how long ago the conversation last changed (an event, an
	// extraction); Pending reports an extraction requested and not done:
	// a burst still arriving, which the call waits for.
	Quiet   time.Duration
	Pending bool
	from    int
	chains  []checkpoint.Digest // of the held messages from from on
}

// Chain returns the chain digest of the history's [0, end), for
// Lo < end <= Hi: what WriteNotesTx checks the conversation still holds.
func (r *NotesRange) Chain(end int) checkpoint.Digest {
	return r.chains[end-1-r.from]
}

// ReadNotesRange reads, in one statement and outside any lock, the range
// of a conversation the model lane has not had yet and the messages its
// next call may send: those of the pair window before it, and its own, up
// to about maxBytes of text.
func (s *Store) ReadNotesRange(ctx context.Context, userID, conversationID string, maxBytes int) (NotesRange, error) {
	rows, err := s.pool.Query(ctx, `
WITH c AS (
    SELECT deleted_at IS NOT NULL AS deleted, "cursor" AS hi, notes_cursor AS lo, coalesce(notes_hold_from, notes_cursor) AS f,
        greatest(extract(epoch FROM clock_timestamp() - updated_at), 0) AS quiet, extract_requested_at IS NOT NULL AS pending
    FROM recall_conversation WHERE user_id = $1 AND conversation_id = $2)
SELECT c.deleted, c.hi, c.lo, c.f, c.quiet, c.pending, m.idx, m.chain, m.role, m.evidential, m.message_id, m.text
FROM c LEFT JOIN LATERAL (
    SELECT idx, chain, role, evidential, message_id, text FROM (
        SELECT idx, chain, role, evidential, message_id, text,
               sum(coalesce(octet_length(text), 0)) OVER (ORDER BY idx) - coalesce(octet_length(text), 0) AS before
        FROM recall_message
        WHERE user_id = $1 AND conversation_id = $2 AND idx >= c.f AND idx < c.hi
    ) x
    WHERE before < $3
) m ON NOT c.deleted AND c.lo IS NOT NULL
ORDER BY m.idx`, userID, conversationID, maxBytes)
	if err != nil {
		return NotesRange{}, fmt.Errorf("read the lane's messages: %w", err)
	}
	defer rows.Close()
	r := NotesRange{Deleted: true}
	var held []checkpoint.Message
	for rows.Next() {
		var deleted, pending bool
		var hi int
		var lo, from, idx *int
		var quiet *float64
		var chain, id, text []byte
		var role *string
		var evidential *bool
		if err := rows.Scan(&deleted, &hi, &lo, &from, &quiet, &pending, &idx, &chain, &role, &evidential, &id, &text); err != nil {
			return NotesRange{}, fmt.Errorf("read the lane's messages: %w", err)
		}
		if deleted {
			return NotesRange{Deleted: true}, nil
		}
		if lo == nil {
			return NotesRange{Lo: hi, Hi: hi}, nil // the lane never ran here
		}
		r.Deleted, r.Lo, r.Hi, r.from, r.Pending = false, *lo, hi, *from, pending
		if quiet != nil {
			r.Quiet = time.Duration(*quiet * float64(time.Second))
		}
		if idx == nil {
			continue
		}
		if *idx != r.from+len(held) {
			return NotesRange{}, fmt.Errorf("the lane's held messages are not contiguous at %d", *idx)
		}
		held = append(held, heldMessage(checkpoint.Role(*role), *evidential, string(id), string(text)))
		r.chains = append(r.chains, checkpoint.Digest(chain))
	}
	if err := rows.Err(); err != nil {
		return NotesRange{}, fmt.Errorf("read the lane's messages: %w", err)
	}
	if r.Deleted {
		return r, nil
	}
	if end := r.from + len(held); end < r.Hi {
		if end <= r.Lo {
			return NotesRange{}, fmt.Errorf("the lane's held messages are missing: have [%d, %d) of [%d, %d)", r.from, end, r.Lo, r.Hi)
		}
		r.Hi = end // the bound of the text read
	}
	r.Messages = modelnote.FromHistory(held, r.from)
	return r, nil
}

// ModelCall is what one call of the lane did, without any text.
type ModelCall = evidence.ModelCall

// CallOK is the outcome of a call that answered with notes (none, or
// some): WriteNotesTx counts it in the conversation's row; any other
// outcome is recorded call by call.
const CallOK = "ok"

// maxModelCalls is how many calls a conversation's record keeps.
const maxModelCalls = 20

// inspectNotes is how many notes an inspection lists.
const inspectNotes = 200

// inspectLane reads the model lane's notes and calls for an inspection, in
// its snapshot, marking the notes view shows.
func inspectLane(ctx context.Context, db pgx.Tx, userID, conversationID string, view []evidence.Shown) (evidence.LaneInspection, error) {
	var l evidence.LaneInspection
	notes, total, err := readNotes(ctx, db, userID, conversationID, inspectNotes)
	if err != nil {
		return l, err
	}
	l.NoteCount = total
	for _, n := range notes {
		l.Notes = append(l.Notes, evidence.InspectedNote{Note: n})
	}
	l.MarkShown(view)
	if l.Calls, err = readCalls(ctx, db, userID, conversationID); err != nil {
		return l, err
	}
	err = db.QueryRow(ctx, `SELECT notes_calls FROM recall_conversation WHERE user_id = $1 AND conversation_id = $2`,
		userID, conversationID).Scan(&l.Answered)
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	return l, err
}

// NotesWrite is what one call of the lane writes.
type NotesWrite struct {
	UserID, ConversationID string
	// Lo and End are the range the call covered: ReadNotesRange's Lo and
	// the call's end (modelnote.Call.End). Chain is the chain digest of
	// [0, End) as read (NotesRange.Chain).
	Lo, End int
	Chain   checkpoint.Digest
	// HoldFrom is where the next call's pair window starts
	// (modelnote.WindowStart): the held messages before it go.
	HoldFrom int
	// Notes are the notes to add.
	Notes []evidence.Note
	// Call records the call; nil when none was made (no message to send).
	Call *ModelCall
}

// NotesResult is the outcome of WriteNotesTx.
type NotesResult struct {
	// Outcome is checkpoint.Applied (written), Deleted (the conversation is
	// gone: nothing written), NothingToSummarise (the lane never ran for
	// the conversation: nothing written) or Stale (the lane is no longer
	// where the call began, or the history differs: nothing written; read
	// again).
	Outcome checkpoint.Outcome
	// Version is the conversation's version after the write.
	Version int64
	// More reports that the range did not reach the cursor: another notes
	// job was enqueued for the rest.
	More bool
}

// WriteNotesTx writes one call's notes in the caller's transaction, which
// it leaves open (the job completes itself in it): under the
// conversation's lock, only if the conversation is not deleted, the lane's
// cursor is still w.Lo and the history's [0, w.End) is still the one read
// (w.End == w.Lo: the lane has nothing to note; its job ends).
// It adds the notes, records the call, moves the lane's cursor to w.End,
// releases the held messages the lane no longer needs, enqueues the next
// job when the range did not reach the cursor, and, when notes were added,
// chooses the view for the current request again and counts a new version.
func (s *Store) WriteNotesTx(ctx context.Context, tx pgx.Tx, w *NotesWrite) (NotesResult, error) {
	b := &pgx.Batch{}
	b.Queue(`
SELECT version, "cursor", notes_cursor, coalesce(notes_hold_from, notes_cursor), deleted_at IS NOT NULL, archive_count, notes_count, carry
FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2
FOR UPDATE`, w.UserID, w.ConversationID)
	b.Queue(`SELECT chain FROM recall_message WHERE user_id = $1 AND conversation_id = $2 AND idx = $3`,
		w.UserID, w.ConversationID, w.End-1)
	if len(w.Notes) > 0 {
		// The request at the locked row's cursor, which the view is chosen
		// for again.
		b.Queue(`SELECT m.role, m.evidential, m.message_id, m.text
FROM recall_message m JOIN recall_conversation c USING (user_id, conversation_id)
WHERE m.user_id = $1 AND m.conversation_id = $2 AND m.idx = c."cursor"`, w.UserID, w.ConversationID)
	}
	br := tx.SendBatch(ctx, b)
	var version int64
	var cursor, archiveCount, notesCount int
	var lo, holdFrom *int
	var deleted bool
	rec := evidence.Record{UserID: w.UserID, ConversationID: w.ConversationID}
	err := br.QueryRow().Scan(&version, &cursor, &lo, &holdFrom, &deleted, &archiveCount, &notesCount, &rec.Carry)
	var chain []byte
	var request checkpoint.Message
	if err == nil {
		if cerr := br.QueryRow().Scan(&chain); cerr != nil && !errors.Is(cerr, pgx.ErrNoRows) {
			err = cerr
		}
	}
	if err == nil && len(w.Notes) > 0 {
		var role string
		var evidential bool
		var id, text []byte
		if rerr := br.QueryRow().Scan(&role, &evidential, &id, &text); rerr == nil {
			request = heldMessage(checkpoint.Role(role), evidential, string(id), string(text))
		} else if !errors.Is(rerr, pgx.ErrNoRows) {
			err = rerr
		} else if !deleted {
			err = fmt.Errorf("the request at the cursor is not held")
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows) || (err == nil && deleted):
		return NotesResult{Outcome: checkpoint.Deleted}, nil
	case err != nil:
		return NotesResult{}, fmt.Errorf("lock conversation: %w", err)
	case lo == nil:
		// The lane never ran here (or was turned off since): a job left
		// from before has nothing to do.
		return NotesResult{Outcome: checkpoint.NothingToSummarise, Version: version}, nil
	case *lo != w.Lo || w.End < w.Lo || w.End > cursor || (w.End > w.Lo && checkpoint.Digest(chain) != w.Chain):
		return NotesResult{Outcome: checkpoint.Stale, Version: version}, nil
	}

	res := NotesResult{Outcome: checkpoint.Applied, Version: version, More: w.End < cursor}
	var body, view []byte
	if len(w.Notes) > 0 {
		// The view is chosen with the notes held in memory beside those
		// stored, so that they are written with everything else at once.
		res.Version++
		if body, view, err = s.viewAtCursor(ctx, tx, &rec, &request, res.Version, cursor, archiveCount, notesCount, w.Notes); err != nil {
			return NotesResult{}, err
		}
		notesCount += len(w.Notes)
	}
	b = &pgx.Batch{}
	if len(w.Notes) > 0 {
		queueNotes(b, w.UserID, w.ConversationID, w.Notes)
	}
	answered := 0
	if w.Call != nil && w.Call.Outcome == CallOK {
		answered = 1 // counted; only failures are kept call by call
	} else if w.Call != nil {
		queueCall(b, w.UserID, w.ConversationID, w.Call)
	}
	if hold := min(max(w.HoldFrom, *holdFrom), w.End); hold > *holdFrom {
		b.Queue(`DELETE FROM recall_message WHERE user_id = $1 AND conversation_id = $2 AND idx >= $3 AND idx < $4`,
			w.UserID, w.ConversationID, *holdFrom, min(hold, cursor))
		*holdFrom = hold
	}
	b.Queue(`
UPDATE recall_conversation
SET notes_cursor = $3, notes_hold_from = $4, notes_count = $5,
    notes_requested_at = CASE WHEN $6 THEN now() ELSE NULL END,
    version = $7, body = coalesce($8, body), view = coalesce($9, view),
    updated_at = CASE WHEN $8::bytea IS NULL THEN updated_at ELSE now() END,
    notes_calls = notes_calls + $10
WHERE user_id = $1 AND conversation_id = $2`,
		w.UserID, w.ConversationID, w.End, *holdFrom, notesCount, res.More, res.Version, body, view, answered)
	// No notification: long polls wait for a cursor, which notes do not
	// move.
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return NotesResult{}, fmt.Errorf("write notes: %w", err)
	}
	if res.More {
		if err := s.enqueueNotes(ctx, tx, w.UserID, w.ConversationID); err != nil {
			return NotesResult{}, err
		}
	}
	return res, nil
}

// viewAtCursor chooses the view for request, the request at the cursor of
// rec's conversation (its key and the fold's carry set), as the extraction
// that moved the cursor there did, with notesCount notes stored and pending
// ones not yet, and returns the body and view to store.
func (s *Store) viewAtCursor(ctx context.Context, tx pgx.Tx, rec *evidence.Record, request *checkpoint.Message, version int64,
	cursor, archiveCount, notesCount int, pending []evidence.Note) ([]byte, []byte, error) {
	carry, err := evidence.UnmarshalCarry(rec.Carry)
	if err != nil {
		return nil, nil, fmt.Errorf("decode the fold's carry: %w", err)
	}
	ix := &archive{db: tx, userID: rec.UserID, conversationID: rec.ConversationID, count: archiveCount, notes: notesCount, pending: pending}
	c, q, err := evidence.ReadCandidates(ctx, ix, archiveCount, carry, evidence.RequestText(request))
	if err != nil {
		return nil, nil, err
	}
	state := evidence.State{Version: version, Cursor: cursor}
	state.SetView(evidence.SelectView(c, q, s.fold.MaxTokens))
	view, err := encodeView(state.Shown)
	if err != nil {
		return nil, nil, err
	}
	return evidence.AppendBody(nil, &state, 0), view, nil
}

// queueNotes queues the insert of notes.
func queueNotes(b *pgx.Batch, userID, conversationID string, notes []evidence.Note) {
	n := len(notes)
	idx, ord, buckets := make([]int32, n), make([]int16, n), make([]int16, n)
	roles := make([]string, n)
	ids, texts := make([][]byte, n), make([][]byte, n)
	truncated := make([]bool, n)
	for i := range notes {
		nt := &notes[i]
		idx[i], ord[i], buckets[i] = int32(nt.Index), int16(nt.Ord), int16(nt.Bucket)
		roles[i], ids[i], texts[i], truncated[i] = string(nt.Role), []byte(nt.MessageID), []byte(nt.Text), nt.Truncated
	}
	b.Queue(`
INSERT INTO recall_note (user_id, conversation_id, idx, ord, bucket, role, message_id, text, truncated)
SELECT $1, $2, t.idx, t.ord, t.bucket, t.role, t.id, t.text, t.truncated
FROM unnest($3::int[], $4::int2[], $5::int2[], $6::text[], $7::bytea[], $8::bytea[], $9::bool[])
    AS t(idx, ord, bucket, role, id, text, truncated)
ON CONFLICT DO NOTHING`, userID, conversationID, idx, ord, buckets, roles, ids, texts, truncated)
}

// queueCall queues the record of a call, keeping the newest maxModelCalls
// of the conversation. The record is written only while the conversation
// is not deleted: the conversation's row is locked first, so a deletion
// either waits for it or is seen.
func queueCall(b *pgx.Batch, userID, conversationID string, c *ModelCall) {
	b.Queue(`
INSERT INTO recall_model_call (user_id, conversation_id, lo, hi, attempt, outcome, notes, dropped, tokens_in, tokens_out, seconds)
SELECT user_id, conversation_id, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2 AND deleted_at IS NULL
FOR SHARE`, userID, conversationID, c.Lo, c.Hi, c.Attempt, c.Outcome, c.Notes, c.Dropped, c.TokensIn, c.TokensOut, c.Seconds)
	b.Queue(`
DELETE FROM recall_model_call WHERE user_id = $1 AND conversation_id = $2 AND id <= (
    SELECT id FROM recall_model_call WHERE user_id = $1 AND conversation_id = $2 ORDER BY id DESC OFFSET $3 LIMIT 1)`,
		userID, conversationID, maxModelCalls)
}

// RecordModelCall records a call that wrote nothing (it failed, and its
// job tries again), for the inspector. Nothing is recorded for a deleted
// conversation.
func (s *Store) RecordModelCall(ctx context.Context, userID, conversationID string, c *ModelCall) error {
	b := &pgx.Batch{}
	queueCall(b, userID, conversationID, c)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
	if err != nil {
		return fmt.Errorf("record a model call: %w", err)
	}
	return nil
}

// ModelCalls returns the newest recorded calls of a conversation's lane
// that failed, newest first.
func (s *Store) ModelCalls(ctx context.Context, userID, conversationID string) ([]ModelCall, error) {
	return readCalls(ctx, s.pool, userID, conversationID)
}

func readCalls(ctx context.Context, db querier, userID, conversationID string) ([]ModelCall, error) {
	rows, err := db.Query(ctx, `
SELECT lo, hi, attempt, outcome, notes, dropped, tokens_in, tokens_out, seconds, called_at
FROM recall_model_call WHERE user_id = $1 AND conversation_id = $2
ORDER BY id DESC LIMIT $3`, userID, conversationID, maxModelCalls)
	if err != nil {
		return nil, fmt.Errorf("read model calls: %w", err)
	}
	calls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ModelCall, error) {
		var c ModelCall
		err := r.Scan(&c.Lo, &c.Hi, &c.Attempt, &c.Outcome, &c.Notes, &c.Dropped, &c.TokensIn, &c.TokensOut, &c.Seconds, &c.At)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read model calls: %w", err)
	}
	return calls, nil
}

// readNotes reads up to limit of a conversation's notes, the newest source
// first, then in the order written, and how many it has.
func readNotes(ctx context.Context, db querier, userID, conversationID string, limit int) ([]evidence.Note, int, error) {
	rows, err := db.Query(ctx, `SELECT idx, ord, bucket, role, message_id, text, truncated, count(*) OVER () FROM recall_note
WHERE user_id = $1 AND conversation_id = $2 ORDER BY idx DESC, ord LIMIT $3`, userID, conversationID, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("read notes: %w", err)
	}
	total := 0
	notes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (evidence.Note, error) {
		var n evidence.Note
		var role string
		var id, text []byte
		var ord, bucket int16
		err := r.Scan(&n.Index, &ord, &bucket, &role, &id, &text, &n.Truncated, &total)
		n.Ord, n.Bucket, n.Role, n.MessageID, n.Text = int(ord), evidence.Bucket(bucket), checkpoint.Role(role), string(id), string(text)
		return n, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read notes: %w", err)
	}
	return notes, total, nil
}

// Notes returns up to limit of a conversation's notes, the newest source
// first, and how many it has.
func (s *Store) Notes(ctx context.Context, userID, conversationID string, limit int) ([]evidence.Note, int, error) {
	return readNotes(ctx, s.pool, userID, conversationID, limit)
}

// ReadNotes implements evidence.NoteIndex: the newest
// evidence.NoteCandidates notes, read only when the conversation has notes
// (or may have: a.notes < 0).
func (a *archive) ReadNotes(ctx context.Context) ([]evidence.Note, int, error) {
	var notes []evidence.Note
	total := 0
	if a.notes != 0 {
		var err error
		if notes, total, err = readNotes(ctx, a.db, a.userID, a.conversationID, evidence.NoteCandidates); err != nil {
			return nil, 0, err
		}
	}
	if len(a.pending) > 0 {
		// Notes about to be written, of messages newer than every stored
		// note's: what the stored ones will read as.
		notes, total = append(notes, a.pending...), total+len(a.pending)
	}
	return evidence.NewestNotes(notes), total, nil
}

// UserNote is a note of one of a user's conversations, as an export lists
// it.
type UserNote struct {
	ConversationID string
	evidence.Note
}

// UserNotes yields every model note of the user's conversations, ordered by
// conversation id and then by their source's place in the history, one page
// of Config.ExportPage at a time. It stops at the first error, which it
// yields.
func (s *Store) UserNotes(ctx context.Context, userID string) iter.Seq2[UserNote, error] {
	return func(yield func(UserNote, error) bool) {
		var conv string
		idx, ord := -1, -1
		for {
			rows, err := s.pool.Query(ctx, `
SELECT conversation_id, idx, ord, bucket, role, message_id, text, truncated
FROM recall_note
WHERE user_id = $1 AND (conversation_id, idx, ord) > ($2, $3, $4)
ORDER BY conversation_id, idx, ord
LIMIT $5`, userID, conv, idx, ord, s.cfg.ExportPage)
			if err != nil {
				yield(UserNote{}, fmt.Errorf("export a user's notes: %w", err))
				return
			}
			page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (UserNote, error) {
				var n UserNote
				var role string
				var id, text []byte
				var o, bucket int16
				err := r.Scan(&n.ConversationID, &n.Index, &o, &bucket, &role, &id, &text, &n.Truncated)
				n.Ord, n.Bucket, n.Role, n.MessageID, n.Text = int(o), evidence.Bucket(bucket), checkpoint.Role(role), string(id), string(text)
				return n, err
			})
			if err != nil {
				yield(UserNote{}, fmt.Errorf("export a user's notes: %w", err))
				return
			}
			for _, n := range page {
				if !yield(n, nil) {
					return
				}
			}
			if len(page) < s.cfg.ExportPage {
				return
			}
			last := page[len(page)-1]
			conv, idx, ord = last.ConversationID, last.Index, last.Ord
		}
	}
}
