package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// ListenerApplicationName is the application_name of the listener's
// connection, so that it can be told apart in pg_stat_activity.
const ListenerApplicationName = "recall_listener"

// Listener timings.
const (
	listenerMinBackoff     = 100 * time.Millisecond
	listenerMaxBackoff     = 5 * time.Second
	listenerConnectTimeout = 10 * time.Second
	// listenerIdleCheck is how long the connection may stay silent before
	// the listener pings it, so that a silently dead connection is noticed.
	listenerIdleCheck   = 30 * time.Second
	listenerPingTimeout = 5 * time.Second
	// listenerWakeSpread bounds the window over which the wake-ups after a
	// reconnect are spread (1ms per subscribed key, at most this), so that
	// the re-reads of many waiting keys do not reach Postgres at once.
	listenerWakeSpread = time.Second
)

// NotifyChannel is the Postgres channel on which every state change is
// announced, with NotifyPayload as payload.
const NotifyChannel = "recall_state"

// Notification is the payload of a state change announcement. It carries
// the key and the new cursor, never message text.
type Notification struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	Cursor         int    `json:"cursor"`
}

// NotifyPayload encodes a Notification.
func NotifyPayload(userID, conversationID string, cursor int) string {
	b, _ := json.Marshal(Notification{UserID: userID, ConversationID: conversationID, Cursor: cursor})
	return string(b)
}

// Listener fans the state change announcements on NotifyChannel out to
// in-process subscribers. One Listener holds one dedicated connection,
// however many requests wait on it: subscribing costs no query.
//
// When the connection is lost the Listener reconnects with backoff and then
// wakes every subscriber, since announcements may have been missed while it
// was away. Listener implements api.Notifier.
type Listener struct {
	config *pgx.ConnConfig
	logger *slog.Logger

	mu   sync.Mutex
	subs map[listenKey]map[*subscription]struct{}

	connected atomic.Bool

	lifeMu sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

type listenKey struct{ userID, conversationID string }

type subscription struct{ ch chan struct{} }

// wake sends without blocking: a pending wake-up already says "re-read".
func (s *subscription) wake() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// NewListener returns a Listener for the database at connString (a URL or
// keyword/value string, as pgx.ParseConfig accepts). It connects on Start.
// A nil logger discards.
func NewListener(connString string, logger *slog.Logger) (*Listener, error) {
	config, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("store: listener: parse the database URL: %w", err)
	}
	config.RuntimeParams["application_name"] = ListenerApplicationName
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Listener{
		config: config,
		logger: logger,
		subs:   make(map[listenKey]map[*subscription]struct{}),
	}, nil
}

// Subscribe returns a channel that receives after each announced state
// change of the key, and after every (re)connection of the listener, and a
// function that ends the subscription. The channel has room for one
// wake-up and is never closed. Subscribing before Start is allowed.
func (l *Listener) Subscribe(userID, conversationID string) (<-chan struct{}, func()) {
	s := &subscription{ch: make(chan struct{}, 1)}
	k := listenKey{userID, conversationID}
	l.mu.Lock()
	set := l.subs[k]
	if set == nil {
		set = make(map[*subscription]struct{}, 1)
		l.subs[k] = set
	}
	set[s] = struct{}{}
	l.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if set := l.subs[k]; set != nil {
				delete(set, s)
				if len(set) == 0 {
					delete(l.subs, k)
				}
			}
		})
	}
}

// Connected reports whether the listener is connected and listening.
func (l *Listener) Connected() bool { return l.connected.Load() }

// Start connects and listens, and returns an error if it cannot. From then
// on it reconnects by itself until Stop is called or ctx is cancelled.
func (l *Listener) Start(ctx context.Context) error {
	l.lifeMu.Lock()
	defer l.lifeMu.Unlock()
	if l.cancel != nil {
		return errors.New("store: listener: already started")
	}
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	l.cancel, l.done = cancel, make(chan struct{})
	l.connected.Store(true)
	l.wakeAll() // subscribed before we listened: they may have missed a change
	go l.run(runCtx, conn, l.done)
	return nil
}

// Stop stops listening and closes the connection. It returns ctx's error if
// the listener has not stopped when ctx is done.
func (l *Listener) Stop(ctx context.Context) error {
	l.lifeMu.Lock()
	defer l.lifeMu.Unlock()
	if l.cancel == nil {
		return nil
	}
	l.cancel()
	select {
	case <-l.done:
		l.cancel, l.done = nil, nil
		return nil
	case <-ctx.Done():
		return fmt.Errorf("store: listener: stop: %w", ctx.Err())
	}
}

// connect opens the dedicated connection and runs LISTEN on it.
func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, listenerConnectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.config)
	if err != nil {
		return nil, fmt.Errorf("store: listener: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{NotifyChannel}.Sanitize()); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("store: listener: listen: %w", err)
	}
	return conn, nil
}

// run listens on conn until it fails, then reconnects, until ctx is done.
func (l *Listener) run(ctx context.Context, conn *pgx.Conn, done chan struct{}) {
	defer close(done)
	for {
		err := l.listen(ctx, conn)
		l.connected.Store(false)
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = conn.Close(closeCtx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		l.logger.WarnContext(ctx, "store: listener lost its connection; reconnecting", slog.String("error", err.Error()))
		if conn = l.reconnect(ctx); conn == nil {
			return
		}
		l.connected.Store(true)
		l.logger.InfoContext(ctx, "store: listener reconnected")
		l.wakeAllSpread() // announcements may have been missed meanwhile
	}
}

// reconnect retries with jittered exponential backoff until it connects
// (and returns the connection) or ctx is done (and returns nil).
func (l *Listener) reconnect(ctx context.Context) *pgx.Conn {
	backoff := listenerMinBackoff
	for attempt := 1; ; attempt++ {
		jittered := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(jittered):
		}
		conn, err := l.connect(ctx)
		if err == nil {
			return conn
		}
		if ctx.Err() != nil {
			return nil
		}
		l.logger.WarnContext(ctx, "store: listener cannot reconnect yet",
			slog.Int("attempt", attempt), slog.String("error", err.Error()))
		backoff = min(2*backoff, listenerMaxBackoff)
	}
}

// listen dispatches notifications until the connection fails or ctx is
// done. A connection silent for listenerIdleCheck is pinged.
func (l *Listener) listen(ctx context.Context, conn *pgx.Conn) error {
	for {
		waitCtx, cancel := context.WithTimeout(ctx, listenerIdleCheck)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		if n != nil {
			l.dispatch(n.Payload)
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, context.DeadlineExceeded) || conn.IsClosed() {
			return err
		}
		pingCtx, cancel := context.WithTimeout(ctx, listenerPingTimeout)
		err = conn.Ping(pingCtx)
		cancel()
		if err != nil {
			return fmt.Errorf("ping: %w", err)
		}
	}
}

// dispatch wakes the subscribers of the key a payload names. A payload that
// names no key wakes everyone, as a missed announcement would.
func (l *Listener) dispatch(payload string) {
	var n Notification
	if err := json.Unmarshal([]byte(payload), &n); err != nil || n.UserID == "" || n.ConversationID == "" {
		l.logger.Warn("store: listener: malformed announcement; waking every subscriber",
			slog.Int("payload_bytes", len(payload)))
		l.wakeAll()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.subs[listenKey{n.UserID, n.ConversationID}] {
		s.wake()
	}
}

// wakeAllSpread wakes every subscriber at a random moment of a window that
// grows with the number of keys subscribed (1ms each, at most
// listenerWakeSpread).
func (l *Listener) wakeAllSpread() {
	l.mu.Lock()
	defer l.mu.Unlock()
	window := min(listenerWakeSpread, time.Duration(len(l.subs))*time.Millisecond)
	for _, set := range l.subs {
		for s := range set {
			if window <= 0 {
				s.wake()
				continue
			}
			time.AfterFunc(rand.N(window), s.wake)
		}
	}
}

func (l *Listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, set := range l.subs {
		for s := range set {
			s.wake()
		}
	}
}
