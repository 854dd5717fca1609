package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/pgtest"
)

type testBundle struct {
	pool  *pgxpool.Pool
	store *store.Store
	// enqueued counts the extraction jobs committed ingests inserted.
	enqueued func() int
}

func setup(t testing.TB, window time.Duration) *testBundle {
	t.Helper()
	pool, _ := pgtest.NewMigratedPool(t, store.Migrate)
	_, err := pool.Exec(t.Context(), `CREATE TABLE test_enqueued (user_id text, conversation_id text)`)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(pool, &store.Config{
		CoalesceWindow: window,
		Jobs:           tableInserter{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &testBundle{pool: pool, store: st, enqueued: func() int {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM test_enqueued`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}}
}

// history returns n alternating user/assistant messages (user first).
func history(n int) []json.RawMessage {
	var h []json.RawMessage
	for i := range n {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("m%d", i), "role": role, "content": fmt.Sprintf("we must keep point %d", i)})
		h = append(h, b)
	}
	return h
}

func snapshot(t testing.TB, id string, msgs []json.RawMessage) *checkpoint.Event {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"schema": checkpoint.Schema, "event_id": id, "user_id": "u", "conversation_id": "c", "messages": msgs})
	ev, err := checkpoint.ParseEvent(b, checkpoint.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func oracle(t *testing.T, msgs []json.RawMessage) evidence.State {
	t.Helper()
	raw, _ := json.Marshal(msgs)
	decoded, err := checkpoint.DecodeMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := evidence.Fold(evidence.NewState(), decoded, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (tb *testBundle) ingest(t *testing.T, ev *checkpoint.Event) store.Result {
	t.Helper()
	res, err := tb.store.Ingest(t.Context(), ev, store.Meta{})
	if err != nil {
		t.Fatalf("ingest %s: %v", ev.EventID, err)
	}
	return res
}

func (tb *testBundle) requireOracle(t *testing.T, msgs []json.RawMessage) {
	t.Helper()
	rec, err := tb.store.Evidence(t.Context(), "u", "c")
	if err != nil {
		t.Fatal(err)
	}
	got, err := rec.State()
	if err != nil {
		t.Fatal(err)
	}
	want := oracle(t, msgs)
	gj, _ := json.Marshal([]any{got.Cursor, got.PrefixDigest, got.OmittedEntries, got.Buckets})
	wj, _ := json.Marshal([]any{want.Cursor, want.PrefixDigest, want.OmittedEntries, want.Buckets})
	if string(gj) != string(wj) {
		t.Fatalf("state differs from the fold of %d messages:\n got %s\nwant %s", len(msgs), gj, wj)
	}
}

// TestCoalescingRace interleaves ingest and extraction deterministically:
// a burst before the job takes the lock is absorbed by that one job, and an
// event that commits while a job holds the lock (having read the history
// without it) is never swallowed: ingest waits for the lock, then enqueues
// another extraction.
func TestCoalescingRace(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	h := history(9)

	// 1. The first event enqueues a job; a second one inside the window,
	// before the job has taken the lock, is absorbed by it.
	if res := tb.ingest(t, snapshot(t, "e1", h[:3])); !res.Enqueued {
		t.Fatalf("first event: %+v, want an enqueued extraction", res)
	}
	if res := tb.ingest(t, snapshot(t, "e2", h[:5])); res.Enqueued || res.Outcome != checkpoint.Accepted {
		t.Fatalf("second event: %+v, want accepted without a new job", res)
	}
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	tb.requireOracle(t, h[:5])
	if n := tb.enqueued(); n != 1 {
		t.Fatalf("%d jobs for a burst of two events, want 1", n)
	}

	// 2. A job takes the lock and reads the history; event e4 arrives now.
	if res := tb.ingest(t, snapshot(t, "e3", h[:7])); !res.Enqueued {
		t.Fatalf("after an extraction the next event must enqueue again: %+v", res)
	}
	read := make(chan struct{})
	release := make(chan struct{})
	extracted := make(chan error, 1)
	go func() {
		extracted <- pgx.BeginFunc(context.Background(), tb.pool, func(tx pgx.Tx) error {
			if _, err := tb.store.ExtractTx(context.Background(), tx, "u", "c"); err != nil {
				return err
			}
			close(read)
			<-release
			return nil
		})
	}()
	<-read
	ingested := make(chan store.Result, 1)
	go func() {
		res, err := tb.store.Ingest(context.Background(), snapshot(t, "e4", h[:9]), store.Meta{})
		if err != nil {
			t.Error(err)
		}
		ingested <- res
	}()
	select {
	case res := <-ingested:
		t.Fatalf("ingest committed while the job held the conversation's lock: %+v", res)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-extracted; err != nil {
		t.Fatal(err)
	}
	tb.requireOracle(t, h[:7])
	res := <-ingested
	if !res.Enqueued {
		t.Fatalf("event committed after the running job read the history was swallowed: %+v", res)
	}
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	tb.requireOracle(t, h[:9])
}

// TestCoalesceWindowExpires: a pending extraction that has not started
// within the window (a job lost with a killed worker) no longer absorbs
// events: ingest enqueues another.
func TestCoalesceWindowExpires(t *testing.T) {
	t.Parallel()
	tb := setup(t, 50*time.Millisecond)
	h := history(5)
	tb.ingest(t, snapshot(t, "e1", h[:3]))
	time.Sleep(100 * time.Millisecond)
	if res := tb.ingest(t, snapshot(t, "e2", h[:5])); !res.Enqueued {
		t.Fatalf("%+v: want a new job once the window has passed", res)
	}
}

// TestIngestOutcomes covers the lineage rules of ingest on one conversation.
func TestIngestOutcomes(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	h := history(7)
	tb.ingest(t, snapshot(t, "e1", h[:5]))
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	forgedTail := append(append([]json.RawMessage{}, h[:4]...), json.RawMessage(`{"id":"x","role":"user","content":"other"}`))
	forgedHead := append([]json.RawMessage{json.RawMessage(`{"id":"m0","role":"user","content":"changed"}`)}, h[1:6]...)
	tests := []struct {
		name        string
		ev          *checkpoint.Event
		wantOutcome checkpoint.Outcome
		wantReason  checkpoint.Reason
	}{
		{"stale: shorter than the cursor", snapshot(t, "s", h[:3]), checkpoint.Stale, ""},
		{"duplicate", snapshot(t, "d", h[:5]), checkpoint.Duplicate, ""},
		{"same length, different tail", snapshot(t, "t", forgedTail), checkpoint.Stale, ""},
		{"changed summarised message", snapshot(t, "m", forgedHead), checkpoint.Rejected, checkpoint.ReasonPrefixMismatch},
		{"extension", snapshot(t, "x", h[:7]), checkpoint.Accepted, ""},
	}
	for _, tt := range tests {
		res := tb.ingest(t, tt.ev)
		if res.Outcome != tt.wantOutcome || res.Reason != tt.wantReason {
			t.Errorf("%s: got %v %q, want %v %q", tt.name, res.Outcome, res.Reason, tt.wantOutcome, tt.wantReason)
		}
	}
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	tb.requireOracle(t, h[:7])

	// A longer history that diverges in the unsummarised tail replaces it.
	h2 := append(append([]json.RawMessage{}, h[:6]...), json.RawMessage(`{"id":"n6","role":"assistant","content":"regenerated"}`), h[6])
	h2 = append(h2, json.RawMessage(`{"id":"n8","role":"user","content":"and then"}`))
	if res := tb.ingest(t, snapshot(t, "r", h2)); res.Outcome != checkpoint.Accepted {
		t.Fatalf("divergent longer tail: %+v", res)
	}
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	tb.requireOracle(t, h2)
}

// TestDeleteConversation removes evidence and held messages, keeps a
// tombstone and rejects later events as deleted.
func TestDeleteConversation(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	h := history(5)
	tb.ingest(t, snapshot(t, "e1", h[:4]))
	if err := tb.store.DeleteConversation(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	if err := tb.store.DeleteConversation(t.Context(), "u", "c"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	rec, err := tb.store.Evidence(t.Context(), "u", "c")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != 0 || rec.Cursor != 0 || rec.MessageCount != 0 || rec.Body != nil {
		t.Errorf("deleted conversation reads %+v", rec)
	}
	var held int
	if err := tb.pool.QueryRow(t.Context(), `SELECT count(*) FROM recall_message`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("%d held messages survive the delete", held)
	}
	if res := tb.ingest(t, snapshot(t, "late", h)); res.Outcome != checkpoint.Rejected || res.Reason != checkpoint.ReasonDeleted {
		t.Errorf("late event: %+v, want rejected as deleted", res)
	}
}

// TestMigrateConcurrently runs migrations from several goroutines at once
// on a database that does not exist yet.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	missing := pgtest.UncreatedDatabase(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- store.Migrate(context.Background(), missing, nil) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent migrate: %v", err)
		}
	}
	if err := store.Migrate(t.Context(), missing, nil); err != nil {
		t.Errorf("migrate again: %v", err)
	}
}

// TestMigrateOutOfOrder: a database that has a later migration but lacks an
// earlier one (migrated by a build that carried 00004 but not 00003) is
// completed, not refused.
func TestMigrateOutOfOrder(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	if err := store.Migrate(t.Context(), dbURL, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `
DROP TABLE recall_archive;
ALTER TABLE recall_conversation DROP COLUMN view, DROP COLUMN archive_count;
DELETE FROM recall_schema_migrations WHERE version_id = 3`); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(t.Context(), dbURL, nil); err != nil {
		t.Fatalf("migrate with 00003 missing below 00004: %v", err)
	}
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM recall_archive`).Scan(&n); err != nil {
		t.Errorf("the missing migration was not applied: %v", err)
	}
}

// TestLargeEventInChunks ingests a snapshot larger than one INSERT carries:
// the chain runs on across the statements, the fold sees every message, an
// append event after it is accepted, and each extraction leaves recall
// holding only the messages after the cursor.
func TestLargeEventInChunks(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	var h []json.RawMessage
	for i := range 3001 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("m%d", i), "role": role,
			"content": fmt.Sprintf("%d: we decided to keep the read path on its own replica. %0600d", i, i)})
		h = append(h, b)
	}
	raw, _ := json.Marshal(h)
	msgs, err := checkpoint.DecodeMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	requireHeld := func(cursor, count int) {
		t.Helper()
		var n, lo int
		if err := tb.pool.QueryRow(t.Context(), `SELECT count(*), coalesce(min(idx), -1) FROM recall_message`).Scan(&n, &lo); err != nil {
			t.Fatal(err)
		}
		if n != count-cursor || (n > 0 && lo != cursor) {
			t.Fatalf("recall holds %d messages from %d, want %d from %d", n, lo, count-cursor, cursor)
		}
	}

	if res := tb.ingest(t, snapshot(t, "big", h[:2999])); res.Outcome != checkpoint.Accepted {
		t.Fatalf("large snapshot: %+v", res)
	}
	for _, i := range []int{1, 1000, 2999} { // chain digest of [0, i) is stored with message i-1
		var chain []byte
		if err := tb.pool.QueryRow(t.Context(), `SELECT chain FROM recall_message WHERE idx = $1`, i-1).Scan(&chain); err != nil {
			t.Fatal(err)
		}
		want, err := checkpoint.PrefixDigest(msgs, i)
		if err != nil {
			t.Fatal(err)
		}
		if checkpoint.Digest(chain) != want {
			t.Fatalf("chain digest of [0, %d): got %x, want %s", i, chain, want)
		}
	}
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	tb.requireOracle(t, h[:2999])
	requireHeld(2998, 2999)

	prefix, err := checkpoint.PrefixDigest(msgs, 2999)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"schema": checkpoint.Schema, "event_id": "append", "user_id": "u", "conversation_id": "c",
		"offset": 2999, "prefix_digest": prefix.String(), "messages": h[2999:]})
	ev, err := checkpoint.ParseEvent(b, checkpoint.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res := tb.ingest(t, ev); res.Outcome != checkpoint.Accepted {
		t.Fatalf("append after the large snapshot: %+v", res)
	}
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	tb.requireOracle(t, h)
	requireHeld(3000, 3001)
}

// TestSweep re-enqueues an extraction requested but not started within the
// window (its job died with a worker), never one whose row a live job holds.
func TestSweep(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	h := history(3)
	tb.ingest(t, snapshot(t, "e1", h))
	sweepOlder := func(window time.Duration) int {
		t.Helper()
		n, err := tb.store.Sweep(t.Context(), window, 100)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	sweep := func() int { t.Helper(); return sweepOlder(50 * time.Millisecond) }
	if n := sweepOlder(time.Minute); n != 0 {
		t.Fatalf("swept %d fresh requests, want 0", n)
	}
	time.Sleep(100 * time.Millisecond)
	// A live extraction holds the row: the sweep leaves it alone.
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(context.Background(), tb.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(context.Background(), `SELECT 1 FROM recall_conversation WHERE user_id = 'u' FOR UPDATE`); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	if n := sweep(); n != 0 {
		t.Errorf("swept %d requests whose row a live job holds, want 0", n)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := sweep(); n != 1 {
		t.Fatalf("swept %d stale requests, want 1", n)
	}
	if n := tb.enqueued(); n != 2 {
		t.Errorf("%d jobs enqueued, want 2", n)
	}
	// The sweep renewed the request: not swept again at once.
	if n := sweepOlder(time.Minute); n != 0 {
		t.Errorf("swept %d again at once, want 0", n)
	}
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := sweep(); n != 0 {
		t.Errorf("swept %d after the extraction ran, want 0", n)
	}
}

// tableInserter records each extraction job in test_enqueued, inside the
// caller's transaction, so that a rolled-back ingest leaves no job behind.
type tableInserter struct{}

func (tableInserter) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, _ *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	a := args.(store.ExtractArgs)
	_, err := tx.Exec(ctx, `INSERT INTO test_enqueued VALUES ($1, $2)`, a.UserID, a.ConversationID)
	return &rivertype.JobInsertResult{}, err
}

func (t tableInserter) InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	res := make([]*rivertype.JobInsertResult, len(params))
	for i, p := range params {
		var err error
		if res[i], err = t.InsertTx(ctx, tx, p.Args, p.InsertOpts); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// TestIngestWritesLargeChunksAlike ingests the same messages in a small event
// (written with INSERT) and, followed by a large message, in a large one
// (written with COPY): the rows of the messages they share are the same,
// an id that is absent and an evidential text that is empty stored as empty,
// the text of a message that is not evidence as NULL.
func TestIngestWritesLargeChunksAlike(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	shared := []json.RawMessage{
		json.RawMessage(`{"role":"user","content":""}`),
		json.RawMessage(`{"id":"a1","role":"assistant","content":"Let me check.","tool_calls":[{"id":"t1","name":"search","args":{"q":"x"}}]}`),
		json.RawMessage(`{"id":"t1","role":"tool","tool_call_id":"t1","content":"2 rows","artifact":{"rows":[1,2]}}`),
		json.RawMessage(`{"id":"u2","role":"user","content":"We must keep \u00e9 and \u0000 as they are."}`),
	}
	large := append(slices.Clone(shared), json.RawMessage(fmt.Sprintf(`{"id":"big","role":"assistant","content":%q}`, strings.Repeat("All quiet on the export job. ", 10_000))))
	ingest := func(conversationID string, msgs []json.RawMessage) {
		b, _ := json.Marshal(map[string]any{"schema": checkpoint.Schema, "event_id": conversationID, "user_id": "u", "conversation_id": conversationID, "messages": msgs})
		ev, err := checkpoint.ParseEvent(b, checkpoint.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := tb.store.Ingest(t.Context(), ev, store.Meta{}); err != nil || res.Outcome != checkpoint.Accepted {
			t.Fatalf("ingest %s: %+v, %v", conversationID, res, err)
		}
	}
	ingest("small", shared)
	ingest("large", large)
	rows := func(conversationID string) []string {
		rs, err := tb.pool.Query(t.Context(), `
SELECT format('%s %s %s %s %s %s %s', idx, encode(digest, 'hex'), encode(chain, 'hex'), role, evidential,
              encode(message_id, 'escape'), coalesce(encode(text, 'escape'), '(null)'))
FROM recall_message WHERE conversation_id = $1 AND idx < $2 ORDER BY idx`, conversationID, len(shared))
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rs, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	small := rows("small")
	if len(small) != len(shared) {
		t.Fatalf("%d rows, want %d", len(small), len(shared))
	}
	if diff := cmp.Diff(small, rows("large")); diff != "" {
		t.Errorf("rows differ (-INSERT +COPY):\n%s", diff)
	}
	var emptyID, emptyText, nullText int
	if err := tb.pool.QueryRow(t.Context(), `
SELECT count(*) FILTER (WHERE message_id = ''), count(*) FILTER (WHERE text = ''), count(*) FILTER (WHERE text IS NULL)
FROM recall_message WHERE idx = 0 OR idx = 1`).Scan(&emptyID, &emptyText, &nullText); err != nil {
		t.Fatal(err)
	}
	if emptyID != 2 || emptyText != 2 || nullText != 2 {
		t.Errorf("empty ids %d, empty texts %d, NULL texts %d; want 2 of each", emptyID, emptyText, nullText)
	}
}
