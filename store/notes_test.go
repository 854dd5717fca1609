package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/modelnote"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/pgtest"
)

// kindInserter records each job's kind and key in test_jobs, inside the
// caller's transaction.
type kindInserter struct{}

func (kindInserter) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, _ *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	b, _ := json.Marshal(args)
	_, err := tx.Exec(ctx, `INSERT INTO test_jobs VALUES ($1, $2)`, args.Kind(), string(b))
	return &rivertype.JobInsertResult{}, err
}

func (k kindInserter) InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	res := make([]*rivertype.JobInsertResult, len(params))
	for i, p := range params {
		var err error
		if res[i], err = k.InsertTx(ctx, tx, p.Args, nil); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// notesSetup returns a database with test_jobs, and a store over it whose
// extractions the model lane follows.
func notesSetup(t *testing.T) (*pgxpool.Pool, *store.Store) {
	t.Helper()
	pool, _ := pgtest.NewMigratedPool(t, store.Migrate)
	if _, err := pool.Exec(t.Context(), `CREATE TABLE test_jobs (kind text, args text)`); err != nil {
		t.Fatal(err)
	}
	st, err := store.New(pool, &store.Config{Jobs: kindInserter{}, Follower: store.Notes{}})
	if err != nil {
		t.Fatal(err)
	}
	return pool, st
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// ingestExtract records a snapshot of the first n messages of history(…)
// and extracts it.
func ingestExtract(t *testing.T, st *store.Store, n int) {
	t.Helper()
	if _, err := st.Ingest(t.Context(), snapshot(t, "e"+strings.Repeat("x", n), history(n)), store.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
}

// write plans the call of the range read and writes it with notes.
func write(t *testing.T, pool *pgxpool.Pool, st *store.Store, r *store.NotesRange, cfg *modelnote.Config, notes []evidence.Note) store.NotesResult {
	t.Helper()
	call := modelnote.Plan(r.Messages, r.Lo, r.Hi, cfg)
	w := &store.NotesWrite{UserID: "u", ConversationID: "c", Lo: r.Lo, End: call.End, Notes: notes,
		HoldFrom: modelnote.WindowStart(r.Messages, call.End, cfg.ContextTurns), Call: &store.ModelCall{Lo: r.Lo, Hi: call.End, Outcome: "ok", Notes: len(notes)}}
	if call.End > r.Lo {
		w.Chain = r.Chain(call.End)
	}
	var res store.NotesResult
	err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		var err error
		res, err = st.WriteNotesTx(t.Context(), tx, w)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestNotesFollowExtraction: an extraction the model lane follows enqueues
// one notes job, keeps the messages the lane needs, and the lane's write
// adds the notes to the view, counts a version, moves the lane's cursor and
// releases what no call needs any more.
func TestNotesFollowExtraction(t *testing.T) {
	t.Parallel()
	pool, st := notesSetup(t)
	cfg := &modelnote.Config{ContextTurns: 1}
	ingestExtract(t, st, 5) // cursor 4
	ingestExtract(t, st, 7) // cursor 6: the job is pending still, no other
	if n := count(t, pool, `SELECT count(*) FROM test_jobs WHERE kind = 'recall_model_notes'`); n != 1 {
		t.Fatalf("%d notes jobs enqueued, want 1", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM recall_message`); n != 7 {
		t.Fatalf("%d messages held, want all 7 (the lane has had none)", n)
	}
	rec, _ := st.Evidence(t.Context(), "u", "c")

	r, err := st.ReadNotesRange(t.Context(), "u", "c", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if r.Deleted || r.Lo != 0 || r.Hi != 6 || len(r.Messages) != 6 {
		t.Fatalf("range %+v", r)
	}
	note := evidence.Note{Bucket: evidence.Constraints, Role: checkpoint.RoleUser, MessageID: "m2", Index: 2, Text: "Keep point 2."}
	res := write(t, pool, st, &r, cfg, []evidence.Note{note})
	if res.Outcome != checkpoint.Applied || res.More || res.Version != rec.Version+1 {
		t.Fatalf("write %+v, want applied, version %d", res, rec.Version+1)
	}
	after, _ := st.Evidence(t.Context(), "u", "c")
	if after.Version != rec.Version+1 || after.Cursor != rec.Cursor || !strings.Contains(string(after.Body), `model note on user #2: Keep point 2.`) {
		t.Errorf("evidence after the notes: version %d cursor %d body %s", after.Version, after.Cursor, after.Body)
	}
	// The window of the next call (one user turn before 6) starts at 4.
	if n := count(t, pool, `SELECT count(*) FROM recall_message`); n != 3 {
		t.Errorf("%d messages held, want 4, 5 and the request 6", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM recall_model_call`); n != 0 {
		t.Errorf("%d calls recorded, want none: only failures are", n)
	}
	if n := count(t, pool, `SELECT notes_calls FROM recall_conversation`); n != 1 {
		t.Errorf("%d calls counted as answered, want 1", n)
	}
	// The stored view is what the inspector chooses again; it lists the
	// note, shown, and the call.
	in, err := st.Inspect(t.Context(), "u", "c", nil, 10)
	if err != nil || !in.Matches {
		t.Errorf("inspection matches %v (%v)", in.Matches, err)
	}
	if l := in.Lane; l.NoteCount != 1 || len(l.Notes) != 1 || !l.Notes[0].Shown || len(l.Calls) != 0 || l.Answered != 1 {
		t.Errorf("the inspection's lane %+v", l)
	}
	// A search shows the note too, read whole and from the search cache.
	for range 2 {
		found, err := st.Search(t.Context(), "u", "c", "point")
		if err != nil || !strings.Contains(string(found.Body), `model note on user #2`) {
			t.Errorf("search: %v, body %s", err, found.Body)
		}
	}
	// Written again from the same read: stale, nothing written.
	if res := write(t, pool, st, &r, cfg, []evidence.Note{note}); res.Outcome != checkpoint.Stale {
		t.Errorf("a second write of the same range: %s", res.Outcome)
	}
	if n := count(t, pool, `SELECT count(*) FROM recall_note`); n != 1 {
		t.Errorf("%d notes, want 1", n)
	}

	// The next turns: extraction keeps [4, …) held; the range is [6, 8).
	ingestExtract(t, st, 9)
	if n := count(t, pool, `SELECT count(*) FROM recall_message`); n != 5 {
		t.Errorf("%d messages held, want [4, 9)", n)
	}
	r, err = st.ReadNotesRange(t.Context(), "u", "c", 1<<20)
	if err != nil || r.Lo != 6 || r.Hi != 8 {
		t.Fatalf("range %+v, %v", r, err)
	}
	call := modelnote.Plan(r.Messages, r.Lo, r.Hi, cfg)
	if len(call.Context) != 1 || call.Context[0].Index != 4 || len(call.New) != 1 || call.New[0].Index != 6 {
		t.Errorf("call %v: context %v new %v", call.String(), call.Context, call.New)
	}
	// A range whose history differs (another chain) is stale.
	w := &store.NotesWrite{UserID: "u", ConversationID: "c", Lo: 6, End: 8, HoldFrom: 6}
	err = pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		res, err := st.WriteNotesTx(t.Context(), tx, w)
		if err == nil && res.Outcome != checkpoint.Stale {
			t.Errorf("a write with another chain: %s", res.Outcome)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := write(t, pool, st, &r, cfg, nil); res.Outcome != checkpoint.Applied {
		t.Errorf("a write without notes: %s", res.Outcome)
	}
	final, _ := st.Evidence(t.Context(), "u", "c")
	if final.Version != after.Version+1 {
		t.Errorf("version %d: a write without notes changed it (want %d, the extraction's)", final.Version, after.Version+1)
	}
}

// TestNotesRangeBound: a range whose text passes the bound read is cut at
// a message, never inside one.
func TestNotesRangeBound(t *testing.T) {
	t.Parallel()
	_, st := notesSetup(t)
	ingestExtract(t, st, 21)
	r, err := st.ReadNotesRange(t.Context(), "u", "c", 60)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lo != 0 || r.Hi <= 1 || r.Hi >= 20 || len(r.Messages) != r.Hi {
		t.Errorf("range [%d, %d) with %d messages, want one cut by the bound", r.Lo, r.Hi, len(r.Messages))
	}
}

// TestNotesDeleted: nothing is written for a deleted conversation, and the
// deletion takes the notes, the call records and the held messages.
func TestNotesDeleted(t *testing.T) {
	t.Parallel()
	pool, st := notesSetup(t)
	cfg := &modelnote.Config{ContextTurns: 2}
	ingestExtract(t, st, 5)
	r, err := st.ReadNotesRange(t.Context(), "u", "c", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	note := evidence.Note{Bucket: evidence.Decisions, Role: checkpoint.RoleUser, MessageID: "m0", Index: 0, Text: "x"}
	write(t, pool, st, &r, cfg, []evidence.Note{note})
	ingestExtract(t, st, 7)
	r, _ = st.ReadNotesRange(t.Context(), "u", "c", 1<<20)
	if err := st.DeleteConversation(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	if res := write(t, pool, st, &r, cfg, []evidence.Note{note}); res.Outcome != checkpoint.Deleted {
		t.Errorf("a write after the deletion: %s", res.Outcome)
	}
	if err := st.RecordModelCall(t.Context(), "u", "c", &store.ModelCall{Outcome: "timeout"}); err != nil {
		t.Fatal(err)
	}
	if r, err := st.ReadNotesRange(t.Context(), "u", "c", 1<<20); err != nil || !r.Deleted {
		t.Errorf("range of a deleted conversation %+v, %v", r, err)
	}
	for _, table := range []string{"recall_note", "recall_model_call", "recall_message", "recall_archive"} {
		if n := count(t, pool, `SELECT count(*) FROM `+table); n != 0 {
			t.Errorf("%s holds %d rows of a deleted conversation", table, n)
		}
	}
}

// TestLexicalReleasesTheLanesHold: a conversation the lane held messages
// for, extracted without the lane, keeps no more than without it.
func TestLexicalReleasesTheLanesHold(t *testing.T) {
	t.Parallel()
	pool, st := notesSetup(t)
	ingestExtract(t, st, 5)
	lexical, err := store.New(pool, &store.Config{Jobs: kindInserter{}})
	if err != nil {
		t.Fatal(err)
	}
	ingestExtract(t, lexical, 7)
	if n := count(t, pool, `SELECT count(*) FROM recall_message`); n != 1 {
		t.Errorf("%d messages held, want the request only", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM recall_conversation WHERE notes_hold_from IS NULL AND notes_cursor IS NULL`); n != 1 {
		t.Error("the lane's hold is still set")
	}
	// A notes job left from the lane finds nothing to do, and ends.
	r, err := st.ReadNotesRange(t.Context(), "u", "c", 1<<20)
	if err != nil || r.Deleted || r.Lo != r.Hi {
		t.Fatalf("range %+v, %v", r, err)
	}
	if res := write(t, pool, st, &r, &modelnote.Config{}, nil); res.Outcome != checkpoint.NothingToSummarise {
		t.Errorf("a leftover job's write: %s", res.Outcome)
	}
}

// TestDeleteUserTakesNotes: a user's deletion takes the notes and call
// records of every conversation.
func TestDeleteUserTakesNotes(t *testing.T) {
	t.Parallel()
	pool, st := notesSetup(t)
	ingestExtract(t, st, 5)
	r, _ := st.ReadNotesRange(t.Context(), "u", "c", 1<<20)
	write(t, pool, st, &r, &modelnote.Config{}, []evidence.Note{{Bucket: evidence.Decisions, Role: checkpoint.RoleUser, MessageID: "m0", Index: 0, Text: "x"}})
	if n := count(t, pool, `SELECT count(*) FROM recall_note`); n != 1 {
		t.Fatalf("%d notes", n)
	}
	var exported []store.UserNote
	for n, err := range st.UserNotes(t.Context(), "u") {
		if err != nil {
			t.Fatal(err)
		}
		exported = append(exported, n)
	}
	if len(exported) != 1 || exported[0].ConversationID != "c" || exported[0].Text != "x" {
		t.Errorf("the export's notes %+v", exported)
	}
	if _, err := st.DeleteUser(t.Context(), "u"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"recall_note", "recall_model_call", "recall_message"} {
		if n := count(t, pool, `SELECT count(*) FROM `+table); n != 0 {
			t.Errorf("%s holds %d rows of a deleted user", table, n)
		}
	}
}
