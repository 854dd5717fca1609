package apiclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/redact"
)

// errAPIRetry marks read API answers worth asking again.
var errAPIRetry = errors.New("retry")

// waitPoll is the longest wait of one evidence request of WaitForEvidence:
// between them it asks whether the event was rejected.
const waitPoll = time.Second

// Client asks recall's read API for a conversation's evidence.
type Client struct {
	// BaseURL is the read API's address, http://127.0.0.1:8080 say.
	BaseURL string
	// Token is the bearer token sent with each request (see Sign). Defaults
	// to none.
	Token string
	// HTTP sends the requests. Defaults to a new http.Client.
	HTTP *http.Client
}

// WaitForEvidence polls the read API until the conversation's cursor
// reaches minCursor or timeout passes, and returns the evidence JSON. It
// stops at once with a *RejectedError when recall rejected the event
// eventID.
func (c *Client) WaitForEvidence(ctx context.Context, userID, conversationID string, minCursor int, eventID string, timeout time.Duration) ([]byte, error) {
	token := c.Token
	if minCursor < 0 {
		// No user message: nothing will be summarised; show the state.
		minCursor = 0
	}
	base := strings.TrimRight(c.BaseURL, "/")
	conversation := base + "/v1/users/" + url.PathEscape(userID) + "/conversations/" + url.PathEscape(conversationID)
	endpoint := conversation + "/evidence"
	deadline := time.Now().Add(timeout)
	client := cmp.Or(c.HTTP, &http.Client{})
	var lastErr error
	lastCursor := -1
	for {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			break
		}
		wait := min(waitPoll, remaining)
		secs := max(1, int(math.Ceil(wait.Seconds())))
		q := url.Values{"min_cursor": {strconv.Itoa(minCursor)}, "wait": {strconv.Itoa(secs) + "s"}}
		started := time.Now()
		body, cursor, err := getEvidence(ctx, client, endpoint+"?"+q.Encode(), token, time.Duration(secs)*time.Second+10*time.Second)
		switch {
		case err == nil && cursor >= minCursor:
			return body, nil
		case err == nil:
			lastCursor, lastErr = cursor, nil
		case errors.Is(err, errAPIRetry):
			lastErr = err
		default:
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := rejected(ctx, client, conversation, token, eventID); err != nil {
			return nil, err
		}
		// Do not spin on a server that answers at once.
		if elapsed := time.Since(started); elapsed < 250*time.Millisecond {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(250*time.Millisecond - elapsed):
			}
		}
	}
	if lastErr != nil && lastCursor < 0 {
		return nil, fmt.Errorf("the read API at %s did not answer within %s: %w", redact.ConnString(base), timeout, lastErr)
	}
	return nil, fmt.Errorf("the evidence cursor is %d, short of %d (the newest user message) after %s; is a worker running?", lastCursor, minCursor, timeout)
}

// rejected asks the API whether recall recorded a rejection of the event,
// and returns it as an error naming the reason. Any other answer (an older
// recall without the route, a network error) is not a rejection: the wait
// goes on.
func rejected(ctx context.Context, client *http.Client, conversation, token, eventID string) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, conversation+"/rejections?"+url.Values{"event_id": {eventID}}.Encode(), nil)
	if err != nil {
		return nil
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Rejections []struct {
			Reason string `json:"reason"`
			Detail string `json:"detail"`
		} `json:"rejections"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body) != nil || len(body.Rejections) == 0 {
		return nil
	}
	r := body.Rejections[0]
	return &RejectedError{EventID: eventID, Reason: r.Reason, Detail: r.Detail}
}

// RejectedError is an event recall rejected.
type RejectedError struct{ EventID, Reason, Detail string }

func (e *RejectedError) Error() string {
	msg := fmt.Sprintf("recall rejected event %s: reason=%s (%s)", e.EventID, e.Reason, e.Detail)
	if e.Reason == string(checkpoint.ReasonDeleted) {
		msg += "; the conversation was deleted, and a deleted conversation stays deleted: publish under a new conversation_id"
	}
	return msg
}

// getEvidence makes one read API request. Errors wrapping errAPIRetry are
// worth retrying (no answer, 5xx); others are final.
func getEvidence(ctx context.Context, client *http.Client, u, token string, timeout time.Duration) ([]byte, int, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("read API request: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		return nil, 0, fmt.Errorf("%w: %v", errAPIRetry, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: read the answer: %v", errAPIRetry, err)
	}
	if resp.StatusCode != http.StatusOK {
		var apiErr struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		detail := http.StatusText(resp.StatusCode)
		if json.Unmarshal(body, &apiErr) == nil && apiErr.Error.Code != "" {
			detail = apiErr.Error.Code + ": " + apiErr.Error.Message
		}
		switch {
		case resp.StatusCode == http.StatusUnauthorized:
			return nil, 0, fmt.Errorf("the read API answered %d (%s): give a token with --token or RECALL_TOKEN, or the secret with RECALL_JWT_SECRET", resp.StatusCode, detail)
		case resp.StatusCode >= 500:
			return nil, 0, fmt.Errorf("%w: the read API answered %d (%s)", errAPIRetry, resp.StatusCode, detail)
		}
		return nil, 0, fmt.Errorf("the read API answered %d (%s)", resp.StatusCode, detail)
	}
	var state struct {
		Cursor *int `json:"cursor"`
	}
	if err := json.Unmarshal(body, &state); err != nil || state.Cursor == nil {
		return nil, 0, errors.New("the read API's answer has no cursor: is --api-url recall's read API?")
	}
	return body, *state.Cursor, nil
}
