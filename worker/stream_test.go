package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
)

// streamMessages returns the data of every message the stream still stores.
func streamMessages(t *testing.T, b *pt.Bundle) [][]byte {
	t.Helper()
	ctx := t.Context()
	s, err := b.JS.Stream(ctx, b.Stream)
	pt.Must(t, err)
	info, err := s.Info(ctx)
	pt.Must(t, err)
	var out [][]byte
	if info.State.Msgs == 0 {
		return nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		out = append(out, m.Data)
	}
	return out
}

// waitStreamEmpty waits until the stream stores no message.
func waitStreamEmpty(t *testing.T, b *pt.Bundle, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msgs := streamMessages(t, b)
		if len(msgs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream still stores %d messages after %s (acknowledged events must not stay in NATS)", len(msgs), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAckedEventsLeaveTheStream: once events are acknowledged or terminated
// (accepted, rejected, deleted), the stream holds none of them, so a
// conversation's text does not outlive its deletion in NATS.
func TestAckedEventsLeaveTheStream(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	b.StartWorker(2)
	const marker = "zq-erase-marker-1"
	history := []json.RawMessage{msg("m0", "user", "We must ship by Friday "+marker), msg("m1", "assistant", "ok"), msg("m2", "user", "next")}
	b.Publish("s0", pt.Event("s0", "u", "c", history))
	b.Publish("bad", []byte("{not json "+marker))
	b.WaitCursor("u", "c", 2, 10*time.Second)
	b.WaitRejections(1, 10*time.Second)
	waitStreamEmpty(t, b, 10*time.Second)

	s, err := b.JS.Stream(t.Context(), b.Stream)
	pt.Must(t, err)
	info, err := s.Info(t.Context())
	pt.Must(t, err)
	if info.Config.Retention != jetstream.WorkQueuePolicy {
		t.Errorf("stream retention %v, want work-queue", info.Config.Retention)
	}

	// A delete event and a late event for the deleted key: nothing of the
	// key stays in the stream.
	del, _ := json.Marshal(map[string]any{"schema": checkpoint.Schema, "kind": "delete", "event_id": "d0", "user_id": "u", "conversation_id": "c"})
	b.Publish("d0", del)
	b.Publish("late", pt.Event("late", "u", "c", history))
	b.WaitRejections(2, 10*time.Second)
	waitStreamEmpty(t, b, 10*time.Second)
}

// TestLegacyLimitsStream: a stream an older recall created with limits
// retention cannot be switched in place; the worker says so and deletes
// each event from the stream once it is acknowledged, so nothing stays.
func TestLegacyLimitsStream(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	_, err := b.JS.CreateStream(t.Context(), jetstream.StreamConfig{Name: b.Stream, Subjects: []string{b.Subject},
		Retention: jetstream.LimitsPolicy, MaxAge: 7 * 24 * time.Hour})
	pt.Must(t, err)
	b.CaptureLogs = true
	b.StartWorker(2)
	history := []json.RawMessage{msg("m0", "user", "We must ship by Friday."), msg("m1", "assistant", "ok"), msg("m2", "user", "next")}
	for i := range 5 {
		id := fmt.Sprintf("s%d", i)
		b.Publish(id, pt.Event(id, "u", id, history))
	}
	b.Publish("bad", []byte("{not json"))
	for i := range 5 {
		b.WaitCursor("u", fmt.Sprintf("s%d", i), 2, 10*time.Second)
	}
	b.WaitRejections(1, 10*time.Second)
	waitStreamEmpty(t, b, 10*time.Second)
	if !strings.Contains(b.Logs(), "limits retention") {
		t.Errorf("no warning about the stream's limits retention in the logs:\n%s", b.Logs())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := b.JS.Stream(ctx, b.Stream)
	pt.Must(t, err)
	info, err := s.Info(ctx)
	pt.Must(t, err)
	if info.Config.Retention != jetstream.LimitsPolicy {
		t.Errorf("the existing stream's retention was changed to %v", info.Config.Retention)
	}
}

// TestRejectionsAfterStreamRecreated: the stream is deleted and recreated
// with the database kept (its sequence numbers start again): every bad
// event still gets a row of its own.
func TestRejectionsAfterStreamRecreated(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	const n = 100
	publishBad := func(round int) {
		for i := range n {
			id := fmt.Sprintf("bad-%d-%d", round, i)
			b.Publish(id, []byte(fmt.Sprintf(`{"schema":"recall.checkpoint.v9","event_id":%q}`, id)))
		}
	}
	w := b.StartWorker(4)
	publishBad(0)
	if got := b.WaitRejections(n, 15*time.Second); len(got) != n {
		t.Fatalf("%d rejection rows, want %d", len(got), n)
	}
	w.Stop()
	pt.Must(t, b.JS.DeleteStream(t.Context(), b.Stream))
	b.StartWorker(4)
	publishBad(1)
	if got := b.WaitRejections(2*n, 15*time.Second); len(got) != 2*n {
		t.Fatalf("%d rejection rows after the stream was recreated, want %d", len(got), 2*n)
	}
}
