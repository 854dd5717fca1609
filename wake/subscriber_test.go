package wake_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/wake"
)

// never is a poll interval no test outlasts: only a wake-up or a reconnect
// wakes its waiters.
const never = time.Hour

const testSubject = "recall.wake.TEST"

// setup starts a NATS server and returns it with a started Subscriber on
// one connection and a Publisher on another, both to testSubject.
func setup(t *testing.T, poll time.Duration) (*natstest.Server, *wake.Subscriber, *wake.Publisher) {
	t.Helper()
	ns := natstest.Start(t)
	subNC, _ := natstest.Connect(t, ns.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	sub, err := wake.NewSubscriber(subNC, &wake.Config{Subject: testSubject, PollInterval: poll})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop(t.Context()) })
	pubNC, _ := natstest.Connect(t, ns.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	pub, err := wake.NewPublisher(pubNC, testSubject, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ns, sub, pub
}

// drain empties a subscription's channel (Start wakes every waiter once).
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

func woken(ch <-chan struct{}, within time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(within):
		return false
	}
}

// TestWakeUpWakesItsKeyOnly: a wake-up wakes every waiter of its key and
// none of another key, another user's key of the same conversation id, or
// another partition's subject.
func TestWakeUpWakesItsKeyOnly(t *testing.T) {
	t.Parallel()
	ns, sub, pub := setup(t, never)
	mine1, end1 := sub.Subscribe("u", "c")
	defer end1()
	mine2, end2 := sub.Subscribe("u", "c")
	defer end2()
	otherConv, end3 := sub.Subscribe("u", "c2")
	defer end3()
	otherUser, end4 := sub.Subscribe("v", "c")
	defer end4()

	otherNC, _ := natstest.Connect(t, ns.URL())
	otherPartition, err := wake.NewPublisher(otherNC, "recall.wake.OTHER", nil)
	if err != nil {
		t.Fatal(err)
	}
	otherPartition.Wake(t.Context(), "u", "c", 9)
	pub.Wake(t.Context(), "u", "c", 3)
	for i, ch := range []<-chan struct{}{mine1, mine2} {
		if !woken(ch, 5*time.Second) {
			t.Fatalf("waiter %d of the key was not woken", i)
		}
	}
	for name, ch := range map[string]<-chan struct{}{"another conversation": otherConv, "another user": otherUser} {
		if woken(ch, 300*time.Millisecond) {
			t.Errorf("the waiter of %s was woken", name)
		}
	}
	if woken(mine1, 300*time.Millisecond) {
		t.Error("another partition's wake-up, or one wake-up twice, woke the key again")
	}
}

// TestPollWithoutWakeUps: a waiter whose wake-ups never come (the
// Subscriber is not even started) is woken every poll interval, and no
// more once it has ended its subscription.
func TestPollWithoutWakeUps(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	nc, _ := natstest.Connect(t, ns.URL())
	const poll = 100 * time.Millisecond
	sub, err := wake.NewSubscriber(nc, &wake.Config{Subject: testSubject, PollInterval: poll})
	if err != nil {
		t.Fatal(err)
	}
	ch, end := sub.Subscribe("u", "c")
	start := time.Now()
	for i := range 3 {
		if !woken(ch, 5*time.Second) {
			t.Fatalf("poll %d never came", i)
		}
	}
	if took := time.Since(start); took < 3*poll-20*time.Millisecond {
		t.Errorf("three polls took %v, less than three intervals of %v", took, poll)
	}
	end()
	drain(ch)
	if woken(ch, 3*poll) {
		t.Error("polled after the subscription ended")
	}
	end() // idempotent
}

// TestReconnectWakesEveryWaiter: wake-ups sent while the connection is
// away are lost, so a reconnection wakes every waiter; the subscription is
// back too.
func TestReconnectWakesEveryWaiter(t *testing.T) {
	t.Parallel()
	ns, sub, pub := setup(t, never)
	a, endA := sub.Subscribe("u", "a")
	defer endA()
	b, endB := sub.Subscribe("u", "b")
	defer endB()
	drain(a)
	drain(b)
	ns.Restart()
	for name, ch := range map[string]<-chan struct{}{"a": a, "b": b} {
		if !woken(ch, 10*time.Second) {
			t.Fatalf("waiter %s was not woken by the reconnection", name)
		}
	}
	// The publisher reconnects too; its wake-ups reach the subscription,
	// which nats.go made again.
	deadline := time.Now().Add(10 * time.Second)
	for !woken(a, 100*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no wake-up reached the subscriber after the reconnection")
		}
		pub.Wake(t.Context(), "u", "a", 1)
	}
}

// TestStartStop: Start subscribes once; Stop unsubscribes and may be
// called again; waiters are still polled after Stop.
func TestStartStop(t *testing.T) {
	t.Parallel()
	_, sub, pub := setup(t, 200*time.Millisecond)
	if err := sub.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("second Start: %v, want already started", err)
	}
	if err := sub.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := sub.Stop(t.Context()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	ch, end := sub.Subscribe("u", "c")
	defer end()
	pub.Wake(t.Context(), "u", "c", 1)
	start := time.Now()
	if !woken(ch, 5*time.Second) {
		t.Fatal("a waiter of a stopped Subscriber was not polled")
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("woken after %v, before the poll: a stopped Subscriber still hears wake-ups", took)
	}
}

// TestConfigErrors: what NewSubscriber and NewPublisher refuse, each with
// how to fix it.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	nc, _ := natstest.Connect(t, ns.URL())
	tests := []struct {
		name    string
		cfg     *wake.Config
		wantErr string
	}{
		{"no subject", &wake.Config{}, "subject is empty"},
		{"wildcard", &wake.Config{Subject: "recall.wake.*"}, "not a literal NATS subject"},
		{"trailing dot", &wake.Config{Subject: "recall.wake."}, "not a literal NATS subject"},
		{"negative poll", &wake.Config{Subject: testSubject, PollInterval: -time.Second}, "PollInterval"},
		{"ok", &wake.Config{Subject: wake.SubjectFor("RECALL_CHECKPOINTS")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wake.NewSubscriber(nc, tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one that says %q", err, tt.wantErr)
			}
		})
	}
	if _, err := wake.NewSubscriber(nil, &wake.Config{Subject: testSubject}); err == nil {
		t.Error("NewSubscriber accepted no connection")
	}
	if _, err := wake.NewPublisher(nc, "recall.>", nil); err == nil {
		t.Error("NewPublisher accepted a wildcard subject")
	}
	if got := wake.SubjectFor("RECALL_P3"); got != "recall.wake.RECALL_P3" {
		t.Errorf("SubjectFor(RECALL_P3) = %q", got)
	}
}
