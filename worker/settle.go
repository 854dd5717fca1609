package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
)

// settlement is how a message whose event the store has handled ends.
type settlement int

const (
	settleAck       settlement = iota // applied, or a no-op: acknowledged
	settleRetry                       // the store failed: redelivered after a backoff
	settleTerm                        // rejected with a recorded row: terminated
	settleGapWait                     // a gap younger than GapTimeout: redelivered once the gap may have closed
	settleGapReject                   // a gap as old as GapTimeout: recorded as a rejection, then terminated
)

// settle decides how a message ends from the store's answer (res, or err)
// and how long ago the event was published.
func settle(res store.Result, err error, age, gapTimeout time.Duration) settlement {
	switch {
	case err != nil:
		return settleRetry
	case res.Outcome == checkpoint.Rejected:
		return settleTerm
	case res.Outcome == checkpoint.Gap && age < gapTimeout:
		return settleGapWait
	case res.Outcome == checkpoint.Gap:
		return settleGapReject
	}
	return settleAck
}

// finish ends a message whose event the store has recorded (or failed to
// record, err); once an event's deletion has committed, it wakes the
// conversation's waiters first.
func (w *Worker) finish(ctx context.Context, p *pending, res store.Result, err error) {
	msg, meta, ev := p.msg, p.meta, p.ev
	age := time.Since(meta.Timestamp)
	switch settle(res, err, age, w.cfg.GapTimeout) {
	case settleRetry:
		p.attrs = append(p.attrs, slog.String("error", err.Error()))
		w.nak(msg, meta)
		p.outcome = checkpoint.Retried
	case settleTerm:
		p.attrs = append(p.attrs, slog.String("detail", res.Detail))
		w.term(msg, res.Reason)
		p.outcome, p.reason = checkpoint.Rejected, res.Reason
	case settleGapWait:
		_ = msg.NakWithDelay(min(backoff(meta.NumDelivered), w.cfg.GapTimeout-age+10*time.Millisecond))
		p.outcome = checkpoint.GapRetried
	case settleGapReject:
		p.outcome, p.reason = w.reject(ctx, msg, meta, store.Rejection{Reason: checkpoint.ReasonGap,
			Detail:  fmt.Sprintf("messages before offset %d never arrived within %s", ev.Offset, w.cfg.GapTimeout),
			EventID: ev.EventID, UserID: ev.UserID, ConversationID: ev.ConversationID,
			Stream: meta.Stream, StreamCreated: p.smeta.StreamCreated, StreamSeq: meta.Sequence.Stream, Payload: p.smeta.Payload}, &p.attrs)
	default:
		if res.Outcome == checkpoint.Deleted && w.cfg.Waker != nil {
			w.cfg.Waker.Wake(ctx, ev.UserID, ev.ConversationID, 0)
		}
		if err := msg.Ack(); err != nil {
			p.attrs = append(p.attrs, slog.String("error", err.Error()))
		}
		p.outcome = res.Outcome
	}
}

// record deletes an ended message from a stream that keeps it, counts it
// and logs it.
func (w *Worker) record(ctx context.Context, p *pending) {
	outcome, reason, attrs := p.outcome, p.reason, p.attrs
	if w.deleteHandled && outcome != checkpoint.Retried && outcome != checkpoint.GapRetried {
		w.deleteFromStream(ctx, p.meta.Sequence.Stream, &attrs)
	}
	if w.cfg.Metrics != nil {
		w.cfg.Metrics.Events.WithLabelValues(outcome.String(), string(reason)).Inc()
		w.cfg.Metrics.IngestSeconds.Observe(time.Since(p.start).Seconds())
	}
	level := slog.LevelDebug
	if outcome == checkpoint.Rejected || outcome == checkpoint.Retried {
		level = slog.LevelWarn
	}
	attrs = append(attrs, slog.String("outcome", outcome.String()))
	if reason != "" {
		attrs = append(attrs, slog.String("reason", string(reason)))
	}
	w.logger.LogAttrs(ctx, level, "event", attrs...)
}

// reject records a rejection, then terminates the message. When the record
// cannot be written the message is nak'd, so it is never dropped unrecorded.
func (w *Worker) reject(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, r store.Rejection, attrs *[]slog.Attr) (checkpoint.Outcome, checkpoint.Reason) {
	*attrs = append(*attrs, slog.String("detail", r.Detail))
	if err := w.ing.Reject(ctx, r); err != nil {
		*attrs = append(*attrs, slog.String("error", err.Error()))
		w.nak(msg, meta)
		return checkpoint.Retried, ""
	}
	w.term(msg, r.Reason)
	return checkpoint.Rejected, r.Reason
}

// keyAttrs are the log attributes naming an event and its conversation. An
// id no event may have (too long, not UTF-8, holding a NUL: the ids of an
// event that failed to parse are whatever it held, message text included)
// is logged as "(invalid)".
func keyAttrs(eventID, userID, conversationID string) []slog.Attr {
	return []slog.Attr{
		slog.String("event_id", loggableID(eventID, checkpoint.MaxEventIDBytes)),
		slog.String("user_id", loggableID(userID, checkpoint.MaxKeyBytes)),
		slog.String("conversation_id", loggableID(conversationID, checkpoint.MaxKeyBytes)),
	}
}

// loggableID returns id when an event may carry it (or it is empty), else
// "(invalid)".
func loggableID(id string, maxBytes int) string {
	if len(id) > maxBytes || !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0 {
		return "(invalid)"
	}
	return id
}

func (w *Worker) term(msg jetstream.Msg, reason checkpoint.Reason) {
	if w.termReason {
		_ = msg.TermWithReason(string(reason))
		return
	}
	_ = msg.Term()
}

func (w *Worker) nak(msg jetstream.Msg, meta *jetstream.MsgMetadata) {
	_ = msg.NakWithDelay(backoff(meta.NumDelivered))
}

// backoff is the redelivery delay after the n-th delivery: 250ms doubling
// to at most 5s.
func backoff(n uint64) time.Duration {
	n = max(n, 1)
	d := 250 * time.Millisecond << min(n-1, 5)
	return min(d, 5*time.Second)
}
