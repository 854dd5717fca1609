package publisher

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/recallhq/recall/checkpoint"
)

// Message is one message in recall's flat form, for callers that do not
// hold their history as JSON already. Content is a string; a list of content
// parts (or a LangChain form) is passed as raw JSON to [Publisher.Publish].
type Message struct {
	// ID is the message id, recorded with the evidence it yields.
	ID string `json:"id,omitempty"`
	// Role is user, assistant, system or tool (aliases human and ai).
	Role string `json:"role"`
	// Content is the message text.
	Content string `json:"content"`
	// Type is the channel type: "" or "chat" for conversation; thinking,
	// status, todos, error and any other value never become evidence.
	Type string `json:"type,omitempty"`
	// ToolCalls are the tool calls of an assistant message. The text of an
	// assistant message with tool calls never becomes evidence.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the id of the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's or the speaker's name.
	Name string `json:"name,omitempty"`
	// Artifact is any JSON a tool message carries besides its content.
	Artifact json.RawMessage `json:"artifact,omitempty"`
}

// ToolCall is one tool call of an assistant [Message].
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args are the call's arguments as JSON; empty means {}.
	Args json.RawMessage `json:"args,omitempty"`
}

// MarshalMessages encodes messages as the raw JSON that
// [Publisher.Publish] takes.
func MarshalMessages(msgs []Message) ([]json.RawMessage, error) {
	raws := make([]json.RawMessage, len(msgs))
	for i := range msgs {
		b, err := marshal(&msgs[i])
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		raws[i] = b
	}
	return raws, nil
}

// Event is a checkpoint event (recall.checkpoint.v1) ready to publish. Build
// one with [NewSnapshot], [NewAppend] or [NewDelete], or fill it in yourself
// and send it with [Publisher.PublishEvent].
type Event struct {
	// Kind is checkpoint.KindSnapshot or checkpoint.KindDelete.
	Kind string
	// EventID is sent as event_id and as Nats-Msg-Id; PublishEvent fills
	// it from the event id generator when empty.
	EventID        string
	UserID         string
	ConversationID string
	// Offset is the history index of Messages[0]: 0 for a full snapshot,
	// k > 0 for an append.
	Offset int
	// PrefixDigest is the chain digest of the history's [0, Offset); it
	// must be set when Offset > 0 and is sent as null when nil.
	PrefixDigest *checkpoint.Digest
	// Messages are the messages from Offset on, as raw JSON in any of the
	// three forms. A delete event has none.
	Messages []json.RawMessage
}

// wireEvent is the JSON of an event. Messages is omitted only when nil, so
// that a snapshot of an empty history still carries "messages": [].
type wireEvent struct {
	Schema         string             `json:"schema"`
	Kind           string             `json:"kind"`
	EventID        string             `json:"event_id"`
	UserID         string             `json:"user_id"`
	ConversationID string             `json:"conversation_id"`
	Offset         int                `json:"offset"`
	PrefixDigest   *checkpoint.Digest `json:"prefix_digest"`
	Messages       []json.RawMessage  `json:"messages,omitzero"`
}

// MarshalJSON encodes the event as recall.checkpoint.v1 JSON.
func (e *Event) MarshalJSON() ([]byte, error) {
	w := wireEvent{
		Schema:         checkpoint.Schema,
		Kind:           e.Kind,
		EventID:        e.EventID,
		UserID:         e.UserID,
		ConversationID: e.ConversationID,
		Offset:         e.Offset,
		PrefixDigest:   e.PrefixDigest,
		Messages:       e.Messages,
	}
	if w.Kind == "" {
		w.Kind = checkpoint.KindSnapshot
	}
	if w.Kind == checkpoint.KindSnapshot && w.Messages == nil {
		w.Messages = []json.RawMessage{}
	}
	return marshal(&w)
}

// marshal encodes v without HTML escaping (recall reads the JSON, not a
// browser) and without the encoder's trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// NewSnapshot returns a snapshot event carrying the whole history. It checks
// the ids and decodes every message as recall will; an error wraps
// *checkpoint.DecodeError for a message that recall would reject.
func NewSnapshot(userID, conversationID string, history []json.RawMessage) (*Event, error) {
	if err := validateKey(userID, conversationID); err != nil {
		return nil, err
	}
	if _, err := decodeAll(history, 0); err != nil {
		return nil, err
	}
	return &Event{
		Kind:           checkpoint.KindSnapshot,
		UserID:         userID,
		ConversationID: conversationID,
		Messages:       nonNil(history),
	}, nil
}

// NewAppend returns an append event for history that tells recall it
// already holds history[:k]: offset k, prefix_digest c_k, and the messages
// history[k:]. k = 0 gives a snapshot. It decodes and digests every message.
func NewAppend(userID, conversationID string, history []json.RawMessage, k int) (*Event, error) {
	if err := validateKey(userID, conversationID); err != nil {
		return nil, err
	}
	if k < 0 || k > len(history) {
		return nil, fmt.Errorf("publisher: offset %d is outside the history of %d messages", k, len(history))
	}
	msgs, err := decodeAll(history, 0)
	if err != nil {
		return nil, err
	}
	ev := &Event{
		Kind:           checkpoint.KindSnapshot,
		UserID:         userID,
		ConversationID: conversationID,
		Offset:         k,
		Messages:       nonNil(history[k:]),
	}
	if k > 0 {
		d, err := checkpoint.PrefixDigest(msgs, k)
		if err != nil {
			return nil, fmt.Errorf("publisher: %w", err)
		}
		ev.PrefixDigest = &d
	}
	return ev, nil
}

// NewDelete returns a delete event: recall deletes the conversation's
// evidence and messages, and rejects later events for it.
func NewDelete(userID, conversationID string) (*Event, error) {
	if err := validateKey(userID, conversationID); err != nil {
		return nil, err
	}
	return &Event{Kind: checkpoint.KindDelete, UserID: userID, ConversationID: conversationID}, nil
}

func validateKey(userID, conversationID string) error {
	if err := checkpoint.ValidateKey("user_id", userID); err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	if err := checkpoint.ValidateKey("conversation_id", conversationID); err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	return nil
}

// decodeAll decodes raws, which sit at history index offset. Errors wrap
// *checkpoint.DecodeError with the message's history index; they name fields,
// never text.
func decodeAll(raws []json.RawMessage, offset int) ([]checkpoint.Message, error) {
	msgs := make([]checkpoint.Message, len(raws))
	for i, raw := range raws {
		m, err := checkpoint.DecodeMessage(raw)
		if err != nil {
			return nil, indexed(err, offset+i)
		}
		msgs[i] = m
	}
	return msgs, nil
}

// indexed sets the history index on a decode error.
func indexed(err error, index int) error {
	if de, ok := err.(*checkpoint.DecodeError); ok {
		cp := *de
		cp.Index = index
		return fmt.Errorf("publisher: %w", &cp)
	}
	return fmt.Errorf("publisher: message %d: %w", index, err)
}

func nonNil(raws []json.RawMessage) []json.RawMessage {
	if raws == nil {
		return []json.RawMessage{}
	}
	return raws
}
