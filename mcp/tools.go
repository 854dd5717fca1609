package mcp

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallhq/recall/api"
)

// The tools' names.
const (
	ToolEvidence      = "recall_evidence"
	ToolSearch        = "recall_search"
	ToolConversations = "recall_conversations"
)

// userIDDescription describes every tool's user_id.
const userIDDescription = "the user whose conversations to read; leave it out to read your own (a user's token), " +
	"required with a token that acts for any user (recall:service)"

// evidenceInput is recall_evidence's arguments.
type evidenceInput struct {
	UserID         string `json:"user_id,omitempty"`
	ConversationID string `json:"conversation_id"`
	MinCursor      int    `json:"min_cursor,omitempty"`
	Wait           string `json:"wait,omitempty"`
	MaxTokens      int    `json:"max_tokens,omitempty"`
}

// searchInput is recall_search's arguments.
type searchInput struct {
	UserID         string `json:"user_id,omitempty"`
	ConversationID string `json:"conversation_id"`
	Query          string `json:"query"`
	MaxTokens      int    `json:"max_tokens,omitempty"`
}

// conversationsInput is recall_conversations' arguments.
type conversationsInput struct {
	UserID string `json:"user_id,omitempty"`
	After  string `json:"after,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// A property's schema, as inputSchema sets it.
type property struct {
	description string
	// minimum and maximum bound a number; minLength a string.
	minimum, maximum *float64
	minLength        *int
}

// inputSchema infers T's schema and sets each property's description and
// bounds, so that the SDK refuses a malformed argument before a backend
// sees it, whichever backend it is.
func inputSchema[T any](props map[string]property) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	for name, p := range props {
		ps, ok := s.Properties[name]
		if !ok {
			return nil, fmt.Errorf("mcp: the schema has no property %q", name)
		}
		ps.Description, ps.Minimum, ps.Maximum, ps.MinLength = p.description, p.minimum, p.maximum, p.minLength
	}
	return s, nil
}

// addTools adds the three tools.
func (s *Server) addTools() error {
	userID := property{description: userIDDescription, minLength: new(1)}
	conversationID := property{description: "the conversation: the agent's thread id under which its checkpoints are published", minLength: new(1)}
	maxTokens := property{description: "render the evidence message within this many estimated tokens (entries are left out by priority); leave it out for the stored rendering", minimum: new(1.0)}
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}

	evidenceSchema, err := inputSchema[evidenceInput](map[string]property{
		"user_id":         userID,
		"conversation_id": conversationID,
		"min_cursor": {description: "wait (up to wait) until the evidence covers this many leading messages: the index of the newest user message, " +
			"for evidence that does not lag a turn behind", minimum: new(0.0)},
		"wait":       {description: `how long to wait for min_cursor, such as "2s" or "500ms" (at most 30s); leave it out to answer at once`},
		"max_tokens": maxTokens,
	})
	if err != nil {
		return err
	}
	searchSchema, err := inputSchema[searchInput](map[string]property{
		"user_id":         userID,
		"conversation_id": conversationID,
		"query":           {description: "the text to select evidence for, such as the question about to be answered (at most 64 KiB)", minLength: new(1)},
		"max_tokens":      maxTokens,
	})
	if err != nil {
		return err
	}
	conversationsSchema, err := inputSchema[conversationsInput](map[string]property{
		"user_id": userID,
		"after":   {description: "the next of the previous page, for the page after it; leave it out for the first page", minLength: new(1)},
		"limit":   {description: "how many conversations a page holds, 1 to 1000 (default 100)", minimum: new(1.0), maximum: new(1000.0)},
	})
	if err != nil {
		return err
	}

	sdk.AddTool(s.srv, &sdk.Tool{
		Name:  ToolEvidence,
		Title: "Conversation evidence",
		Description: "The evidence recall keeps of a conversation's earlier turns (its constraints, decisions, open work and recent context, " +
			"as verbatim excerpts), as one message to put into the next prompt right after the system message, followed by the messages " +
			"from cursor on. It may lag one turn behind the newest checkpoint unless min_cursor and wait are given.",
		InputSchema: evidenceSchema,
		Annotations: readOnly,
	}, s.evidence)
	sdk.AddTool(s.srv, &sdk.Tool{
		Name:  ToolSearch,
		Title: "Search conversation evidence",
		Description: "The evidence of a conversation selected for a query (the text about to be answered) instead of its newest request: " +
			"one message to put into the prompt, with its cursor and version.",
		InputSchema: searchSchema,
		Annotations: readOnly,
	}, s.search)
	sdk.AddTool(s.srv, &sdk.Tool{
		Name:        ToolConversations,
		Title:       "Conversations",
		Description: "A page of the user's conversations that recall holds, ordered by conversation_id, with each one's cursor, version and last change.",
		InputSchema: conversationsSchema,
		Annotations: readOnly,
	}, s.conversations)
	return nil
}

func (s *Server) evidence(ctx context.Context, req *sdk.CallToolRequest, in evidenceInput) (*sdk.CallToolResult, *Evidence, error) {
	c := s.callerOf(req.Extra)
	ev, err := s.readEvidence(ctx, c, in)
	if err != nil {
		return nil, nil, s.toolError(ctx, ToolEvidence, err)
	}
	return nil, ev, nil
}

// readEvidence reads the evidence the arguments ask for; an unknown
// conversation is an error.
func (s *Server) readEvidence(ctx context.Context, c api.Caller, in evidenceInput) (*Evidence, error) {
	userID, err := userFor(c, in.UserID)
	if err != nil {
		return nil, err
	}
	q := api.EvidenceQuery{MinCursor: in.MinCursor, MaxTokens: in.MaxTokens}
	if in.Wait != "" {
		if q.Wait, err = api.ParseWait(in.Wait); err != nil {
			return nil, err
		}
	}
	ev, err := s.backend.Evidence(ctx, c, userID, in.ConversationID, q)
	if err != nil {
		return nil, err
	}
	if ev.unknown() {
		return nil, errUnknownConversation
	}
	return ev, nil
}

func (s *Server) search(ctx context.Context, req *sdk.CallToolRequest, in searchInput) (*sdk.CallToolResult, *Evidence, error) {
	c := s.callerOf(req.Extra)
	userID, err := userFor(c, in.UserID)
	if err != nil {
		return nil, nil, s.toolError(ctx, ToolSearch, err)
	}
	ev, err := s.backend.Search(ctx, c, userID, in.ConversationID, in.Query, in.MaxTokens)
	if err == nil && ev.unknown() {
		err = errUnknownConversation
	}
	if err != nil {
		return nil, nil, s.toolError(ctx, ToolSearch, err)
	}
	return nil, ev, nil
}

func (s *Server) conversations(ctx context.Context, req *sdk.CallToolRequest, in conversationsInput) (*sdk.CallToolResult, *Conversations, error) {
	c := s.callerOf(req.Extra)
	userID, err := userFor(c, in.UserID)
	if err != nil {
		return nil, nil, s.toolError(ctx, ToolConversations, err)
	}
	page, err := s.backend.Conversations(ctx, c, userID, in.After, in.Limit)
	if err != nil {
		return nil, nil, s.toolError(ctx, ToolConversations, err)
	}
	return nil, page, nil
}
