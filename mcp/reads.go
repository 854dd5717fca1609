package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/recallhq/recall/api"
)

// readsBackend reads through the API's own reads, for verified callers. Its
// errors are all *api.Error, as the API would answer them: the store's
// failures never reach a client as they are.
type readsBackend struct{ r *api.Reads }

// NewReadsBackend returns a Backend over the API's own reads, which check
// that each request's verified caller may act for the user: the backend of
// the API's /mcp (api.Config.MCP hands r over).
func NewReadsBackend(r *api.Reads) Backend { return readsBackend{r} }

func (b readsBackend) Evidence(ctx context.Context, c api.Caller, userID, conversationID string, q api.EvidenceQuery) (*Evidence, error) {
	body, err := b.r.Evidence(ctx, c, userID, conversationID, q)
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	return decodeEvidence(body)
}

func (b readsBackend) Search(ctx context.Context, c api.Caller, userID, conversationID, query string, maxTokens int) (*Evidence, error) {
	body, err := b.r.Search(ctx, c, userID, conversationID, query, maxTokens)
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	return decodeEvidence(body)
}

func (b readsBackend) Conversations(ctx context.Context, c api.Caller, userID, after string, limit int) (*Conversations, error) {
	page, err := b.r.Conversations(ctx, c, userID, after, limit)
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	out := &Conversations{Conversations: make([]Conversation, len(page.Conversations)), Next: page.Next}
	for i, s := range page.Conversations {
		out.Conversations[i] = Conversation(s)
	}
	return out, nil
}

// decodeEvidence reads the fields the tools answer from the read API's
// evidence response.
func decodeEvidence(body []byte) (*Evidence, error) {
	var ev Evidence
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("mcp: decode the evidence response: %w", err)
	}
	return &ev, nil
}
