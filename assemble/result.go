package assemble

import (
	"encoding/json"
	"strconv"

	"github.com/recallhq/recall/checkpoint"
)

// Message is one message of the assembled view, in the flat form.
type Message struct {
	// Role is user, assistant, system or tool.
	Role checkpoint.Role
	// ID is the message id; "" for the system and evidence messages and
	// for input messages without one.
	ID string
	// Content is the content as JSON: a string, or a list of parts.
	Content json.RawMessage
	// ToolCalls are the calls of an assistant message, each with its
	// arguments as given.
	ToolCalls []checkpoint.ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
	// Tokens is the message's estimate.
	Tokens int
}

// AppendJSON appends m in the flat form:
// {"role","id","content","tool_calls","tool_call_id"}, with id, tool_calls
// and tool_call_id left out when empty. Tool arguments are written as
// given, byte for byte.
func (m *Message) AppendJSON(b []byte) []byte {
	b = append(b, `{"role":`...)
	b = checkpoint.AppendJSONString(b, string(m.Role))
	if m.ID != "" {
		b = append(b, `,"id":`...)
		b = checkpoint.AppendJSONString(b, m.ID)
	}
	b = append(b, `,"content":`...)
	b = append(b, m.Content...)
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":`...)
		b = appendToolCalls(b, m.ToolCalls)
	}
	if m.ToolCallID != "" || m.Role == checkpoint.RoleTool {
		b = append(b, `,"tool_call_id":`...)
		b = checkpoint.AppendJSONString(b, m.ToolCallID)
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler. encoding/json compacts what it
// returns; AppendJSON keeps tool arguments byte for byte.
func (m Message) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil), nil }

func appendToolCalls(b []byte, calls []checkpoint.ToolCall) []byte {
	b = append(b, '[')
	for i, c := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = checkpoint.AppendJSONString(b, c.ID)
		b = append(b, `,"name":`...)
		b = checkpoint.AppendJSONString(b, c.Name)
		b = append(b, `,"args":`...)
		if len(c.Args) == 0 {
			b = append(b, "{}"...)
		} else {
			b = append(b, c.Args...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// Tokens are the estimates of the assembled view's parts.
type Tokens struct {
	System   int `json:"system"`
	Tools    int `json:"tools"`
	Evidence int `json:"evidence"`
	History  int `json:"history"`
	Current  int `json:"current"`
	Total    int `json:"total"`
}

// EvidenceInfo says whether the evidence message was included and which
// state it came from.
type EvidenceInfo struct {
	Included bool  `json:"included"`
	Version  int64 `json:"version"`
	Cursor   int   `json:"cursor"`
	Lagging  bool  `json:"lagging"`
}

// Result is the assembled view of one model call.
type Result struct {
	// Messages are the system message (when there is system text), the
	// evidence message (when included), the kept history turns and the
	// current turn, in that order.
	Messages []Message
	// Tokens are the estimates; Tokens.Total ≤ Limit.
	Tokens Tokens
	// Limit is min(prompt, context_window − response_reserve −
	// safety_reserve).
	Limit int
	// DroppedTurns counts the history turns left out.
	DroppedTurns int
	// CompactedToolResults counts the kept tool results that were compacted.
	CompactedToolResults int
	// Evidence describes the evidence message.
	Evidence EvidenceInfo
}

// AppendJSON appends the endpoint's response body.
func (r *Result) AppendJSON(b []byte) []byte {
	b = append(b, `{"messages":[`...)
	for i := range r.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.Messages[i].AppendJSON(b)
	}
	t := &r.Tokens
	b = append(b, `],"estimated_tokens":{"system":`...)
	b = strconv.AppendInt(b, int64(t.System), 10)
	b = append(b, `,"tools":`...)
	b = strconv.AppendInt(b, int64(t.Tools), 10)
	b = append(b, `,"evidence":`...)
	b = strconv.AppendInt(b, int64(t.Evidence), 10)
	b = append(b, `,"history":`...)
	b = strconv.AppendInt(b, int64(t.History), 10)
	b = append(b, `,"current":`...)
	b = strconv.AppendInt(b, int64(t.Current), 10)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(t.Total), 10)
	b = append(b, `},"limit":`...)
	b = strconv.AppendInt(b, int64(r.Limit), 10)
	b = append(b, `,"dropped_turns":`...)
	b = strconv.AppendInt(b, int64(r.DroppedTurns), 10)
	b = append(b, `,"compacted_tool_results":`...)
	b = strconv.AppendInt(b, int64(r.CompactedToolResults), 10)
	b = append(b, `,"evidence":{"included":`...)
	b = strconv.AppendBool(b, r.Evidence.Included)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, r.Evidence.Version, 10)
	b = append(b, `,"cursor":`...)
	b = strconv.AppendInt(b, int64(r.Evidence.Cursor), 10)
	b = append(b, `,"lagging":`...)
	b = strconv.AppendBool(b, r.Evidence.Lagging)
	return append(b, "}}"...)
}

// MarshalJSON implements json.Marshaler (see Message.MarshalJSON).
func (r *Result) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }
