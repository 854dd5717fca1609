package worker_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	pt "github.com/recallhq/recall/testutil/pipelinetest"
	"github.com/recallhq/recall/testutil/proctest"
)

// TestEventLog checks the worker's line per event: accepted events at
// debug and rejections at warn, each with the event id, the key and (for
// rejections) the reason, and never message text.
func TestEventLog(t *testing.T) {
	t.Parallel()
	var logs proctest.Buffer
	b := pt.New(t)
	b.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b.StartWorker(2)

	const secret = "We must ship by Friday."
	history := []json.RawMessage{msg("m0", "user", secret), msg("m1", "assistant", "Agreed."), msg("m2", "user", "Next?")}
	b.Publish("ok-1", pt.Event("ok-1", "u-log", "c-log", history))
	b.Publish("bad-1", pt.Event("bad-1", "u-log", "c-log", []json.RawMessage{json.RawMessage(`{"role":"wizard","content":"` + secret + `"}`)}))
	// Ids no event may have are not logged: they may hold anything.
	const hostile = "HOSTILE-ID-TEXT"
	b.Publish("bad-2", pt.Event("bad-2", "u\x00"+hostile, "c-log", history))
	longID := strings.Repeat(hostile, 100)
	b.Publish(longID, pt.Event(longID, "u-log", "c-log", history))
	b.WaitRejections(3, 10*time.Second)
	b.WaitCursor("u-log", "c-log", 2, 10*time.Second)

	find := func(eventID string) string {
		deadline := time.Now().Add(5 * time.Second)
		for {
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "msg=event") && strings.Contains(l, "event_id="+eventID+" ") {
					return l
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no event line for %s in:\n%s", eventID, strings.Join(strings.Split(logs.String(), "\n"), "\n"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	tests := []struct {
		eventID string
		want    []string
	}{
		{"ok-1", []string{"level=DEBUG", "user_id=u-log", "conversation_id=c-log", "outcome=accepted"}},
		{"bad-1", []string{"level=WARN", "user_id=u-log", "conversation_id=c-log", "outcome=rejected", "reason=invalid"}},
	}
	for _, tt := range tests {
		line := find(tt.eventID)
		for _, w := range tt.want {
			if !strings.Contains(line, w) {
				t.Errorf("the line of %s lacks %q: %s", tt.eventID, w, line)
			}
		}
	}
	if line := find("bad-2"); !strings.Contains(line, `user_id=(invalid)`) || !strings.Contains(line, "reason=invalid") {
		t.Errorf("the line of an event whose user_id holds a NUL: %s", line)
	}
	if line := find(`(invalid)`); !strings.Contains(line, "user_id=u-log") || !strings.Contains(line, "reason=invalid") {
		t.Errorf("the line of an event whose event_id is too long: %s", line)
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "ship by Friday") || strings.Contains(l, hostile) {
			t.Errorf("a log line carries message text or an invalid id: %s", l)
		}
	}
}
