package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/testutil/fakemodel"
)

// modelKey is the lane's API key in these tests: it must never be printed.
const modelKey = "sk-faults-NEVERPRINTED"

// laneState is what the model lane test reads of a conversation.
type laneState struct {
	cursor, notesCursor, notes, calls, version int
	pending                                    bool
}

func readLane(t *testing.T, c *cluster, user, conv string) laneState {
	t.Helper()
	var s laneState
	err := c.pool.QueryRow(context.Background(), `
SELECT "cursor", coalesce(notes_cursor, -1), notes_requested_at IS NOT NULL, version,
    (SELECT count(*) FROM recall_note n WHERE n.user_id = $1 AND n.conversation_id = $2),
    notes_calls
FROM recall_conversation WHERE user_id = $1 AND conversation_id = $2`, user, conv).
		Scan(&s.cursor, &s.notesCursor, &s.pending, &s.version, &s.notes, &s.calls)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// laneTurns returns a conversation of n user turns, each with a tool call
// whose output, and an assistant reply, carry marker: only the user's text
// may reach the model.
func laneTurns(marker string, n int) []json.RawMessage {
	var msgs []json.RawMessage
	msgs = append(msgs, raw(map[string]any{"id": "sys", "role": "system", "content": "SYSTEM " + marker}))
	for i := range n {
		msgs = append(msgs,
			raw(map[string]any{"id": fmt.Sprintf("u%d", i), "role": "user", "content": fmt.Sprintf("We must keep budget line %d under %d EUR.", i, 100*(i+1))}),
			raw(map[string]any{"id": fmt.Sprintf("a%d", i), "role": "assistant", "content": "Checking. " + marker,
				"tool_calls": []any{map[string]any{"id": fmt.Sprintf("t%d", i), "name": "lookup", "args": map[string]any{"q": marker}}}}),
			raw(map[string]any{"id": fmt.Sprintf("t%d", i), "role": "tool", "tool_call_id": fmt.Sprintf("t%d", i), "content": "TOOL " + marker}),
			raw(map[string]any{"id": fmt.Sprintf("r%d", i), "role": "assistant", "content": "Noted, line " + fmt.Sprint(i) + "."}))
	}
	return append(msgs, raw(map[string]any{"id": "next", "role": "user", "content": "What next?"}))
}

// TestModelLane runs the model lane with the real binary, through NATS,
// River and Postgres, against a fake OpenAI-compatible endpoint: a burst of
// events makes one call; the worker is killed with SIGKILL in the middle of
// it, and the job runs again on another worker and writes its notes once;
// a conversation deleted while its call is in flight gets no note and
// leaves nothing in any table; no log line carries a message's text or the
// key.
func TestModelLane(t *testing.T) {
	t.Parallel()
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	marker := "LANE" + strings.ToUpper(hex.EncodeToString(rb[:]))
	hold, release := fakemodel.Hold(fakemodel.NoteEach)
	t.Cleanup(release)
	srv := fakemodel.Start(t, func(n int, r *fakemodel.Request) fakemodel.Reply {
		if n == 0 {
			return hold(n, r) // the call in flight when its worker is killed
		}
		return fakemodel.NoteEach(n, r)
	})
	c := newCluster(t, "", "RECALL_EXTRACTOR=model", "RECALL_MODEL_URL="+srv.URL(), "RECALL_MODEL_NAME=fake-model",
		"RECALL_MODEL_API_KEY="+modelKey, "RECALL_MODEL_TIMEOUT=5s", "RECALL_MODEL_CAPTURE_ASSISTANT=true")
	w := c.worker("w")
	ctx := context.Background()

	// A burst: the growing snapshots of one conversation, back to back.
	const turns = 4
	history := laneTurns(marker, turns)
	var burst []event
	for n := 6; n <= len(history); n += 4 {
		id := fmt.Sprintf("burst-%d", n)
		burst = append(burst, event{ID: id, Data: snapshotEvent(id, "u-lane", "kill", history[:n])})
	}
	if err := c.pub.run(ctx, burst, 0, 1); err != nil {
		t.Fatal(err)
	}
	first := srv.WaitRequests(t, 1, time.Minute)[0]
	// One call for the whole burst, of the user's and the assistant's own
	// words only.
	wantSources := []int{1, 4, 5, 8, 9, 12, 13, 16}
	if !slices.Equal(first.Sources, wantSources[:len(first.Sources)]) || len(first.Sources) != 2*turns {
		t.Errorf("the call's sources %v, want %v: one call for the burst", first.Sources, wantSources)
	}
	if bytes.Contains(first.Body, []byte(marker)) {
		t.Errorf("the request carries a system prompt, tool output or tool-calling prose: %s", first.Body)
	}
	if first.Authorization != "Bearer "+modelKey {
		t.Errorf("Authorization %q", first.Authorization)
	}

	// SIGKILL in the middle of the call; another worker takes over.
	w.kill()
	start := time.Now()
	c.worker("w")
	deadline := time.Now().Add(4 * time.Minute)
	var s laneState
	for {
		s = readLane(t, c, "u-lane", "kill")
		if s.notes > 0 && !s.pending && s.notesCursor == s.cursor {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no notes %s after the kill: %+v", time.Since(start), s)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("notes written %s after the kill (River rescued the job), state %+v", time.Since(start).Round(time.Second), s)
	reqs := srv.Requests()
	if len(reqs) != 2 || !slices.Equal(reqs[1].Sources, first.Sources) {
		t.Errorf("%d calls, want the killed one and its rerun over the same messages", len(reqs))
	}
	if s.notes != len(first.Sources) || s.calls != 1 || s.cursor != len(history)-1 {
		t.Errorf("state %+v: want %d notes written once, one call answered, cursor %d", s, len(first.Sources), len(history)-1)
	}
	var body []byte
	if err := c.pool.QueryRow(ctx, `SELECT body FROM recall_conversation WHERE user_id = 'u-lane' AND conversation_id = 'kill'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(fakemodel.NoteText(1))) {
		t.Errorf("the evidence lacks the notes: %s", body)
	}

	// A conversation deleted while its call is in flight.
	hold2, release2 := fakemodel.Hold(fakemodel.NoteEach)
	t.Cleanup(release2)
	srv.SetScript(hold2)
	deleted := laneTurns(marker, 2)
	if _, err := c.pub.publish(ctx, "del-1", snapshotEvent("del-1", "u-lane", "gone", deleted)); err != nil {
		t.Fatal(err)
	}
	srv.WaitRequests(t, 3, time.Minute)
	if _, err := c.pub.publish(ctx, "del-2", raw(map[string]any{"schema": checkpoint.Schema, "kind": "delete", "event_id": "del-2",
		"user_id": "u-lane", "conversation_id": "gone"})); err != nil {
		t.Fatal(err)
	}
	for {
		var n int
		if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM recall_conversation WHERE conversation_id = 'gone' AND deleted_at IS NOT NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the delete event was not applied")
		}
		time.Sleep(100 * time.Millisecond)
	}
	release2()
	for {
		var open int
		if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'recall_model_notes' AND state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d notes jobs still open", open)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var left int
	if err := c.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM recall_note WHERE conversation_id = 'gone')
    + (SELECT count(*) FROM recall_model_call WHERE conversation_id = 'gone')
    + (SELECT count(*) FROM recall_message WHERE conversation_id = 'gone')
    + (SELECT count(*) FROM recall_archive WHERE conversation_id = 'gone')`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d rows of the deleted conversation are left", left)
	}
	// Its user text, "budget line 1 … 200 EUR", is in no table but the
	// other conversation's.
	rows, err := scanDatabase(ctx, c.pool, "gone")
	if err != nil {
		t.Fatal(err)
	}
	for col, n := range rows {
		if col != "recall_conversation.conversation_id" && col != "river_job.args" {
			t.Errorf("%s holds %d rows naming the deleted conversation", col, n)
		}
	}

	// Nothing of a message, and never the key, in any log line.
	for _, secret := range []string{marker, modelKey, "budget line"} {
		if m := c.scanAll(t, secret); m.Logs != 0 {
			t.Errorf("%d log lines carry %q", m.Logs, secret)
		}
	}
}
