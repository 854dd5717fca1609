package store_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
)

// rejectionRow is what a test reads back of a rejection.
type rejectionRow struct {
	reason  string
	payload []byte
	sha     []byte
	size    int64
}

func (tb *testBundle) rejections(t *testing.T) []rejectionRow {
	t.Helper()
	rows, err := tb.pool.Query(t.Context(), `SELECT reason, payload, payload_sha256, payload_bytes FROM recall_rejection ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []rejectionRow
	for rows.Next() {
		var r rejectionRow
		var size *int64
		if err := rows.Scan(&r.reason, &r.payload, &r.sha, &size); err != nil {
			t.Fatal(err)
		}
		if size != nil {
			r.size = *size
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRejectAfterDelete: a late event for a deleted key that is rejected
// for another reason (it does not parse, it is too large, its gap never
// filled) is recorded as deleted, without its payload.
func TestRejectAfterDelete(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	tb.ingest(t, snapshot(t, "s0", history(3)))
	if err := tb.store.DeleteConversation(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	for i, reason := range []checkpoint.Reason{checkpoint.ReasonInvalid, checkpoint.ReasonTooLarge, checkpoint.ReasonUnsupportedSchema, checkpoint.ReasonGap} {
		err := tb.store.Reject(t.Context(), store.Rejection{Reason: reason, Detail: "late", EventID: "late", UserID: "u", ConversationID: "c",
			Stream: "S", StreamSeq: uint64(10 + i), Payload: []byte(`{"secret":"the deleted text"}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	got := tb.rejections(t)
	if len(got) != 4 {
		t.Fatalf("%d rejection rows, want 4", len(got))
	}
	for _, r := range got {
		if r.reason != string(checkpoint.ReasonDeleted) || r.payload != nil {
			t.Errorf("late rejection recorded as %s with %d payload bytes, want deleted and none", r.reason, len(r.payload))
		}
	}
}

// TestRejectionsAfterStreamRecreated: a stream recreated with the database
// kept starts its sequence numbers again; its rejections get rows of their
// own, while a redelivery of the same stream message still gets one row.
func TestRejectionsAfterStreamRecreated(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	second := first.Add(time.Hour)
	for _, created := range []time.Time{first, first, second, second} {
		for seq := uint64(1); seq <= 10; seq++ {
			err := tb.store.Reject(t.Context(), store.Rejection{Reason: checkpoint.ReasonMalformed, Detail: "x",
				Stream: "S", StreamCreated: created, StreamSeq: seq, Payload: []byte("{not json")})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := len(tb.rejections(t)); got != 20 {
		t.Errorf("%d rejection rows, want 20 (10 per stream, redeliveries once)", got)
	}
}

// TestRejectionPayloadBound: a payload is kept up to its first 64 KiB, with
// the SHA-256 and size of the whole beside it.
func TestRejectionPayloadBound(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	big := []byte(strings.Repeat("x", 17<<20))
	small := []byte(`{"schema":"recall.checkpoint.v9"}`)
	for i, p := range [][]byte{big, small} {
		err := tb.store.Reject(t.Context(), store.Rejection{Reason: checkpoint.ReasonTooLarge, Detail: "x",
			Stream: "S", StreamSeq: uint64(i + 1), Payload: p})
		if err != nil {
			t.Fatal(err)
		}
	}
	got := tb.rejections(t)
	if len(got) != 2 {
		t.Fatalf("%d rows", len(got))
	}
	for i, p := range [][]byte{big, small} {
		want := p[:min(len(p), store.MaxRejectionPayload)]
		sum := sha256.Sum256(p)
		if !bytes.Equal(got[i].payload, want) || !bytes.Equal(got[i].sha, sum[:]) || got[i].size != int64(len(p)) {
			t.Errorf("row %d: payload %d bytes (want %d), sha256 %x (want %x), size %d (want %d)",
				i, len(got[i].payload), len(want), got[i].sha, sum, got[i].size, len(p))
		}
	}
	if store.MaxRejectionPayload != 64<<10 {
		t.Errorf("MaxRejectionPayload %d, want 64 KiB", store.MaxRejectionPayload)
	}
}

// TestPrune: rejections and tombstones older than the retention go; newer
// ones and live conversations stay.
func TestPrune(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	for i := range 3 {
		if err := tb.store.Reject(t.Context(), store.Rejection{Reason: checkpoint.ReasonMalformed, Detail: "x", Stream: "S", StreamSeq: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tb.pool.Exec(t.Context(), `UPDATE recall_rejection SET received_at = now() - interval '31 days' WHERE stream_seq <= 2`); err != nil {
		t.Fatal(err)
	}
	tb.ingest(t, snapshot(t, "s0", history(3)))
	for _, c := range []string{"old", "new"} {
		if err := tb.store.DeleteConversation(t.Context(), "u", c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tb.pool.Exec(t.Context(), `UPDATE recall_conversation SET deleted_at = now() - interval '31 days' WHERE conversation_id = 'old'`); err != nil {
		t.Fatal(err)
	}
	n, err := tb.store.Prune(t.Context(), 30*24*time.Hour, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("pruned %d rows, want 3 (2 rejections, 1 tombstone)", n)
	}
	var rejections, convs int
	if err := tb.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM recall_rejection), (SELECT count(*) FROM recall_conversation)`).Scan(&rejections, &convs); err != nil {
		t.Fatal(err)
	}
	if rejections != 1 || convs != 2 {
		t.Errorf("%d rejections and %d conversation rows left, want 1 and 2 (u/c and the new tombstone)", rejections, convs)
	}
}

// TestRejectUnstorableKey: an event whose key cannot be a conversation's
// (a NUL, invalid UTF-8, too long) is still recorded, with its reason.
func TestRejectUnstorableKey(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	for i, k := range []string{"u\x00", "u\xff", strings.Repeat("u", 300)} {
		err := tb.store.Reject(t.Context(), store.Rejection{Reason: checkpoint.ReasonInvalid, Detail: "bad key", UserID: k, ConversationID: "c",
			Stream: "S", StreamSeq: uint64(i + 1), Payload: []byte("x")})
		if err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
	}
	if got := tb.rejections(t); len(got) != 3 || got[0].reason != string(checkpoint.ReasonInvalid) {
		t.Errorf("%d rows (%v), want 3 invalid", len(got), got)
	}
}
