package api

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// conversation authorises the request and returns the key it names. Auth
// comes first: a client learns nothing about ids it may not use.
func (h *Handler) conversation(r *http.Request) (userID, conversationID string, err error) {
	if userID, err = h.user(r); err != nil {
		return "", "", err
	}
	conversationID = r.PathValue("conversation_id")
	if err := checkConversationID(conversationID); err != nil {
		return "", "", err
	}
	return userID, conversationID, nil
}

// checkConversationID answers 400 for a conversation id that cannot be one.
func checkConversationID(id string) error {
	if err := checkpoint.ValidateKey("conversation_id", id); err != nil {
		return newError(http.StatusBadRequest, CodeInvalidID, err.Error())
	}
	return nil
}

// evidenceQuery is the parsed query of GET …/evidence.
type evidenceQuery struct {
	maxTokens int // 0: the stored rendering
	minCursor int // 0: any state will do
	// minVersion is the last version the client saw: the answer is never
	// older (it matters with a read replica that lags). 0: any.
	minVersion int64
	wait       time.Duration // 0: answer at once
}

// The evidence query's parameter errors.
var (
	errInvalidMaxTokens = newError(http.StatusBadRequest, CodeInvalidMaxTokens, "max_tokens must be a positive integer")
	errInvalidMinCursor = newError(http.StatusBadRequest, CodeInvalidMinCursor, "min_cursor must be a non-negative integer")
	errNegativeWait     = newError(http.StatusBadRequest, CodeInvalidWait, "wait must not be negative")
)

func (h *Handler) parseEvidenceQuery(q url.Values) (evidenceQuery, error) {
	var eq evidenceQuery
	if q.Has("max_tokens") {
		n, err := strconv.Atoi(q.Get("max_tokens"))
		if err != nil || n <= 0 {
			return eq, errInvalidMaxTokens
		}
		eq.maxTokens = n
	}
	if q.Has("min_cursor") {
		n, err := strconv.Atoi(q.Get("min_cursor"))
		if err != nil || n < 0 {
			return eq, errInvalidMinCursor
		}
		eq.minCursor = n
	}
	var err error
	if eq.minVersion, err = parseMinVersion(q); err != nil {
		return eq, err
	}
	if q.Has("wait") {
		d, err := h.parseWait(q.Get("wait"))
		if err != nil {
			return eq, err
		}
		eq.wait = d
	}
	return eq, nil
}

// parseWait reads a wait and checks it against the longest allowed.
func (h *Handler) parseWait(s string) (time.Duration, error) {
	d, err := ParseWait(s)
	if err != nil {
		return 0, err
	}
	return d, h.checkWait(d)
}

// checkWait answers 400 for a wait longer than the longest allowed.
func (h *Handler) checkWait(d time.Duration) error {
	if d > h.maxWait {
		return newError(http.StatusBadRequest, CodeWaitTooLong, "wait may be at most "+h.maxWait.String())
	}
	return nil
}

// ParseWait reads a wait as the evidence and context routes do: a Go
// duration ("2s", "500ms") or a number of seconds ("2", "0.5"). It fails
// with an *Error (400, invalid_wait) for anything else or a negative wait;
// the longest wait allowed is the handler's to check.
func ParseWait(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(f) {
			return 0, newError(http.StatusBadRequest, CodeInvalidWait, `wait must be a duration such as "2s" or "500ms", or a number of seconds`)
		}
		switch limit := float64(math.MaxInt64) / float64(time.Second); {
		case f >= limit:
			d = math.MaxInt64 // too long, whatever the cap
		case f <= -limit:
			d = math.MinInt64
		default:
			d = time.Duration(f * float64(time.Second))
		}
	}
	if d < 0 {
		return 0, errNegativeWait
	}
	return d, nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// getEvidence answers GET …/evidence: one read, or a wait on the notifier
// with a read per state change.
func (h *Handler) getEvidence(w http.ResponseWriter, r *http.Request) error {
	userID, conversationID, err := h.conversation(r)
	if err != nil {
		return err
	}
	q, err := h.parseEvidenceQuery(r.URL.Query())
	if err != nil {
		return err
	}
	rec, err := h.read(r.Context(), userID, conversationID, q)
	if err != nil {
		return err
	}
	return writeRecord(w, rec, userID, conversationID, q.maxTokens, rec.Cursor < q.minCursor)
}

// writeRecord answers with rec as the evidence response, its message within
// maxTokens when that is positive.
func writeRecord(w http.ResponseWriter, rec evidence.Record, userID, conversationID string, maxTokens int, lagging bool) error {
	bp := bufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			bufPool.Put(bp)
		}
	}()
	b, err := appendRecord((*bp)[:0], rec, userID, conversationID, maxTokens, lagging)
	if err != nil {
		return err
	}
	*bp = b
	writeJSON(w, http.StatusOK, b)
	return nil
}

// appendRecord appends rec as the evidence response, its message within
// maxTokens when that is positive.
func appendRecord(b []byte, rec evidence.Record, userID, conversationID string, maxTokens int, lagging bool) ([]byte, error) {
	// The store keys the record; the response names what was asked for.
	rec.UserID, rec.ConversationID = userID, conversationID
	if maxTokens > 0 {
		return rec.AppendJSONWithin(b, maxTokens, lagging)
	}
	return rec.AppendJSON(b, lagging), nil
}

// read returns the key's record: one read with a deadline, or, with a
// min_cursor and a wait, a wait on the key's shared watch (see waiters).
func (h *Handler) read(ctx context.Context, userID, conversationID string, q evidenceQuery) (evidence.Record, error) {
	if q.wait <= 0 || q.minCursor <= 0 {
		return h.waiters.readAtLeast(ctx, userID, conversationID, floor{cursor: q.minCursor, version: q.minVersion})
	}
	return h.wait(ctx, waitKey{userID, conversationID}, q, h.drained)
}

// deleteConversation answers DELETE …: 204 once the conversation is gone.
func (h *Handler) deleteConversation(w http.ResponseWriter, r *http.Request) error {
	userID, conversationID, err := h.conversation(r)
	if err != nil {
		return err
	}
	if err := h.src.DeleteConversation(r.Context(), userID, conversationID); err != nil {
		return err
	}
	h.waiters.deleted(userID, conversationID)
	if h.waker != nil {
		h.waker.Wake(r.Context(), userID, conversationID, 0)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
	return nil
}
