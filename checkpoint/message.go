package checkpoint

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Role is a message's normalised role.
type Role string

// The roles recall knows. The aliases "human" and "ai" normalise to RoleUser
// and RoleAssistant.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// TypeChat is the channel type of conversation messages. Messages of any other
// type (thinking, status, todos, …) never become evidence.
const TypeChat = "chat"

// TypeHeld is the type a store gives a held message that cannot become
// evidence when it rebuilds it for the fold: only its role and id were
// kept, and the fold must not read it as conversation.
const TypeHeld = "held"

// Form names the wire form a message arrived in.
type Form uint8

const (
	// FormFlat is recall's own flat form: {"id","role","content",…}.
	FormFlat Form = iota
	// FormStored is LangChain's stored form: {"type":"human","data":{…}}.
	FormStored
	// FormConstructor is LangChain's serialised constructor form:
	// {"lc":1,"type":"constructor","id":[…,"HumanMessage"],"kwargs":{…}}.
	FormConstructor
)

func (f Form) String() string {
	switch f {
	case FormStored:
		return "langchain_stored"
	case FormConstructor:
		return "langchain_constructor"
	default:
		return "flat"
	}
}

// ToolCall is a normalised tool call: OpenAI's
// {"id","function":{"name","arguments"}} and LangChain's
// {"id","name","args","type"} both map to it.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Message is one checkpoint message, normalised from any of the three forms.
type Message struct {
	// Role is the normalised role.
	Role Role
	// ID is the message id, "" when the message had none.
	ID string
	// Type is the channel type, TypeChat when absent.
	Type string
	// Content is the content as a JSON list of parts (a string s became
	// [{"type":"text","text":s}]; "" and null became []).
	Content json.RawMessage
	// ToolCalls are the normalised entries of the message's tool_calls.
	ToolCalls []ToolCall
	// ToolCallID is the id of the call a tool message answers, "" if none.
	ToolCallID string
	// Artifact is the artifact as given, "null" when absent.
	Artifact json.RawMessage
	// Text is the message's text: the string content, or the text parts of a
	// part list joined with a newline.
	Text string
	// StringContent reports whether the content arrived as a JSON string
	// (Content is then the canonical one-part list built from it), so that
	// a message can be written back in the shape it came in.
	StringContent bool
	// HasToolCalls reports whether tool_calls, invalid_tool_calls or
	// additional_kwargs.tool_calls is non-empty.
	HasToolCalls bool
	// Form is the wire form the message arrived in.
	Form Form
}

// IsConversation reports whether the message is on the conversation channel.
func (m *Message) IsConversation() bool { return m.Type == TypeChat }

// Evidential reports whether the message's text may become evidence: user
// text, and assistant text of messages without tool calls, on the
// conversation channel.
func (m *Message) Evidential() bool {
	if !m.IsConversation() {
		return false
	}
	switch m.Role {
	case RoleUser:
		return true
	case RoleAssistant:
		return !m.HasToolCalls
	}
	return false
}

// IsRequest reports whether the message counts as a user request for the
// cursor rule (docs/protocol.md, Extraction): a user message, whatever its channel.
func (m *Message) IsRequest() bool { return m.Role == RoleUser }

// DecodeError describes a message that cannot be decoded. It names the field
// and the problem, never the message's text.
type DecodeError struct {
	// Index is the message's position in its event, -1 when unknown.
	Index int
	// Field is the offending field, "" for the message as a whole.
	Field string
	// Problem says what is wrong.
	Problem string
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	if e.Index >= 0 {
		fmt.Fprintf(&b, "message %d", e.Index)
	} else {
		b.WriteString("message")
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	return b.String()
}

var (
	jsonNull      = json.RawMessage("null")
	jsonEmptyList = json.RawMessage("[]")
	jsonEmptyObj  = json.RawMessage("{}")
)

// AppendJSONString appends s as a JSON string: only '"', '\\' and control
// characters are escaped, so that text keeps its bytes; invalid UTF-8 is
// written as U+FFFD.
func AppendJSONString(b []byte, s string) []byte { return appendCanonicalString(b, s) }

// textParts builds the canonical part list [{"text":s,"type":"text"}].
func textParts(s string) json.RawMessage {
	return appendTextParts(make([]byte, 0, len(s)+32), s)
}

// appendTextParts appends the canonical content of the string content s:
// [{"text":s,"type":"text"}], or [] when s is "".
func appendTextParts(b []byte, s string) []byte {
	if s == "" {
		return append(b, jsonEmptyList...)
	}
	b = append(b, `[{"text":`...)
	b = appendCanonicalString(b, s)
	return append(b, `,"type":"text"}]`...)
}
