package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/recallhq/recall/checkpoint"
)

// Publisher publishes a checkpoint event to the stream the workers consume.
// The wiring implements it over JetStream; the handler knows nothing of
// NATS.
type Publisher interface {
	// Publish stores data on the stream with eventID as its deduplication
	// id (Nats-Msg-Id) and returns once the stream has acknowledged it:
	// the event's stream sequence, and whether the stream already held an
	// event with that id and did not store it again.
	Publish(ctx context.Context, eventID string, data []byte) (seq uint64, duplicate bool, err error)
}

// ErrNoStream is what a Publisher returns (wrapped) when no stream takes
// the subject: no worker has created it yet.
var ErrNoStream = errors.New("no stream takes the checkpoint subject")

// DefaultPublishTimeout bounds the wait for the stream's ack.
const DefaultPublishTimeout = 10 * time.Second

// ingestResponse is the body of a 202 answer to POST /v1/checkpoints.
func ingestResponse(seq uint64, duplicate bool) []byte {
	b := append([]byte(`{"stream_seq":`), strconv.FormatUint(seq, 10)...)
	b = append(b, `,"duplicate":`...)
	b = strconv.AppendBool(b, duplicate)
	return append(b, "}\n"...)
}

// postCheckpoint answers POST /v1/checkpoints: the event is checked as the
// worker checks it, published with its event_id as the deduplication id,
// and answered 202 only once the stream has acknowledged it. An event that
// the worker would reject is answered at once with the reason as the error
// code and never reaches the stream.
func (h *Handler) postCheckpoint(w http.ResponseWriter, r *http.Request) error {
	p, err := h.authenticate(r)
	if err != nil {
		return err
	}
	if h.publisher == nil {
		return newError(http.StatusServiceUnavailable, CodeUnavailable, "this process does not publish events: send them to a recall api or run process")
	}
	limits := h.limits
	// One byte more than the limit tells an oversized body from one that
	// fits exactly.
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(limits.MaxEventBytes)+1))
	if err != nil {
		if r.Context().Err() != nil {
			return r.Context().Err()
		}
		return newError(http.StatusBadRequest, CodeInvalidBody, "cannot read the request body")
	}
	ev, err := checkpoint.ParseEvent(data, limits)
	if err != nil {
		var rej *checkpoint.RejectError
		if !errors.As(err, &rej) {
			return err
		}
		status := http.StatusBadRequest
		if rej.Reason == checkpoint.ReasonTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		return newError(status, string(rej.Reason), rej.Detail)
	}
	if !p.MayActFor(ev.UserID) {
		return newError(http.StatusForbidden, CodeForbidden,
			"the token may publish only for the user named by its sub claim (or needs the "+ServiceScope+" scope)")
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.publishTimeout)
	defer cancel()
	seq, dup, err := h.publisher.Publish(ctx, ev.EventID, data)
	switch {
	case err == nil:
	case errors.Is(err, ErrNoStream):
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "no stream takes checkpoint events yet: start a recall worker, which creates it; the event was not stored", Err: err}
	case r.Context().Err() != nil:
		return r.Context().Err()
	default:
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "the stream did not acknowledge the event; it may not be stored: retry with the same event_id", Err: err}
	}
	writeJSON(w, http.StatusAccepted, ingestResponse(seq, dup))
	return nil
}
