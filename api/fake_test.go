package api_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallhq/recall/evidence"
)

type key struct{ user, conv string }

// fakeSource is an in-memory Source and Notifier: set stores a record and
// wakes the key's subscribers, as a committed state change and the
// wake-up sent after it would.
type fakeSource struct {
	mu      sync.Mutex
	recs    map[key]evidence.Record
	subs    map[key]map[*chan struct{}]struct{}
	deleted []key
	err     error

	// searches counts the Search calls whose query was the one a test
	// expects (wantQuery), so that tests see the query arrive unchanged.
	wantQuery string
	searches  atomic.Int64

	reads atomic.Int64
	// afterRead, when set, runs after each read has taken its result, with
	// the read's number (1 for the first).
	afterRead func(n int64)
}

func newFakeSource() *fakeSource {
	return &fakeSource{recs: map[key]evidence.Record{}, subs: map[key]map[*chan struct{}]struct{}{}}
}

func (f *fakeSource) Evidence(ctx context.Context, userID, conversationID string) (evidence.Record, error) {
	n := f.reads.Add(1)
	if f.afterRead != nil {
		defer f.afterRead(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return evidence.Record{}, f.err
	}
	if rec, ok := f.recs[key{userID, conversationID}]; ok {
		return rec, nil
	}
	return evidence.Record{UserID: userID, ConversationID: conversationID}, nil
}

func (f *fakeSource) Search(ctx context.Context, userID, conversationID, query string) (evidence.Record, error) {
	if query == f.wantQuery {
		f.searches.Add(1)
	}
	return f.Evidence(ctx, userID, conversationID)
}

func (f *fakeSource) DeleteConversation(ctx context.Context, userID, conversationID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	k := key{userID, conversationID}
	delete(f.recs, k)
	f.deleted = append(f.deleted, k)
	f.wakeLocked(k)
	return nil
}

func (f *fakeSource) Subscribe(userID, conversationID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	k := key{userID, conversationID}
	f.mu.Lock()
	if f.subs[k] == nil {
		f.subs[k] = map[*chan struct{}]struct{}{}
	}
	f.subs[k][&ch] = struct{}{}
	f.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.subs[k], &ch)
			f.mu.Unlock()
		})
	}
}

// set stores rec and wakes its key's subscribers.
func (f *fakeSource) set(rec evidence.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := key{rec.UserID, rec.ConversationID}
	f.recs[k] = rec
	f.wakeLocked(k)
}

func (f *fakeSource) wakeLocked(k key) {
	for ch := range f.subs[k] {
		select {
		case *ch <- struct{}{}:
		default:
		}
	}
}

func (f *fakeSource) subscribers(user, conv string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs[key{user, conv}])
}

// waitSubscribers waits until the key has n subscribers.
func (f *fakeSource) waitSubscribers(t *testing.T, user, conv string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for f.subscribers(user, conv) != n {
		if time.Now().After(deadline) {
			t.Fatalf("key has %d subscribers, want %d", f.subscribers(user, conv), n)
		}
		time.Sleep(time.Millisecond)
	}
}
