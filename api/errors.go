package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/recallhq/recall/assemble"
)

// Error codes of the error body {"error":{"code","message"}}.
const (
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeInvalidID        = "invalid_id"
	CodeInvalidMaxTokens = "invalid_max_tokens"
	CodeInvalidMinCursor = "invalid_min_cursor"
	CodeInvalidWait      = "invalid_wait"
	CodeWaitTooLong      = "wait_too_long"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeNotReady         = "not_ready"
	CodeDraining         = "draining"
	CodeUnavailable      = "unavailable"
	CodeClientClosed     = "client_closed"
	CodeInternal         = "internal"
	CodeInvalidBody      = "invalid_body"
	CodeEmptyQuery       = "empty_query"
	CodeQueryTooLong     = "query_too_long"
	CodeInvalidLimit     = "invalid_limit"
	// CodeInvalidAfter answers a listing's after that is no conversation id.
	CodeInvalidAfter = "invalid_after"
	// CodeTooLarge answers a context request body over 16 MiB (413).
	CodeTooLarge = "too_large"
	// The context endpoint's codes, from package assemble: 422 for a
	// request that cannot be assembled within its budget, 400 for the rest.
	CodeBudgetTooSmall  = assemble.CodeBudgetTooSmall
	CodeCannotCompact   = assemble.CodeCannotCompact
	CodeInvalidBudget   = assemble.CodeInvalidBudget
	CodeInvalidMessages = assemble.CodeInvalidMessages
	CodeNoUserMessage   = assemble.CodeNoUserMessage
	CodeInvalidRequest  = assemble.CodeInvalidRequest
)

// statusClientClosed is recorded (never sent: the client is gone) when a
// request ends because its client disconnected.
const statusClientClosed = 499

// Error is an error with the status and body the API answers it with.
// Message is shown to the client: it never quotes ids or message text.
type Error struct {
	Status  int
	Code    string
	Message string
	// Err is the cause, logged for 5xx answers and never shown.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

func newError(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// toStatus maps any error to the status, code and message the API answers
// it with. It is the only place that does.
func toStatus(err error) (status int, code, message string) {
	var e *Error
	var ae *assemble.Error
	switch {
	case errors.As(err, &e):
		return e.Status, e.Code, e.Message
	case errors.As(err, &ae):
		status = http.StatusBadRequest
		if ae.Unprocessable() {
			status = http.StatusUnprocessableEntity
		}
		message = ae.Message
		if ae.Field != "" {
			message = ae.Field + ": " + message
		}
		return status, ae.Code, message
	case errors.Is(err, context.Canceled):
		return statusClientClosed, CodeClientClosed, "the client closed the request"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, CodeUnavailable, "the store did not answer in time; retry"
	default:
		return http.StatusInternalServerError, CodeInternal, "internal error"
	}
}

// ErrorOf returns err as the *Error the API answers it with: err itself
// when it is one, else the status, code and message toStatus gives it,
// with err as the cause. For servers mounted on the API (Reads' callers),
// so that they answer as the routes do.
func ErrorOf(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	status, code, message := toStatus(err)
	return &Error{Status: status, Code: code, Message: message, Err: err}
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers err. Server errors are logged with the route, never
// with ids or message text.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code, message := toStatus(err)
	if status >= 500 {
		h.logger.ErrorContext(r.Context(), "api: request failed",
			slog.String("route", routeLabel(r)), slog.Int("status", status), slog.String("error", err.Error()))
	}
	if status == statusClientClosed {
		// Nobody is listening; the status is only recorded.
		if sw, ok := w.(*statusWriter); ok {
			sw.status = status
		}
		return
	}
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="recall"`)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	}
	writeErrorBody(w, status, code, message)
}

func writeErrorBody(w http.ResponseWriter, status int, code, message string) {
	var body errorBody
	body.Error.Code, body.Error.Message = code, message
	b, _ := json.Marshal(&body)
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
