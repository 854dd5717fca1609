package api

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recallhq/recall/evidence"
)

// DefaultMaxWaiters bounds the requests waiting at once in one process.
const DefaultMaxWaiters = 1000

// DefaultReadTimeout bounds one read of the store.
const DefaultReadTimeout = 5 * time.Second

// CodeTooManyWaiters answers a request that would wait while MaxWaiters
// requests wait already (429, with Retry-After).
const CodeTooManyWaiters = "too_many_waiters"

// retryAfter is what a 429 asks the client to wait before it retries.
const retryAfter = time.Second

// errTooManyWaiters is the 429 answer.
var errTooManyWaiters = newError(http.StatusTooManyRequests, CodeTooManyWaiters,
	"too many requests are waiting for a state change; retry after "+strconv.Itoa(int(retryAfter/time.Second))+"s, or ask without wait")

// waitKey names a conversation.
type waitKey struct{ userID, conversationID string }

// waiters bounds the waiting requests of a process and shares reads among
// them: the requests waiting on one key join one watch, which holds one
// subscription and reads the key once per wake-up, however many wait.
type waiters struct {
	src         Source
	notifier    Notifier
	readTimeout time.Duration
	max         int64
	n           atomic.Int64

	mu      sync.Mutex
	watches map[waitKey]*watch
}

func newWaiters(src Source, notifier Notifier, maxWaiters int, readTimeout time.Duration) *waiters {
	return &waiters{src: src, notifier: notifier, readTimeout: readTimeout, max: int64(maxWaiters),
		watches: make(map[waitKey]*watch)}
}

// acquire takes a waiting slot; it reports false when all are taken.
func (ws *waiters) acquire() bool {
	if ws.n.Add(1) > ws.max {
		ws.n.Add(-1)
		return false
	}
	return true
}

func (ws *waiters) release() { ws.n.Add(-1) }

// deleted has the watches of conversationID of userID (every conversation
// of the user when conversationID is empty) read again at once: a request
// waiting on a conversation just deleted answers as a read after the
// deletion does, not with what it read before.
func (ws *waiters) deleted(userID, conversationID string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for k, c := range ws.watches {
		if k.userID == userID && (conversationID == "" || k.conversationID == conversationID) {
			c.request(floor{})
		}
	}
}

// readOnce reads a key with the read deadline.
func (ws *waiters) readOnce(ctx context.Context, userID, conversationID string) (evidence.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, ws.readTimeout)
	defer cancel()
	return ws.src.Evidence(ctx, userID, conversationID)
}

// search reads a key's view for query with the read deadline.
func (ws *waiters) search(ctx context.Context, userID, conversationID, query string) (evidence.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, ws.readTimeout)
	defer cancel()
	return ws.src.Search(ctx, userID, conversationID, query)
}

// join returns the key's watch, starting it (subscribed before its first
// read) when no request waits on the key yet. Each join is ended by leave.
func (ws *waiters) join(k waitKey) *watch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	c := ws.watches[k]
	if c == nil {
		wake, unsubscribe := ws.notifier.Subscribe(k.userID, k.conversationID)
		ctx, cancel := context.WithCancel(context.Background())
		c = &watch{ws: ws, key: k, cancel: cancel, kick: make(chan struct{}, 1), changed: make(chan struct{})}
		ws.watches[k] = c
		go c.run(ctx, wake, unsubscribe)
	}
	c.refs++
	return c
}

// leave ends a join; the last one stops the watch and its subscription.
func (ws *waiters) leave(c *watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	c.refs--
	if c.refs == 0 {
		delete(ws.watches, c.key)
		c.cancel()
	}
}

// watch reads one key on behalf of every request waiting on it.
type watch struct {
	ws     *waiters
	key    waitKey
	refs   int // guarded by ws.mu
	cancel context.CancelFunc
	kick   chan struct{} // a joiner asks for a read

	mu      sync.Mutex
	floor   floor  // the newest floor a joiner asked for
	reading bool   // a read is in flight
	gen     uint64 // reads finished
	rec     evidence.Record
	err     error
	changed chan struct{} // closed when a read finishes
}

// run reads the key whenever the notifier wakes it or a joiner asks, until
// the last request leaves. Wake-ups that arrive during a read cause one
// more read, never one per waiter.
func (c *watch) run(ctx context.Context, wake <-chan struct{}, unsubscribe func()) {
	defer unsubscribe()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-c.kick:
		}
		c.mu.Lock()
		c.reading = true
		f := c.floor
		c.mu.Unlock()
		// A wake-up comes from the primary: with a read replica, a read
		// below the floor goes to the primary (see FloorReader).
		rec, err := c.ws.readAtLeast(ctx, c.key.userID, c.key.conversationID, f)
		c.mu.Lock()
		c.reading = false
		c.gen++
		c.rec, c.err = rec, err
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
}

// request asks for a read no older than f that starts after now and
// returns the number of reads after which its result is known.
func (c *watch) request(f floor) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.floor = c.floor.raise(f)
	need := c.gen + 1
	if c.reading {
		need++ // the read in flight started before the request
	}
	select {
	case c.kick <- struct{}{}:
	default: // a read is asked for already, and has not started
	}
	return need
}

// latest returns the newest read's result and the channel closed by the
// next one.
func (c *watch) latest() (gen uint64, rec evidence.Record, changed <-chan struct{}, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, c.rec, c.changed, c.err
}

// wait returns the key's record once its cursor reaches q.minCursor, or
// when the wait ends, the process drains or the client goes. It joins the
// key's watch, whose first read for it starts after it joined (so no change
// committed before is missed), and takes one of the process's waiting
// slots only when it has to wait: past MaxWaiters it answers 429.
func (h *Handler) wait(ctx context.Context, k waitKey, q evidenceQuery, drained <-chan struct{}) (evidence.Record, error) {
	c := h.waiters.join(k)
	defer h.waiters.leave(c)
	need := c.request(floor{cursor: q.minCursor, version: q.minVersion})
	timer := time.NewTimer(q.wait)
	defer timer.Stop()
	timeout := timer.C
	waiting, expired := false, false
	defer func() {
		if waiting {
			h.waiters.release()
			h.metrics.Waiters.Dec()
		}
	}()
	for {
		gen, rec, changed, err := c.latest()
		if gen >= need {
			if err != nil {
				return rec, err
			}
			if rec.Cursor >= q.minCursor || expired {
				return rec, nil
			}
			if !waiting {
				if !h.waiters.acquire() {
					return rec, errTooManyWaiters
				}
				waiting = true
				h.metrics.Waiters.Inc()
			}
		}
		select {
		case <-changed:
		case <-timeout:
			expired, timeout = true, nil
		case <-drained:
			expired, drained = true, nil
		case <-ctx.Done():
			return rec, ctx.Err()
		}
	}
}
