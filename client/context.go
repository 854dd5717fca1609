package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// ContextRequest is the body of Context: the checkpoint and how to bound
// the prompt built from it.
type ContextRequest struct {
	// Messages is the checkpoint, oldest first, in any of recall's message
	// forms; the newest user message is the current request. Required.
	Messages []json.RawMessage
	// System is the system message's text. Defaults to none.
	System string
	// Tools are the JSON schemas of the tools the call offers. Defaults to
	// none.
	Tools []json.RawMessage
	// Budget bounds the prompt. Defaults to nil: the server's defaults.
	Budget *Budget
	// Evidence is what to do with the conversation's evidence: JSON true
	// (include the stored evidence message), false (none), or an evidence
	// message or response to use as given. Defaults to nil: true.
	Evidence json.RawMessage
	// MinCursor and Wait wait for the evidence as EvidenceOptions's do.
	// Default to 0: the evidence as it is.
	MinCursor int
	Wait      time.Duration
}

// Budget bounds one model call, in estimated tokens. A nil field leaves
// the server's default; set one with new, as in new(4096).
type Budget struct {
	// ContextWindow is the model's context window. Defaults to 32,768.
	ContextWindow *int `json:"context_window,omitempty"`
	// Prompt caps the prompt whatever the window. Defaults to 16,000.
	Prompt *int `json:"prompt,omitempty"`
	// ResponseReserve is kept free for the answer. Defaults to 4,096.
	ResponseReserve *int `json:"response_reserve,omitempty"`
	// SafetyReserve is kept free for the estimate's error. Defaults to
	// 2,048.
	SafetyReserve *int `json:"safety_reserve,omitempty"`
	// ToolResultTokens is the limit above which a tool result is
	// compacted, at least 64. Defaults to 2,000.
	ToolResultTokens *int `json:"tool_result_tokens,omitempty"`
	// ImageTokens is charged for each image or other non-text part.
	// Defaults to 1,000.
	ImageTokens *int `json:"image_tokens,omitempty"`
}

// ContextResponse is the assembled prompt of the next model call.
type ContextResponse struct {
	// Messages are the prompt's messages in the flat form
	// ({"role","content",…}): the system message, the evidence message,
	// whole turns of history and the current request.
	Messages             []json.RawMessage `json:"messages"`
	EstimatedTokens      ContextTokens     `json:"estimated_tokens"`
	Limit                int               `json:"limit"`
	DroppedTurns         int               `json:"dropped_turns"`
	CompactedToolResults int               `json:"compacted_tool_results"`
	Evidence             ContextEvidence   `json:"evidence"`
}

// ContextTokens are the estimated tokens of each part of the prompt.
type ContextTokens struct {
	System   int `json:"system"`
	Tools    int `json:"tools"`
	Evidence int `json:"evidence"`
	History  int `json:"history"`
	Current  int `json:"current"`
	Total    int `json:"total"`
}

// ContextEvidence says which evidence went into the prompt.
type ContextEvidence struct {
	Included bool  `json:"included"`
	Version  int64 `json:"version"`
	Cursor   int   `json:"cursor"`
	// Lagging is true when MinCursor was asked for and the evidence's
	// cursor had not reached it by the deadline.
	Lagging bool `json:"lagging"`
}

// Context assembles the bounded prompt of the next model call from the
// checkpoint and the conversation's evidence (POST …/context). It changes
// nothing that is stored. A request that cannot fit its budget is an
// *APIError with status 422 (budget_too_small, cannot_compact).
func (c *Client) Context(ctx context.Context, userID, conversationID string, req *ContextRequest) (*ContextResponse, error) {
	path, err := conversationPath(userID, conversationID)
	if err != nil {
		return nil, err
	}
	if req == nil {
		req = &ContextRequest{}
	}
	body := struct {
		Messages  []json.RawMessage `json:"messages,omitempty"` // absent: the server says it is required
		System    string            `json:"system,omitempty"`
		Tools     []json.RawMessage `json:"tools,omitempty"`
		Budget    *Budget           `json:"budget,omitempty"`
		Evidence  json.RawMessage   `json:"evidence,omitempty"`
		MinCursor int               `json:"min_cursor,omitempty"`
		Wait      string            `json:"wait,omitempty"`
	}{Messages: req.Messages, System: req.System, Tools: req.Tools, Budget: req.Budget, Evidence: req.Evidence, MinCursor: req.MinCursor}
	if req.Wait > 0 {
		body.Wait = req.Wait.String()
	}
	var res ContextResponse
	if err := c.do(ctx, http.MethodPost, path+"/context", nil, &body, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
