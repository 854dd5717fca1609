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

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
)

// userBundle is a store whose exports read pages of two rows, so that a
// handful of conversations spans several pages, with two users' data:
// u-a's messages carry markerA, u-b's markerB.
type userBundle struct {
	*testBundle
	st *store.Store
}

const (
	markerA = "MARKERAAA7"
	markerB = "MARKERBBB7"
)

func setupUsers(t *testing.T) *userBundle {
	t.Helper()
	tb := setup(t, time.Minute)
	st, err := store.New(tb.pool, &store.Config{Jobs: tableInserter{}, ExportPage: 2})
	if err != nil {
		t.Fatal(err)
	}
	return &userBundle{testBundle: tb, st: st}
}

// markedHistory returns n alternating user/assistant messages that each
// carry marker and name a constraint, so that they leave archive entries.
func markedHistory(marker string, n int) []json.RawMessage {
	var h []json.RawMessage
	for i := range n {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("m%d", i), "role": role,
			"content": fmt.Sprintf("We must keep %s point %d. The budget is %d euros.", marker, i, 100+i)})
		h = append(h, b)
	}
	return h
}

func eventFor(t *testing.T, id, userID, conversationID string, msgs []json.RawMessage) *checkpoint.Event {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"schema": checkpoint.Schema, "event_id": id, "user_id": userID, "conversation_id": conversationID, "messages": msgs})
	ev, err := checkpoint.ParseEvent(b, checkpoint.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// conversation ingests and extracts a conversation of n messages.
func (ub *userBundle) conversation(t *testing.T, userID, conversationID, marker string, n int) {
	t.Helper()
	ev := eventFor(t, "e-"+userID+"-"+conversationID, userID, conversationID, markedHistory(marker, n))
	if res, err := ub.st.Ingest(t.Context(), ev, store.Meta{}); err != nil || res.Outcome != checkpoint.Accepted {
		t.Fatalf("ingest %s/%s: %+v, %v", userID, conversationID, res, err)
	}
	if _, err := ub.st.Extract(t.Context(), userID, conversationID); err != nil {
		t.Fatal(err)
	}
}

func (ub *userBundle) reject(t *testing.T, seq uint64, reason checkpoint.Reason, userID, conversationID, marker string) {
	t.Helper()
	err := ub.st.Reject(t.Context(), store.Rejection{Reason: reason, Detail: "test", EventID: fmt.Sprintf("r%d", seq),
		UserID: userID, ConversationID: conversationID, Stream: "S", StreamSeq: seq,
		Payload: []byte(`{"messages":[{"role":"user","content":"` + marker + `"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
}

// twoUsers fills the store: u-a has five conversations with state, one
// tombstone, one row that holds nothing, and rejections (one for a key
// with no conversation, one for a key no event may have); u-b has two
// conversations, one with the same id as one of u-a's, and a rejection.
func (ub *userBundle) twoUsers(t *testing.T) {
	t.Helper()
	for i, c := range []string{"c1", "c2", "c3", "c4", "c5"} {
		ub.conversation(t, "u-a", c, markerA, 3+i)
	}
	ub.conversation(t, "u-a", "c-dead", markerA, 3)
	if err := ub.st.DeleteConversation(t.Context(), "u-a", "c-dead"); err != nil {
		t.Fatal(err)
	}
	// A row that an event created only to be rejected: it holds nothing.
	start := checkpoint.ChainStart()
	if _, err := ub.pool.Exec(t.Context(), `INSERT INTO recall_conversation (user_id, conversation_id, prefix_digest) VALUES ('u-a', 'c-empty', $1)`,
		start[:]); err != nil {
		t.Fatal(err)
	}
	ub.conversation(t, "u-b", "c1", markerB, 4)
	ub.conversation(t, "u-b", "c9", markerB, 3)
	ub.reject(t, 1, checkpoint.ReasonGap, "u-a", "c1", markerA)
	ub.reject(t, 2, checkpoint.ReasonInvalid, "u-a", "c8-rejected", markerA)
	ub.reject(t, 3, checkpoint.ReasonInvalid, "u-a", "", markerA)
	ub.reject(t, 4, checkpoint.ReasonPrefixMismatch, "u-a", "c1", markerA)
	ub.reject(t, 5, checkpoint.ReasonGap, "u-b", "c1", markerB)
}

func collect[T any](t *testing.T, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestUserConversations(t *testing.T) {
	t.Parallel()
	ub := setupUsers(t)
	ub.twoUsers(t)
	ctx := t.Context()
	tests := []struct {
		name    string
		userID  string
		after   string
		limit   int
		wantIDs []string
	}{
		{"first page", "u-a", "", 2, []string{"c1", "c2"}},
		{"next page", "u-a", "c2", 2, []string{"c3", "c4"}},
		{"last page", "u-a", "c4", 2, []string{"c5"}},
		{"after the last", "u-a", "c5", 2, nil},
		{"after an id that is not there", "u-a", "c10", 10, []string{"c2", "c3", "c4", "c5"}},
		{"all at once", "u-a", "", 100, []string{"c1", "c2", "c3", "c4", "c5"}},
		{"another user", "u-b", "", 100, []string{"c1", "c9"}},
		{"unknown user", "u-none", "", 100, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ub.st.UserConversations(ctx, tt.userID, tt.after, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range got {
				ids = append(ids, c.ConversationID)
				rec, err := ub.st.Evidence(ctx, tt.userID, c.ConversationID)
				if err != nil {
					t.Fatal(err)
				}
				want := store.ConversationSummary{ConversationID: c.ConversationID, Version: rec.Version, Cursor: rec.Cursor,
					MessageCount: rec.MessageCount, UpdatedAt: rec.UpdatedAt}
				if diff := cmp.Diff(want, c); diff != "" {
					t.Errorf("summary of %s (-want +got):\n%s", c.ConversationID, diff)
				}
				if c.Version == 0 || c.Cursor == 0 {
					t.Errorf("%s: version %d, cursor %d: the fixture's conversations are extracted", c.ConversationID, c.Version, c.Cursor)
				}
			}
			if !slices.Equal(ids, tt.wantIDs) {
				t.Errorf("ids %v, want %v", ids, tt.wantIDs)
			}
		})
	}
}

// TestUserExport reads each kind of row across several pages (of two
// rows), in order, and never another user's.
func TestUserExport(t *testing.T) {
	t.Parallel()
	ub := setupUsers(t)
	ub.twoUsers(t)
	ctx := t.Context()

	recs := collect(t, ub.st.UserRecords(ctx, "u-a"))
	var ids []string
	for _, rec := range recs {
		ids = append(ids, rec.ConversationID)
		want, err := ub.st.Evidence(ctx, "u-a", rec.ConversationID)
		if err != nil {
			t.Fatal(err)
		}
		want.View = nil
		if diff := cmp.Diff(want, rec); diff != "" {
			t.Errorf("record of %s (-want +got):\n%s", rec.ConversationID, diff)
		}
	}
	if want := []string{"c1", "c2", "c3", "c4", "c5"}; !slices.Equal(ids, want) {
		t.Errorf("records of %v, want %v", ids, want)
	}

	entries := collect(t, ub.st.UserArchive(ctx, "u-a"))
	var want int
	if err := ub.pool.QueryRow(ctx, `SELECT count(*) FROM recall_archive WHERE user_id = 'u-a'`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if want < 10 || len(entries) != want {
		t.Fatalf("%d entries, want %d (and at least 10, to span pages)", len(entries), want)
	}
	if !slices.IsSortedFunc(entries, func(a, b store.ArchiveEntry) int {
		return cmp3(a.ConversationID, b.ConversationID, a.Index, b.Index, a.Span[0], b.Span[0])
	}) {
		t.Error("entries are not ordered by conversation, index and span")
	}
	marked := 0
	for i, e := range entries {
		if i > 0 && cmp3(entries[i-1].ConversationID, e.ConversationID, entries[i-1].Index, e.Index, entries[i-1].Span[0], e.Span[0]) == 0 {
			t.Errorf("entry %d repeats the one before it", i)
		}
		if strings.Contains(e.Excerpt, markerB) || e.Span[1] <= e.Span[0] || e.Role == "" || e.MessageID == "" {
			t.Errorf("entry %+v: want u-a's excerpt with its span, role and message id", e)
		}
		if strings.Contains(e.Excerpt, markerA) {
			marked++
		}
		if e.Bucket.String() == "unknown" {
			t.Errorf("entry %+v has no bucket", e)
		}
	}

	if marked == 0 {
		t.Error("no entry carries u-a's marker")
	}

	rejections := collect(t, ub.st.UserRejections(ctx, "u-a"))
	var events []string
	for _, r := range rejections {
		events = append(events, r.EventID)
		if r.UserID != "u-a" || r.Payload != nil {
			t.Errorf("rejection %+v: want u-a's, without payload", r)
		}
	}
	if want := []string{"r3", "r1", "r4", "r2"}; !slices.Equal(events, want) {
		t.Errorf("rejections %v, want %v (by conversation id, then as recorded)", events, want)
	}

	// An unknown user has nothing; stopping early ends the reads.
	if got := collect(t, ub.st.UserRecords(ctx, "u-none")); len(got) != 0 {
		t.Errorf("unknown user: %d records", len(got))
	}
	n := 0
	for range ub.st.UserArchive(ctx, "u-a") {
		if n++; n == 3 {
			break
		}
	}
}

func cmp3(a1, b1 string, a2, b2, a3, b3 int) int {
	if c := strings.Compare(a1, b1); c != 0 {
		return c
	}
	if a2 != b2 {
		return a2 - b2
	}
	return a3 - b3
}

// scanTables counts, in every column of every table of the database, the
// rows that carry marker: bytea columns by their bytes, the others by
// their text.
func scanTables(t *testing.T, pool *pgxpool.Pool, marker string) map[string]int {
	t.Helper()
	ctx := t.Context()
	rows, err := pool.Query(ctx, `
SELECT c.table_schema, c.table_name, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t USING (table_schema, table_name)
WHERE t.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatal(err)
	}
	type column struct{ schema, table, name, typ string }
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (column, error) {
		var c column
		return c, r.Scan(&c.schema, &c.table, &c.name, &c.typ)
	})
	if err != nil || len(cols) == 0 {
		t.Fatalf("list columns: %d, %v", len(cols), err)
	}
	out := map[string]int{}
	for _, c := range cols {
		cond := fmt.Sprintf("strpos(%s::text, $1) > 0", pgx.Identifier{c.name}.Sanitize())
		if c.typ == "bytea" {
			cond = fmt.Sprintf("position(convert_to($1, 'UTF8') in %s) > 0", pgx.Identifier{c.name}.Sanitize())
		}
		var n int
		q := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", pgx.Identifier{c.schema, c.table}.Sanitize(), cond)
		if err := pool.QueryRow(ctx, q, marker).Scan(&n); err != nil {
			t.Fatalf("scan %s.%s: %v", c.table, c.name, err)
		}
		if n > 0 {
			out[c.table+"."+c.name] = n
		}
	}
	return out
}

// TestDeleteUser deletes every conversation of u-a as DeleteConversation
// does: a scan of every table finds u-a's marker before and nowhere
// after, u-b's data is unchanged, each deleted key (those only rejections
// named included) stays deleted, and a new conversation id is accepted.
func TestDeleteUser(t *testing.T) {
	t.Parallel()
	ub := setupUsers(t)
	ub.twoUsers(t)
	ctx := t.Context()
	// Held messages (not summarised yet) carry the marker too.
	if res, err := ub.st.Ingest(ctx, eventFor(t, "held", "u-a", "c-held", markedHistory(markerA, 4)), store.Meta{}); err != nil || res.Outcome != checkpoint.Accepted {
		t.Fatalf("ingest: %+v, %v", res, err)
	}

	before := scanTables(t, ub.pool, markerA)
	for _, col := range []string{"recall_message.text", "recall_archive.excerpt", "recall_conversation.body", "recall_rejection.payload"} {
		if before[col] == 0 {
			t.Fatalf("before the deletion the scan finds the marker in %v, not in %s: it proves nothing", before, col)
		}
	}
	bBefore := scanTables(t, ub.pool, markerB)
	recB, err := ub.st.Evidence(ctx, "u-b", "c1")
	if err != nil {
		t.Fatal(err)
	}
	rejectionsB := collect(t, ub.st.UserRejections(ctx, "u-b"))

	n, err := ub.st.DeleteUser(ctx, "u-a")
	if err != nil {
		t.Fatal(err)
	}
	// c1…c5, c-empty, c-held and c8-rejected; c-dead was deleted already.
	if n != 8 {
		t.Errorf("DeleteUser deleted %d keys, want 8", n)
	}
	if after := scanTables(t, ub.pool, markerA); len(after) != 0 {
		t.Errorf("after the deletion the scan finds u-a's marker in %v", after)
	}
	if got := collect(t, ub.st.UserRecords(ctx, "u-a")); len(got) != 0 {
		t.Errorf("u-a still has %d conversations", len(got))
	}
	if got := collect(t, ub.st.UserArchive(ctx, "u-a")); len(got) != 0 {
		t.Errorf("u-a still has %d archive entries", len(got))
	}
	// The rejection rows stay (without payload): they say what happened.
	if got := collect(t, ub.st.UserRejections(ctx, "u-a")); len(got) != 4 {
		t.Errorf("u-a has %d rejection rows, want its 4", len(got))
	}

	// u-b is untouched, its conversation with the same id as u-a's included.
	if diff := cmp.Diff(bBefore, scanTables(t, ub.pool, markerB)); diff != "" {
		t.Errorf("u-b's rows changed (-before +after):\n%s", diff)
	}
	if got, err := ub.st.Evidence(ctx, "u-b", "c1"); err != nil || got.Version != recB.Version || string(got.Body) != string(recB.Body) {
		t.Errorf("u-b/c1 changed: version %d → %d, %v", recB.Version, got.Version, err)
	}
	if diff := cmp.Diff(rejectionsB, collect(t, ub.st.UserRejections(ctx, "u-b"))); diff != "" {
		t.Errorf("u-b's rejections changed (-before +after):\n%s", diff)
	}

	// Idempotent.
	if n, err := ub.st.DeleteUser(ctx, "u-a"); err != nil || n != 0 {
		t.Errorf("second DeleteUser: %d, %v; want 0, nil", n, err)
	}

	// Each key stays deleted; a new one is accepted.
	for _, c := range []string{"c1", "c5", "c-held", "c-empty", "c8-rejected"} {
		res, err := ub.st.Ingest(ctx, eventFor(t, "late-"+c, "u-a", c, markedHistory(markerA, 3)), store.Meta{})
		if err != nil || res.Outcome != checkpoint.Rejected || res.Reason != checkpoint.ReasonDeleted {
			t.Errorf("late event for u-a/%s: %+v, %v; want rejected as deleted", c, res, err)
		}
	}
	if after := scanTables(t, ub.pool, markerA); len(after) != 0 {
		t.Errorf("late events left u-a's marker in %v", after)
	}
	ub.conversation(t, "u-a", "c-new", "fresh", 3)
	got, err := ub.st.UserConversations(ctx, "u-a", "", 10)
	if err != nil || len(got) != 1 || got[0].ConversationID != "c-new" || got[0].Cursor == 0 {
		t.Errorf("after the deletion u-a lists %+v, %v; want only c-new, extracted", got, err)
	}
}

// TestDeleteUserUnknown: deleting a user recall never saw deletes nothing.
func TestDeleteUserUnknown(t *testing.T) {
	t.Parallel()
	ub := setupUsers(t)
	ub.conversation(t, "u-b", "c1", markerB, 3)
	if n, err := ub.st.DeleteUser(context.Background(), "u-none"); err != nil || n != 0 {
		t.Fatalf("DeleteUser of an unknown user: %d, %v", n, err)
	}
	if got := collect(t, ub.st.UserRecords(t.Context(), "u-b")); len(got) != 1 {
		t.Errorf("u-b has %d conversations, want 1", len(got))
	}
}
