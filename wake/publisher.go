package wake

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// Publisher sends the wake-ups of committed changes. It is safe for
// concurrent use.
type Publisher struct {
	nc      *nats.Conn
	subject string
	logger  *slog.Logger

	failures atomic.Int64
}

// NewPublisher returns a Publisher that sends to subject.TOKEN on nc (see
// SubjectFor). A nil logger discards.
func NewPublisher(nc *nats.Conn, subject string, logger *slog.Logger) (*Publisher, error) {
	if nc == nil {
		return nil, errors.New("wake: NewPublisher needs a NATS connection")
	}
	if err := validateSubject(subject); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Publisher{nc: nc, subject: subject, logger: logger}, nil
}

// Wake announces that the key's state changed and now stands at cursor
// (0 for a deletion). Call it after the change has committed: a waiter
// woken earlier would read the old state and wait again. It does not wait
// for the network (nats.go buffers the message, and keeps it while it
// reconnects), and a failure is logged, not returned: the waiters' poll
// covers a lost wake-up, so the change it announces never fails for it.
func (p *Publisher) Wake(ctx context.Context, userID, conversationID string, cursor int) {
	err := p.nc.Publish(keySubject(p.subject, userID, conversationID), strconv.AppendInt(nil, int64(cursor), 10))
	if err == nil {
		return
	}
	// The first failure and every thousandth after it: a closed
	// connection fails every call.
	if n := p.failures.Add(1); n == 1 || n%1000 == 0 {
		p.logger.WarnContext(ctx, "wake: a wake-up could not be sent; waiters find the change at their next poll",
			slog.Int64("failures", n), slog.String("error", err.Error()))
	}
}
