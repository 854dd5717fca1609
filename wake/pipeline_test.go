package wake_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/testutil/natstest"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
	"github.com/recallhq/recall/wake"
)

// e2e is recall's pipeline (worker and extraction jobs, which send
// wake-ups) and its read API woken by a Subscriber, over a database and an
// in-process NATS server of the test's own.
type e2e struct {
	*pt.Bundle
	sub    *wake.Subscriber
	url    string
	secret []byte
}

// setupE2E starts the pipeline and an API whose Subscriber polls every
// poll; started says whether the Subscriber listens for wake-ups at all.
func setupE2E(t *testing.T, poll time.Duration, started bool) *e2e {
	t.Helper()
	b := pt.New(t)
	b.StartWorker(2)
	nc, _ := natstest.Connect(t, b.NATSURL)
	sub, err := wake.NewSubscriber(nc, &wake.Config{Subject: wake.SubjectFor(b.Stream), PollInterval: poll})
	pt.Must(t, err)
	if started {
		pt.Must(t, sub.Start(t.Context()))
		t.Cleanup(func() { _ = sub.Stop(t.Context()) })
	}
	secret := []byte("wake-test-secret-of-32-bytes-ok!")
	h, err := api.New(b.Store, &api.Config{JWTSecret: secret, Notifier: sub})
	pt.Must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.SetDraining()
		srv.Close()
	})
	return &e2e{Bundle: b, sub: sub, url: srv.URL, secret: secret}
}

// answer is a long-poll's answer and when it came.
type answer struct {
	Cursor  int  `json:"cursor"`
	Lagging bool `json:"lagging"`
	took    time.Duration
	err     error
}

// longPoll starts GET …/evidence?min_cursor=minCursor&wait=wait for the
// key and returns where its answer will arrive.
func (e *e2e) longPoll(t *testing.T, userID, conversationID string, minCursor int, wait time.Duration) <-chan answer {
	t.Helper()
	token, err := apiclient.Sign(e.secret, userID, time.Hour, nil)
	pt.Must(t, err)
	u := fmt.Sprintf("%s/v1/users/%s/conversations/%s/evidence?min_cursor=%d&wait=%s",
		e.url, url.PathEscape(userID), url.PathEscape(conversationID), minCursor, wait)
	out := make(chan answer, 1)
	go func() {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		var a answer
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %s", resp.Status)
			} else {
				err = json.NewDecoder(resp.Body).Decode(&a)
			}
		}
		a.took, a.err = time.Since(start), err
		out <- a
	}()
	return out
}

// conversation returns a history of n alternating user and assistant
// messages and the cursor its extraction reaches.
func conversation(t *testing.T, tag string, n int) ([]json.RawMessage, int) {
	var h []json.RawMessage
	for i := range n {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("%s%d", tag, i), "role": role, "content": fmt.Sprintf("we must keep point %d", i)})
		h = append(h, b)
	}
	return h, pt.Oracle(t, h).Cursor
}

// extracted publishes a conversation of three messages for the key and
// returns the cursor once its extraction has committed.
func (e *e2e) extracted(t *testing.T, userID, conversationID string) int {
	t.Helper()
	h, cursor := conversation(t, "m", 3)
	e.Publish("e1", pt.Event("e1", userID, conversationID, h))
	e.WaitCursor(userID, conversationID, cursor, 30*time.Second)
	return cursor
}

// settle lets a long-poll reach its wait before the change it waits for.
const settle = 300 * time.Millisecond

// TestWaiterWokenByWakeUp: with polls too rare to matter, a long-poll is
// answered with the new state as soon as the extraction's wake-up
// arrives, long before its wait ends.
func TestWaiterWokenByWakeUp(t *testing.T) {
	t.Parallel()
	e := setupE2E(t, never, true)
	h, cursor := conversation(t, "m", 5)
	const wait = 25 * time.Second
	got := e.longPoll(t, "u", "c", cursor, wait)
	time.Sleep(settle)
	e.Publish("e1", pt.Event("e1", "u", "c", h))
	a := <-got
	if a.err != nil || a.Lagging || a.Cursor < cursor {
		t.Fatalf("answer %+v, want cursor %d, not lagging", a, cursor)
	}
	if a.took > wait/2 {
		t.Errorf("answered after %v of a %v wait: not woken by the wake-up", a.took, wait)
	}
	t.Logf("answered after %v", a.took)
}

// TestLostWakeUpCostsOnePoll: a waiter that hears no wake-up at all (its
// Subscriber never subscribed) still gets the new state within a poll
// interval of the commit, well within its wait plus one poll.
func TestLostWakeUpCostsOnePoll(t *testing.T) {
	t.Parallel()
	const poll = 500 * time.Millisecond
	e := setupE2E(t, poll, false)
	h, cursor := conversation(t, "m", 5)
	const wait = 10 * time.Second
	got := e.longPoll(t, "u", "c", cursor, wait)
	time.Sleep(settle)
	start := time.Now()
	e.Publish("e1", pt.Event("e1", "u", "c", h))
	e.WaitCursor("u", "c", cursor, wait)
	committed := time.Since(start)
	a := <-got
	if a.err != nil || a.Lagging || a.Cursor < cursor {
		t.Fatalf("answer %+v, want cursor %d, not lagging", a, cursor)
	}
	if a.took > wait+poll {
		t.Errorf("answered after %v, more than the wait %v plus a poll %v", a.took, wait, poll)
	}
	// The commit was seen within committed of the publish; the answer
	// comes at most a poll (and a read) after it.
	if late := time.Since(start) - committed; late > poll+time.Second {
		t.Errorf("answered %v after the commit was seen, want at most a poll of %v (and a read)", late, poll)
	}
	t.Logf("commit seen after %v; answered after %v", committed, a.took)
}

// TestOtherConversationsDoNotWake: wake-ups of other conversations do not
// answer a waiter; it is answered at the end of its wait, honestly lagging,
// with its own conversation's state.
func TestOtherConversationsDoNotWake(t *testing.T) {
	t.Parallel()
	e := setupE2E(t, never, true)
	h, cursor := conversation(t, "m", 3)
	e.Publish("a1", pt.Event("a1", "u", "a", h))
	e.WaitCursor("u", "a", cursor, 30*time.Second)

	const wait = 3 * time.Second
	got := e.longPoll(t, "u", "a", cursor+100, wait)
	time.Sleep(settle)
	for i, conv := range []string{"b", "c", "d"} {
		other, otherCursor := conversation(t, conv, 3+2*i)
		id := "o-" + conv
		e.Publish(id, pt.Event(id, "u", conv, other))
		e.WaitCursor("u", conv, otherCursor, 30*time.Second)
	}
	a := <-got
	if a.err != nil || !a.Lagging || a.Cursor != cursor {
		t.Fatalf("answer %+v, want cursor %d, lagging", a, cursor)
	}
	if a.took < wait-100*time.Millisecond {
		t.Errorf("answered after %v, before its wait of %v ended", a.took, wait)
	}
}

// TestDeletionEventWakes: the worker wakes a key's waiters once an event's
// deletion of it has committed, so that none answers the deleted state
// when its wait ends.
func TestDeletionEventWakes(t *testing.T) {
	t.Parallel()
	e := setupE2E(t, never, true)
	e.extracted(t, "u", "c")
	ch, end := e.sub.Subscribe("u", "c")
	defer end()
	time.Sleep(settle) // the extraction's own wake-up may still be on its way
	drain(ch)
	del, _ := json.Marshal(map[string]any{"schema": checkpoint.Schema, "kind": checkpoint.KindDelete, "event_id": "e2", "user_id": "u", "conversation_id": "c"})
	e.Publish("e2", del)
	if !woken(ch, 30*time.Second) {
		t.Fatal("the deletion woke no waiter")
	}
	rec, err := e.Store.Evidence(t.Context(), "u", "c")
	if err != nil || rec.Cursor != 0 {
		t.Fatalf("after the wake-up the key reads cursor %d, %v; want the deletion committed (cursor 0)", rec.Cursor, err)
	}
}

// TestAPIDeletionAnswersWaiters: a conversation deleted through one API
// process is read again for the requests waiting on it there at once, and
// in another process as soon as the first one's wake-up arrives, with
// polls too rare to matter: none of them answers the deleted state when
// its wait ends.
func TestAPIDeletionAnswersWaiters(t *testing.T) {
	t.Parallel()
	e := setupE2E(t, never, true)
	cursor := e.extracted(t, "u", "c")

	// The process the deletion goes through: its waiters are read again
	// directly, and its publisher wakes the others'.
	nc, _ := natstest.Connect(t, e.NATSURL)
	sub, err := wake.NewSubscriber(nc, &wake.Config{Subject: wake.SubjectFor(e.Stream), PollInterval: never})
	pt.Must(t, err)
	pub, err := wake.NewPublisher(nc, wake.SubjectFor(e.Stream), nil)
	pt.Must(t, err)
	deleter, err := api.New(e.Store, &api.Config{JWTSecret: e.secret, Notifier: sub, Waker: pub})
	pt.Must(t, err)
	srv := httptest.NewServer(deleter)
	t.Cleanup(srv.Close)
	other := &e2e{Bundle: e.Bundle, url: srv.URL, secret: e.secret}

	const wait = 3 * time.Second
	here := other.longPoll(t, "u", "c", cursor+100, wait)
	there := e.longPoll(t, "u", "c", cursor+100, wait)
	time.Sleep(settle)
	token, err := apiclient.Sign(e.secret, "u", time.Hour, nil)
	pt.Must(t, err)
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/users/u/conversations/c", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	pt.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	for name, got := range map[string]<-chan answer{"the deleting process": here, "another process": there} {
		if a := <-got; a.err != nil || a.Cursor != 0 {
			t.Errorf("%s: a waiter answered cursor %d (%v) after the deletion, want the deleted key's (0)", name, a.Cursor, a.err)
		}
	}
}
