package worker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/recallhq/recall/checkpoint"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
)

// TestUnreadableEventIDs: a rejected event whose payload names no event id
// that can be read (not JSON, not UTF-8, nested too deeply, no event_id or
// one that is not a string) is recorded under its Nats-Msg-Id header; an
// event_id the payload holds wins over the header. The detail says what
// was wrong.
func TestUnreadableEventIDs(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	b.StartWorker(2)
	deep := checkpoint.MaxEventDepth
	tests := []struct {
		name       string
		msgID      string
		data       []byte
		wantID     string
		wantReason string
		wantDetail string
	}{
		{"not JSON", "hdr-not-json", []byte("{not json"), "hdr-not-json", "malformed", "event is not valid JSON"},
		{"not UTF-8", "hdr-not-utf8", []byte("{\"event_id\":\"e\xff\"}"), "hdr-not-utf8", "malformed", "event is not valid UTF-8"},
		{"nested too deeply", "hdr-deep", []byte(`{"schema":"recall.checkpoint.v1","event_id":"in-payload","user_id":"u","conversation_id":"c","messages":[` +
			strings.Repeat("[", deep) + strings.Repeat("]", deep) + `]}`), "hdr-deep", "malformed", fmt.Sprintf("event is nested deeper than %d levels", deep)},
		{"no event_id", "hdr-no-id", []byte(`{"schema":"recall.checkpoint.v1","user_id":"u","conversation_id":"c","messages":[]}`), "hdr-no-id", "invalid", `field "event_id" is required`},
		{"event_id not a string", "hdr-number", []byte(`{"schema":"recall.checkpoint.v1","event_id":7,"user_id":"u","conversation_id":"c","messages":[]}`), "hdr-number", "invalid", `field "event_id" must be a string`},
		{"event_id in the payload", "hdr-ignored", []byte(`{"schema":"recall.checkpoint.v9","event_id":"from-payload","user_id":"u","conversation_id":"c","messages":[]}`), "from-payload", "unsupported_schema", ""},
		{"no header", "", []byte("not json either"), "", "malformed", "event is not valid JSON"},
	}
	for _, tt := range tests {
		if tt.msgID == "" {
			_, err := b.JS.PublishMsg(t.Context(), &nats.Msg{Subject: b.Subject, Data: tt.data})
			pt.Must(t, err)
			continue
		}
		b.Publish(tt.msgID, tt.data)
	}
	if got := b.WaitRejections(len(tests), 15*time.Second); len(got) != len(tests) {
		t.Fatalf("%d rejections, want %d: %v", len(got), len(tests), got)
	}
	type row struct{ EventID, Reason, Detail string }
	rows, err := b.Pool.Query(t.Context(), `SELECT event_id, reason, detail FROM recall_rejection ORDER BY stream_seq`)
	pt.Must(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	pt.Must(t, err)
	for i, tt := range tests {
		r := got[i]
		if r.EventID != tt.wantID || r.Reason != tt.wantReason || (tt.wantDetail != "" && r.Detail != tt.wantDetail) {
			t.Errorf("%s: rejection %+v, want event_id %q, reason %s, detail %q", tt.name, r, tt.wantID, tt.wantReason, tt.wantDetail)
		}
	}
}
