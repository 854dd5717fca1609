package client

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// ErrExportIncomplete is wrapped by the error Export yields when the
// stream ends, or breaks, before its end line: the export was cut short and
// should be asked for again.
var ErrExportIncomplete = errors.New("client: the export ended without its end line")

// APIError is an error answer of the API. Its Code is stable and
// machine-readable ("unauthorized", "forbidden", "invalid_id",
// "too_many_waiters", …); for an answer that is not the API's error body,
// such as a proxy's, it is "http_" and the status ("http_502").
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the API's error code.
	Code string
	// Message says what is wrong and how to fix it, for people.
	Message string
	// RetryAfter is the Retry-After header of a 429 or 503 answer: how
	// long to wait before asking again; 0 when the answer had none.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	s := "recall answered " + strconv.Itoa(e.Status) + " " + e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// apiError reads the error answer resp, whose status is not a success.
func apiError(resp *http.Response) *APIError {
	e := &APIError{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode), Message: http.StatusText(resp.StatusCode)}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message = body.Error.Code, body.Error.Message
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return e
}

// retryAfter reads a Retry-After header: a number of seconds or an HTTP
// date. It returns 0 for a missing or unreadable one.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(n, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
