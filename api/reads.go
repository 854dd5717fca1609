package api

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// routeMCP serves the Model Context Protocol (Config.MCP), every method.
const routeMCP = "/mcp"

// Reads are the reads of the evidence, search and listing routes, for a
// caller whose token the API verified: what a server of another protocol
// mounted on the API reads through, such as the MCP server at /mcp
// (Config.MCP). Each authorises the caller and checks its arguments as its
// route does, and fails with an *Error bearing the route's status and code.
// Like the routes, they never log ids or text.
type Reads struct{ h *Handler }

// EvidenceQuery are the optional parameters of Reads.Evidence, those of
// GET …/evidence.
type EvidenceQuery struct {
	// MinCursor, with Wait, waits until the cursor reaches it; the answer
	// says lagging when it did not in time. Defaults to 0: any state will
	// do.
	MinCursor int
	// Wait is how long to wait for MinCursor, at most Config.MaxWait.
	// Defaults to 0: answer at once.
	Wait time.Duration
	// MaxTokens renders the message within this many estimated tokens.
	// Defaults to 0: the stored rendering.
	MaxTokens int
}

// Evidence returns the conversation's evidence as GET …/evidence answers
// it: the response's JSON.
func (rd *Reads) Evidence(ctx context.Context, c Caller, userID, conversationID string, q EvidenceQuery) ([]byte, error) {
	if err := authorizeConversation(c, userID, conversationID); err != nil {
		return nil, err
	}
	switch {
	case q.MinCursor < 0:
		return nil, errInvalidMinCursor
	case q.MaxTokens < 0:
		return nil, errInvalidMaxTokens
	case q.Wait < 0:
		return nil, errNegativeWait
	}
	if err := rd.h.checkWait(q.Wait); err != nil {
		return nil, err
	}
	eq := evidenceQuery{minCursor: q.MinCursor, wait: q.Wait, maxTokens: q.MaxTokens}
	rec, err := rd.h.read(ctx, userID, conversationID, eq)
	if err != nil {
		return nil, err
	}
	return appendRecord(nil, rec, userID, conversationID, q.MaxTokens, rec.Cursor < q.MinCursor)
}

// Search returns the evidence selected for query as POST …/evidence/search
// answers it: the response's JSON. maxTokens, when positive, bounds the
// message; 0 leaves it unbounded.
func (rd *Reads) Search(ctx context.Context, c Caller, userID, conversationID, query string, maxTokens int) ([]byte, error) {
	if err := authorizeConversation(c, userID, conversationID); err != nil {
		return nil, err
	}
	if err := checkQuery(query); err != nil {
		return nil, err
	}
	if maxTokens < 0 {
		return nil, errInvalidMaxTokens
	}
	rec, err := rd.h.waiters.searchAtLeast(ctx, userID, conversationID, query, 0)
	if err != nil {
		return nil, err
	}
	return appendRecord(nil, rec, userID, conversationID, maxTokens, false)
}

// Conversations returns a page of the user's conversations as GET
// /v1/users/{user_id}/conversations answers it: up to limit (1 to 1,000;
// 0 for the route's default, 100) after the conversation id after ("" for
// the first page).
func (rd *Reads) Conversations(ctx context.Context, c Caller, userID, after string, limit int) (ConversationPage, error) {
	if err := authorize(c, userID); err != nil {
		return ConversationPage{}, err
	}
	if rd.h.users == nil {
		return ConversationPage{}, errNoUsers
	}
	if limit == 0 {
		limit = defaultConversationLimit
	}
	return rd.h.conversationPage(ctx, userID, after, limit)
}

// authorizeConversation is authorize, then checkConversationID.
func authorizeConversation(c Caller, userID, conversationID string) error {
	if err := authorize(c, userID); err != nil {
		return err
	}
	return checkConversationID(conversationID)
}

// callerKey is the context key of the verified Caller of a request the API
// passes on to Config.MCP's handler.
type callerKey struct{}

// CallerFrom returns the Caller the API verified for a request it passed on
// to Config.MCP's handler, and false for any other context.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// mountMCP serves the handler Config.MCP builds at /mcp, to requests whose
// bearer token verifies (with their Caller in the context); others get the
// API's 401.
func (h *Handler) mountMCP(build func(*Reads) (http.Handler, error)) error {
	next, err := build(&Reads{h: h})
	if err != nil {
		return fmt.Errorf("api: Config.MCP: %w", err)
	}
	if next == nil {
		return fmt.Errorf("api: Config.MCP returned no handler: return the MCP server's HTTP handler, or leave Config.MCP unset")
	}
	h.mux.Handle(routeMCP, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := h.authenticate(r)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	}))
	return nil
}
