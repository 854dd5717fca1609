package faults

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestStreamRecreated deletes and recreates the stream with the database
// kept, as a new user does with rm -rf .recall-dev on the same Postgres:
// the new stream numbers its messages from 1 again, and every bad event
// published to it still gets a rejection row of its own.
func TestStreamRecreated(t *testing.T) {
	t.Parallel()
	n := 100
	if long {
		n = 1000
	}
	c := newCluster(t, "")
	ctx := context.Background()
	badEvents := func(round int) []event {
		out := make([]event, n)
		for i := range out {
			// The same payloads in both rounds: only the stream tells them
			// apart.
			id := fmt.Sprintf("bad-%d", i)
			out[i] = event{ID: fmt.Sprintf("%s-r%d", id, round), Data: raw(map[string]any{"schema": "recall.checkpoint.v9", "event_id": id,
				"user_id": "u", "conversation_id": "c", "messages": []any{map[string]any{"role": "user", "content": Marker}}})}
		}
		return out
	}
	waitRows := func(want int) int {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			got, err := rejectionCount(ctx, c.pool)
			if err != nil {
				t.Fatal(err)
			}
			if got >= want || time.Now().After(deadline) {
				time.Sleep(500 * time.Millisecond) // and no more than want
				got, _ = rejectionCount(ctx, c.pool)
				return got
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	w := c.worker("w0")
	if err := c.pub.run(ctx, badEvents(0), 0, 4); err != nil {
		t.Fatal(err)
	}
	first := waitRows(n)
	if code, _, err := w.term(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("worker drain: exit %d, %v", code, err)
	}
	if err := c.js.DeleteStream(ctx, stream); err != nil {
		t.Fatal(err)
	}
	c.worker("w1") // recreates the stream
	if err := c.pub.run(ctx, badEvents(1), 0, 4); err != nil {
		t.Fatal(err)
	}
	total := waitRows(2 * n)
	if first != n || total != 2*n {
		t.Errorf("%d rejection rows after the first stream (want %d), %d after the recreated one (want %d)", first, n, total, 2*n)
	}
	requireCleanLogs(t, c.scanLogs())
	results.add(t, row{Scenario: "8 stream recreated", Published: 2 * n, Accepted: c.pub.accepted(),
		Note: fmt.Sprintf("%d bad events per stream: %d rows, then %d new rows", n, first, total-first)})
}
