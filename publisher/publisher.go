package publisher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/checkpoint"
)

// DefaultSubject is the subject recall's workers consume.
const DefaultSubject = checkpoint.Subject

// DefaultMaxConversations bounds the conversations append mode remembers.
const DefaultMaxConversations = 10_000

// DefaultAttempts is how many times an event is sent before Publish gives
// up.
const DefaultAttempts = 3

// Mode says what events carry.
type Mode int

const (
	// Snapshot sends the whole history in every event.
	Snapshot Mode = iota
	// Append sends only the messages added since the last event of the
	// conversation, when the publisher can prove the rest is unchanged.
	Append
)

func (m Mode) String() string {
	switch m {
	case Snapshot:
		return "snapshot"
	case Append:
		return "append"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ErrInvalidOption is returned by New for an option with a bad value.
var ErrInvalidOption = errors.New("publisher: invalid option")

// Option configures a Publisher.
type Option func(*Publisher) error

// WithSubject sets the subject events are published to. Defaults to
// recall.checkpoints.
func WithSubject(subject string) Option {
	return func(p *Publisher) error {
		if subject == "" || strings.ContainsAny(subject, " \t\r\n*>") || strings.HasPrefix(subject, ".") ||
			strings.HasSuffix(subject, ".") || strings.Contains(subject, "..") {
			return fmt.Errorf("%w: subject %q must be a NATS subject without wildcards or blanks", ErrInvalidOption, subject)
		}
		p.subject = subject
		return nil
	}
}

// WithEventIDs sets the generator of event ids. Each call must return a new,
// non-empty id of at most 1,024 bytes: JetStream drops an event whose id it
// has seen within its duplicate window. Defaults to 128 random bits in hex.
func WithEventIDs(next func() string) Option {
	return func(p *Publisher) error {
		if next == nil {
			return fmt.Errorf("%w: the event id generator must not be nil", ErrInvalidOption)
		}
		p.newID = next
		return nil
	}
}

// WithMode sets what events carry: Snapshot or Append. Defaults to Snapshot.
func WithMode(mode Mode) Option {
	return func(p *Publisher) error {
		if mode != Snapshot && mode != Append {
			return fmt.Errorf("%w: mode must be Snapshot or Append, not %d", ErrInvalidOption, int(mode))
		}
		p.mode = mode
		return nil
	}
}

// WithMaxConversations bounds how many conversations append mode remembers;
// the least recently published goes first, and its next event is a
// snapshot. Each costs about 100 bytes plus its ids. Defaults to 10,000.
func WithMaxConversations(n int) Option {
	return func(p *Publisher) error {
		if n < 1 {
			return fmt.Errorf("%w: max conversations must be at least 1, not %d", ErrInvalidOption, n)
		}
		p.maxKeys = n
		return nil
	}
}

// WithAttempts sets how many times an event is sent, with the same event id,
// while JetStream does not acknowledge it (a timeout, or no stream answers);
// it waits 250 ms, then twice as long each time. Defaults to 3.
func WithAttempts(n int) Option {
	return func(p *Publisher) error {
		if n < 1 {
			return fmt.Errorf("%w: attempts must be at least 1, not %d", ErrInvalidOption, n)
		}
		p.attempts = n
		return nil
	}
}

// Publisher publishes checkpoint events. It is safe for concurrent use.
type Publisher struct {
	js       jetstream.JetStream
	subject  string
	newID    func() string
	mode     Mode
	maxKeys  int
	attempts int
	tracer   trace.Tracer

	mu   sync.Mutex
	sent *simplelru.LRU[conversationKey, sentState] // append mode's memory; nil in snapshot mode
}

// New returns a Publisher that publishes through js.
func New(js jetstream.JetStream, opts ...Option) (*Publisher, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: a jetstream.JetStream is required", ErrInvalidOption)
	}
	p := &Publisher{
		js:       js,
		subject:  DefaultSubject,
		newID:    RandomEventID,
		mode:     Snapshot,
		maxKeys:  DefaultMaxConversations,
		attempts: DefaultAttempts,
		tracer:   defaultTracer(),
	}
	for _, opt := range opts {
		if err := opt(p); err != nil {
			return nil, err
		}
	}
	if p.mode == Append {
		p.sent = newLRU(p.maxKeys)
	}
	return p, nil
}

// RandomEventID returns 128 random bits as 32 lowercase hex characters, the
// default event id.
func RandomEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails.
	return hex.EncodeToString(b[:])
}

// Mode returns the publisher's mode.
func (p *Publisher) Mode() Mode { return p.mode }

// Subject returns the subject events are published to.
func (p *Publisher) Subject() string { return p.subject }

// Ack describes a published event.
type Ack struct {
	// EventID is the event's id, also its Nats-Msg-Id.
	EventID string
	// Kind is checkpoint.KindSnapshot (snapshots and appends) or
	// checkpoint.KindDelete.
	Kind string
	// Offset is the history index of the first message sent: 0 for a full
	// snapshot, k > 0 for an append.
	Offset int
	// Sent is how many messages the event carried.
	Sent int
	// Stream is the JetStream stream that stored the event.
	Stream string
	// Sequence is the event's sequence number in Stream.
	Sequence uint64
	// Duplicate reports that Stream already held an event with this id
	// (within its duplicate window) and did not store it again.
	Duplicate bool
}

// End returns the length of the history the event covered: Offset + Sent.
func (a *Ack) End() int { return a.Offset + a.Sent }

// Publish publishes the conversation's whole current history, append-only
// and ending with the newest user message, and waits for JetStream's ack.
// Each message is raw JSON in any of the three forms of the contract. In
// Snapshot mode the event carries every message; in Append mode it carries
// only the new ones when it can (see the package documentation).
//
// Publish checks the ids and decodes the new messages before sending; an
// error for a message wraps *checkpoint.DecodeError and nothing is sent.
func (p *Publisher) Publish(ctx context.Context, userID, conversationID string, history []json.RawMessage) (*Ack, error) {
	if err := validateKey(userID, conversationID); err != nil {
		return nil, err
	}
	if p.mode == Snapshot {
		ev, err := NewSnapshot(userID, conversationID, history)
		if err != nil {
			return nil, err
		}
		return p.publish(ctx, ev)
	}
	key := conversationKey{userID, conversationID}
	ev, next, err := p.appendEvent(key, history)
	if err != nil {
		return nil, err
	}
	ack, err := p.publish(ctx, ev)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		// The event may or may not be stored: the next one is a snapshot.
		p.sent.Remove(key)
		return nil, err
	}
	p.sent.Add(key, next)
	return ack, nil
}

// PublishMessages is Publish for a history in the flat form.
func (p *Publisher) PublishMessages(ctx context.Context, userID, conversationID string, history []Message) (*Ack, error) {
	raws, err := MarshalMessages(history)
	if err != nil {
		return nil, fmt.Errorf("publisher: %w", err)
	}
	return p.Publish(ctx, userID, conversationID, raws)
}

// Delete publishes a delete event for the conversation and waits for
// JetStream's ack. recall then deletes its evidence and every copy of its
// messages, and rejects later events for it as deleted.
func (p *Publisher) Delete(ctx context.Context, userID, conversationID string) (*Ack, error) {
	ev, err := NewDelete(userID, conversationID)
	if err != nil {
		return nil, err
	}
	return p.PublishEvent(ctx, ev)
}

// PublishEvent publishes ev as it is (filling EventID from the generator
// when empty) and waits for JetStream's ack. It checks the ids but not the
// messages: build events with NewSnapshot, NewAppend or NewDelete. Append
// mode forgets the conversation, so its next event is a snapshot.
func (p *Publisher) PublishEvent(ctx context.Context, ev *Event) (*Ack, error) {
	if err := validateKey(ev.UserID, ev.ConversationID); err != nil {
		return nil, err
	}
	p.Forget(ev.UserID, ev.ConversationID)
	return p.publish(ctx, ev)
}

// Forget drops what append mode remembers of a conversation: its next event
// is a full snapshot. Call it when another writer may have changed the
// conversation's lineage in recall.
func (p *Publisher) Forget(userID, conversationID string) {
	if p.sent == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent.Remove(conversationKey{userID, conversationID})
}

// publish sends ev and waits for the ack, retrying with the same id while
// the outcome is unknown and ctx allows. It sends the trace context of its
// publish span in the event's traceparent header.
func (p *Publisher) publish(ctx context.Context, ev *Event) (ack *Ack, err error) {
	out := *ev
	if out.EventID == "" {
		out.EventID = p.newID()
	}
	if out.Kind == "" {
		out.Kind = checkpoint.KindSnapshot
	}
	if out.EventID == "" || len(out.EventID) > checkpoint.MaxEventIDBytes {
		return nil, fmt.Errorf("publisher: event id must be 1 to %d bytes, not %d", checkpoint.MaxEventIDBytes, len(out.EventID))
	}
	data, err := out.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("publisher: encode event: %w", err)
	}
	ctx, span := p.startPublish(ctx, &out)
	defer func() { endPublish(span, ack, err) }()
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		msg := &nats.Msg{Subject: p.subject, Header: nats.Header{}, Data: data}
		msg.Header.Set(jetstream.MsgIDHeader, out.EventID)
		traceContext.Inject(ctx, HeaderCarrier(msg.Header))
		pa, err := p.js.PublishMsg(ctx, msg)
		if err == nil {
			return &Ack{
				EventID:   out.EventID,
				Kind:      out.Kind,
				Offset:    out.Offset,
				Sent:      len(out.Messages),
				Stream:    pa.Stream,
				Sequence:  pa.Sequence,
				Duplicate: pa.Duplicate,
			}, nil
		}
		if attempt >= p.attempts || !retryable(err) || ctx.Err() != nil {
			return nil, fmt.Errorf("publisher: publish event %s to %s: %w", out.EventID, p.subject, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("publisher: publish event %s to %s: %w", out.EventID, p.subject, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// retryable reports whether a publish error leaves the outcome open and may
// pass: the ack did not arrive in time, or no stream answered (a stream
// being created or electing a leader).
func retryable(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}
