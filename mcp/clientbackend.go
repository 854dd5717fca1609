package mcp

import (
	"context"
	"errors"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/client"
)

// clientBackend reads through recall's HTTP API with one bearer token.
type clientBackend struct{ c *client.Client }

// NewClientBackend returns a Backend that reads through recall's HTTP API
// with c, the backend of `recall mcp`. It acts with c's token whoever the
// caller is: the API checks what the token may do, and its error answers
// become *api.Error.
func NewClientBackend(c *client.Client) Backend { return clientBackend{c} }

func (b clientBackend) Evidence(ctx context.Context, _ api.Caller, userID, conversationID string, q api.EvidenceQuery) (*Evidence, error) {
	ev, err := b.c.Evidence(ctx, userID, conversationID, &client.EvidenceOptions{
		MinCursor: q.MinCursor, Wait: q.Wait, MaxTokens: q.MaxTokens,
	})
	if err != nil {
		return nil, fromClient(err)
	}
	return fromClientEvidence(ev), nil
}

func (b clientBackend) Search(ctx context.Context, _ api.Caller, userID, conversationID, query string, maxTokens int) (*Evidence, error) {
	ev, err := b.c.Search(ctx, userID, conversationID, query, maxTokens)
	if err != nil {
		return nil, fromClient(err)
	}
	return fromClientEvidence(ev), nil
}

func (b clientBackend) Conversations(ctx context.Context, _ api.Caller, userID, after string, limit int) (*Conversations, error) {
	page, err := b.c.ListConversations(ctx, userID, &client.ListOptions{After: after, Limit: limit})
	if err != nil {
		return nil, fromClient(err)
	}
	out := &Conversations{Conversations: make([]Conversation, len(page.Conversations))}
	for i, s := range page.Conversations {
		out.Conversations[i] = Conversation(s)
	}
	if page.Next != "" {
		out.Next = &page.Next
	}
	return out, nil
}

func fromClientEvidence(ev *client.Evidence) *Evidence {
	out := &Evidence{
		UserID: ev.UserID, ConversationID: ev.ConversationID,
		Cursor: ev.Cursor, Version: ev.Version, MessageCount: ev.MessageCount, Lagging: ev.Lagging,
	}
	if ev.Message != nil {
		out.Message = &Message{Role: ev.Message.Role, Content: ev.Message.Content}
	}
	return out
}

// fromClient turns the API's error answer into the *api.Error it was.
func fromClient(err error) error {
	var ae *client.APIError
	if errors.As(err, &ae) {
		return &api.Error{Status: ae.Status, Code: ae.Code, Message: ae.Message}
	}
	return err
}
