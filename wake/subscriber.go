package wake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/recallhq/recall/partition"
)

// DefaultPollInterval is how often a waiter is woken when no wake-up came:
// the most a lost wake-up delays it.
const DefaultPollInterval = time.Second

// flushTimeout bounds Start's wait for the server to register the
// subscription.
const flushTimeout = 2 * time.Second

// reconnectWakeSpread bounds the window over which the wake-ups after a
// reconnect are spread (1ms per subscribed key, at most this), so that the
// re-reads of many waiting keys do not reach Postgres at once.
const reconnectWakeSpread = time.Second

// Config configures a Subscriber.
type Config struct {
	// Subject is the partition's wake subject, the one its publishers send
	// to (SubjectFor the partition's stream). Defaults to none: NewSubscriber
	// refuses to run without it.
	Subject string
	// PollInterval is how often each waiter is woken when no wake-up came,
	// so that a lost one delays it by at most this; each wake costs one
	// read of the key however many wait on it. Defaults to
	// DefaultPollInterval (1s).
	PollInterval time.Duration
	// Logger receives operational logs; never message text. Defaults to
	// discarding.
	Logger *slog.Logger
}

// Subscriber fans the wake-ups of its partition out to in-process
// subscribers, and wakes each of them every PollInterval as well, so that
// a lost wake-up costs at most one poll. One NATS subscription serves every
// waiting key: subscribing costs no round trip. It implements api.Notifier.
type Subscriber struct {
	nc     *nats.Conn
	cfg    Config
	logger *slog.Logger

	mu   sync.Mutex
	subs map[string]map[*subscription]struct{} // by the key's token

	lifeMu sync.Mutex
	sub    *nats.Subscription
	status chan nats.Status
	done   chan struct{}
}

// NewSubscriber returns a Subscriber on nc. It listens from Start on; its
// waiters are polled from their Subscribe on.
func NewSubscriber(nc *nats.Conn, cfg *Config) (*Subscriber, error) {
	if nc == nil {
		return nil, errors.New("wake: NewSubscriber needs a NATS connection")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if err := validateSubject(c.Subject); err != nil {
		return nil, fmt.Errorf("%w (Config.Subject)", err)
	}
	if c.PollInterval < 0 {
		return nil, fmt.Errorf("wake: Config.PollInterval is %v: it must be positive, or 0 for the default %v", c.PollInterval, DefaultPollInterval)
	}
	return &Subscriber{nc: nc, cfg: c, logger: c.Logger, subs: make(map[string]map[*subscription]struct{})}, nil
}

// subscription is one waiter's: its channel, and the timer that polls it.
type subscription struct {
	ch    chan struct{}
	every time.Duration

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

// wake sends without blocking: a pending wake-up already says "re-read".
func (s *subscription) wake() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// poll is the timer's: it wakes the waiter and sets the next poll, unless
// the subscription has ended.
func (s *subscription) poll() {
	s.wake()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.timer.Reset(s.every)
	}
}

func (s *subscription) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.timer.Stop()
}

// Subscribe returns a channel that receives after each wake-up of the key,
// after every reconnection of the NATS connection, and every PollInterval
// in any case, and a function that ends the subscription. The channel has
// room for one wake-up and is never closed. Subscribing before Start is
// allowed: the waiter is polled until the Subscriber listens.
func (s *Subscriber) Subscribe(userID, conversationID string) (<-chan struct{}, func()) {
	sub := &subscription{ch: make(chan struct{}, 1), every: s.cfg.PollInterval}
	sub.mu.Lock()
	sub.timer = time.AfterFunc(s.cfg.PollInterval, sub.poll)
	sub.mu.Unlock()
	token := partition.Token(userID, conversationID)
	s.mu.Lock()
	set := s.subs[token]
	if set == nil {
		set = make(map[*subscription]struct{}, 1)
		s.subs[token] = set
	}
	set[sub] = struct{}{}
	s.mu.Unlock()
	var once sync.Once
	return sub.ch, func() {
		once.Do(func() {
			sub.stop()
			s.mu.Lock()
			defer s.mu.Unlock()
			if set := s.subs[token]; set != nil {
				delete(set, sub)
				if len(set) == 0 {
					delete(s.subs, token)
				}
			}
		})
	}
}

// Start subscribes to the partition's wake subject and returns once the
// server has registered the subscription, or, when NATS is not reachable
// yet, at once: nats.go subscribes when it connects, and the waiters are
// polled meanwhile. From then on every reconnection wakes every waiter,
// since wake-ups sent while the connection was away are lost.
func (s *Subscriber) Start(ctx context.Context) error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.sub != nil {
		return errors.New("wake: subscriber already started")
	}
	status := s.nc.StatusChanged(nats.CONNECTED)
	sub, err := s.nc.Subscribe(s.cfg.Subject+".*", s.dispatch)
	if err != nil {
		s.nc.RemoveStatusListener(status)
		return fmt.Errorf("wake: subscribe to %s.*: %w", s.cfg.Subject, err)
	}
	flushCtx, cancel := context.WithTimeout(ctx, flushTimeout)
	err = s.nc.FlushWithContext(flushCtx)
	cancel()
	if err != nil {
		s.logger.InfoContext(ctx, "wake: NATS has not confirmed the subscription yet; waiters poll until it does",
			slog.String("subject", s.cfg.Subject), slog.String("error", err.Error()))
	}
	s.sub, s.status, s.done = sub, status, make(chan struct{})
	go s.watch(status, s.done)
	s.wakeAll() // subscribed before we listened: they may have missed a change
	return nil
}

// Stop unsubscribes. The waiters' polls go on until they end their
// subscriptions. It returns ctx's error if the Subscriber has not stopped
// when ctx is done.
func (s *Subscriber) Stop(ctx context.Context) error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.sub == nil {
		return nil
	}
	err := s.sub.Unsubscribe()
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrBadSubscription) {
		err = nil // closed with its connection
	}
	s.nc.RemoveStatusListener(s.status)
	select {
	case <-s.done:
	case <-ctx.Done():
		return fmt.Errorf("wake: stop: %w", ctx.Err())
	}
	s.sub, s.status, s.done = nil, nil, nil
	if err != nil {
		return fmt.Errorf("wake: unsubscribe: %w", err)
	}
	return nil
}

// watch wakes every waiter after each reconnection, until status closes.
func (s *Subscriber) watch(status <-chan nats.Status, done chan struct{}) {
	defer close(done)
	for range status {
		s.logger.Info("wake: NATS reconnected; waking every waiter, since wake-ups may have been lost")
		s.wakeAllSpread()
	}
}

// dispatch wakes the subscribers of the key whose token ends msg's
// subject. The cursor in the body is not needed: a waiter reads the state.
func (s *Subscriber) dispatch(msg *nats.Msg) {
	token := msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs[token] {
		sub.wake()
	}
}

// wakeAllSpread wakes every subscriber at a random moment of a window that
// grows with the number of keys subscribed (1ms each, at most
// reconnectWakeSpread).
func (s *Subscriber) wakeAllSpread() {
	s.mu.Lock()
	defer s.mu.Unlock()
	window := min(reconnectWakeSpread, time.Duration(len(s.subs))*time.Millisecond)
	for _, set := range s.subs {
		for sub := range set {
			if window <= 0 {
				sub.wake()
				continue
			}
			time.AfterFunc(rand.N(window), sub.wake)
		}
	}
}

func (s *Subscriber) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, set := range s.subs {
		for sub := range set {
			sub.wake()
		}
	}
}
