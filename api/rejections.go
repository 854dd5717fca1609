package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Rejection is a recorded rejection of one of a conversation's events, as
// the API lists it: never with its payload.
type Rejection struct {
	ID             int64     `json:"id"`
	Reason         string    `json:"reason"`
	Detail         string    `json:"detail"`
	EventID        string    `json:"event_id"`
	UserID         string    `json:"user_id"`
	ConversationID string    `json:"conversation_id"`
	ReceivedAt     time.Time `json:"received_at"`
}

// RejectionLister lists the recorded rejections of a conversation, newest
// first: all of them, or those of one event when eventID is not "".
type RejectionLister interface {
	ConversationRejections(ctx context.Context, userID, conversationID, eventID string, limit int) ([]Rejection, error)
}

// Rejection listing bounds.
const (
	defaultRejectionLimit = 100
	maxRejectionLimit     = 1000
)

// getRejections answers GET …/rejections: what recall refused of the
// conversation's events, so that a publisher learns why an event did not
// change the evidence (a deleted conversation, a gap, a prefix mismatch).
func (h *Handler) getRejections(w http.ResponseWriter, r *http.Request) error {
	userID, conversationID, err := h.conversation(r)
	if err != nil {
		return err
	}
	if h.rejections == nil {
		return newError(http.StatusServiceUnavailable, CodeUnavailable, "this process does not list rejections")
	}
	q := r.URL.Query()
	limit := defaultRejectionLimit
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n <= 0 || n > maxRejectionLimit {
			return newError(http.StatusBadRequest, CodeInvalidLimit, "limit must be an integer from 1 to "+strconv.Itoa(maxRejectionLimit))
		}
		limit = n
	}
	rows, err := h.rejections.ConversationRejections(r.Context(), userID, conversationID, q.Get("event_id"), limit)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []Rejection{}
	}
	b, err := json.Marshal(struct {
		Rejections []Rejection `json:"rejections"`
	}{rows})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, append(b, '\n'))
	return nil
}
