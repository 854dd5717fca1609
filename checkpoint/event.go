package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Schema is the only checkpoint schema recall accepts.
const Schema = "recall.checkpoint.v1"

// Subject is the NATS subject checkpoint events are published on and
// recall's workers consume by default.
const Subject = "recall.checkpoints"

// Event kinds.
const (
	KindSnapshot = "snapshot"
	KindDelete   = "delete"
)

// MaxKeyBytes bounds user_id and conversation_id.
const MaxKeyBytes = 256

// MaxEventIDBytes bounds an event_id.
const MaxEventIDBytes = 1024

// MaxEventDepth bounds how deeply an event's arrays and objects nest:
// encoding/json's own limit, which every decoder of the event shares. A
// deeper event is rejected as malformed, with a detail that says so.
const MaxEventDepth = 10_000

// Reason is why an event is rejected (docs/protocol.md, Rejections).
type Reason string

// The rejection reasons of the contract.
const (
	ReasonMalformed         Reason = "malformed"
	ReasonInvalid           Reason = "invalid"
	ReasonUnsupportedSchema Reason = "unsupported_schema"
	ReasonTooLarge          Reason = "too_large"
	ReasonPrefixMismatch    Reason = "prefix_mismatch"
	ReasonGap               Reason = "gap"
	ReasonDeleted           Reason = "deleted"
)

// Reasons lists every rejection reason.
var Reasons = []Reason{ReasonMalformed, ReasonInvalid, ReasonUnsupportedSchema, ReasonTooLarge, ReasonPrefixMismatch, ReasonGap, ReasonDeleted}

// RejectError is an event that cannot be applied. Detail says what is wrong
// without quoting message text.
type RejectError struct {
	Reason Reason
	Detail string
}

func (e *RejectError) Error() string { return string(e.Reason) + ": " + e.Detail }

func reject(r Reason, format string, args ...any) *RejectError {
	return &RejectError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Limits bound what ParseEvent accepts. The zero value means the defaults.
type Limits struct {
	// MaxEventBytes bounds an event's encoded size. Defaults to 16 MiB.
	MaxEventBytes int
	// MaxMessages bounds the messages of one event. Defaults to 50,000.
	MaxMessages int
}

// Default limits.
const (
	DefaultMaxEventBytes = 16 << 20
	DefaultMaxMessages   = 50_000
)

func (l Limits) withDefaults() Limits {
	l.MaxEventBytes = cmp.Or(l.MaxEventBytes, DefaultMaxEventBytes)
	l.MaxMessages = cmp.Or(l.MaxMessages, DefaultMaxMessages)
	return l
}

// Event is a decoded, validated checkpoint event (docs/protocol.md).
type Event struct {
	Schema         string
	Kind           string
	EventID        string
	UserID         string
	ConversationID string
	// Offset is the index of Messages[0] in the history.
	Offset int
	// PrefixDigest is the chain digest of the history's [0, Offset); for a
	// snapshot it is ChainStart().
	PrefixDigest Digest
	// Messages hold what the fold needs (role, id, type, text, whether the
	// message has tool calls); their Content, Artifact and ToolCalls are
	// released once digested: Digests holds what they were.
	Messages []Message
	// Digests holds the message digest of each of Messages.
	Digests []Digest
}

// MaxHistoryLength is the longest history an event may describe: offset
// plus the number of messages is at most this.
const MaxHistoryLength = math.MaxInt32

// End returns the length of the history the event carries: Offset +
// len(Messages).
func (e *Event) End() int { return e.Offset + len(e.Messages) }

type wireEvent struct {
	Schema         *string           `json:"schema"`
	Kind           *string           `json:"kind"`
	EventID        json.RawMessage   `json:"event_id"`
	UserID         json.RawMessage   `json:"user_id"`
	ConversationID json.RawMessage   `json:"conversation_id"`
	Offset         json.RawMessage   `json:"offset"`
	PrefixDigest   json.RawMessage   `json:"prefix_digest"`
	Messages       []json.RawMessage `json:"messages"`
}

// ProbeKey extracts user_id, conversation_id and event_id from a payload as
// far as it can, for the record of a rejected event. Values that are not
// strings are "".
func ProbeKey(data []byte) (userID, conversationID, eventID string) {
	var p struct {
		UserID         any `json:"user_id"`
		ConversationID any `json:"conversation_id"`
		EventID        any `json:"event_id"`
	}
	if !utf8.Valid(data) || json.Unmarshal(data, &p) != nil {
		return "", "", ""
	}
	s := func(v any) string { str, _ := v.(string); return str }
	return s(p.UserID), s(p.ConversationID), s(p.EventID)
}

// ParseEvent decodes and validates a checkpoint event. It returns a
// *RejectError with reason malformed, invalid, unsupported_schema or
// too_large when the event cannot be accepted.
func ParseEvent(data []byte, limits Limits) (*Event, error) {
	return parseEvent(data, limits, false)
}

// ParseEventInPlace is ParseEvent for a caller that owns data and leaves it
// unchanged while it uses the event: the texts of the event's messages may
// share data's memory instead of being copies, so that a large snapshot is
// not held twice.
func ParseEventInPlace(data []byte, limits Limits) (*Event, error) {
	return parseEvent(data, limits, true)
}

func parseEvent(data []byte, limits Limits, shareText bool) (*Event, error) {
	limits = limits.withDefaults()
	if len(data) > limits.MaxEventBytes {
		return nil, reject(ReasonTooLarge, "event is %d bytes, more than the limit of %d", len(data), limits.MaxEventBytes)
	}
	if !utf8.Valid(data) {
		return nil, reject(ReasonMalformed, "event is not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(data)
	if ev, ok := parseEventFast(trimmed, limits, shareText); ok {
		return ev, nil
	}
	return parseEventGeneral(trimmed, limits)
}

// parseEventGeneral is ParseEvent by encoding/json: the reference the fast
// path agrees with, and the decoder of every event it does not answer for.
// data is trimmed, valid UTF-8 and within the size limit.
func parseEventGeneral(trimmed []byte, limits Limits) (*Event, error) {
	if !json.Valid(trimmed) {
		if nestedDeeper(trimmed, MaxEventDepth) {
			return nil, reject(ReasonMalformed, "event is nested deeper than %d levels", MaxEventDepth)
		}
		return nil, reject(ReasonMalformed, "event is not valid JSON")
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, reject(ReasonInvalid, "event must be a JSON object")
	}
	var w wireEvent
	if err := json.Unmarshal(trimmed, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, reject(ReasonInvalid, "field %q has the wrong type", te.Field)
		}
		return nil, reject(ReasonInvalid, "event does not match the checkpoint schema")
	}
	if w.Schema == nil {
		return nil, reject(ReasonInvalid, "field \"schema\" is required (%q)", Schema)
	}
	if *w.Schema != Schema {
		return nil, reject(ReasonUnsupportedSchema, "schema must be %q", Schema)
	}
	ev := &Event{Schema: Schema, Kind: KindSnapshot}
	if w.Kind != nil && *w.Kind != "" {
		ev.Kind = *w.Kind
	}
	if ev.Kind != KindSnapshot && ev.Kind != KindDelete {
		return nil, reject(ReasonInvalid, "field \"kind\" must be %q or %q", KindSnapshot, KindDelete)
	}
	var err *RejectError
	if ev.EventID, err = requiredString(w.EventID, "event_id", MaxEventIDBytes); err != nil {
		return nil, err
	}
	if ev.UserID, err = requiredString(w.UserID, "user_id", MaxKeyBytes); err != nil {
		return nil, err
	}
	if ev.ConversationID, err = requiredString(w.ConversationID, "conversation_id", MaxKeyBytes); err != nil {
		return nil, err
	}
	if ev.Kind == KindDelete {
		if len(w.Messages) > 0 {
			return nil, reject(ReasonInvalid, "a delete event carries no messages")
		}
		return ev, nil
	}
	if !isNull(w.Offset) {
		if err := json.Unmarshal(w.Offset, &ev.Offset); err != nil || ev.Offset < 0 {
			return nil, reject(ReasonInvalid, "field \"offset\" must be a non-negative integer")
		}
	}
	// offset + len(messages) is the history's length: it must not overflow,
	// and must fit the index recall stores (a 32-bit integer).
	if ev.Offset > MaxHistoryLength-len(w.Messages) {
		return nil, reject(ReasonInvalid, "field \"offset\" plus the number of messages must be at most %d", MaxHistoryLength)
	}
	ev.PrefixDigest = chainStart
	if !isNull(w.PrefixDigest) {
		var s string
		if json.Unmarshal(w.PrefixDigest, &s) != nil {
			return nil, reject(ReasonInvalid, "field \"prefix_digest\" must be a string of 64 lowercase hex characters")
		}
		d, perr := ParseDigest(s)
		if perr != nil {
			return nil, reject(ReasonInvalid, "field \"prefix_digest\" must be 64 lowercase hex characters")
		}
		if ev.Offset == 0 && d != chainStart {
			return nil, reject(ReasonInvalid, "field \"prefix_digest\" must be null when offset is 0")
		}
		ev.PrefixDigest = d
	} else if ev.Offset > 0 {
		return nil, reject(ReasonInvalid, "field \"prefix_digest\" is required when offset > 0")
	}
	if w.Messages == nil {
		return nil, reject(ReasonInvalid, "field \"messages\" must be a list")
	}
	if len(w.Messages) > limits.MaxMessages {
		return nil, reject(ReasonTooLarge, "event has %d messages, more than the limit of %d", len(w.Messages), limits.MaxMessages)
	}
	// Decode and digest one message at a time, releasing what the fold
	// does not need as soon as it is digested, so that a large event is
	// not held several times over.
	ev.Messages = make([]Message, len(w.Messages))
	ev.Digests = make([]Digest, len(w.Messages))
	for i, raw := range w.Messages {
		m, err := decodeMessage(raw, i)
		if err != nil {
			return nil, reject(ReasonInvalid, "%s", err.Error())
		}
		d, err := m.Digest()
		if err != nil {
			return nil, reject(ReasonInvalid, "%s", digestError(ev.Offset+i, err).Error())
		}
		m.Content, m.Artifact, m.ToolCalls = nil, nil, nil
		ev.Messages[i], ev.Digests[i] = m, d
		w.Messages[i] = nil
	}
	return ev, nil
}

// nestedDeeper reports whether data opens more than limit arrays and
// objects inside one another, outside strings. It tells why json.Valid
// refused data; it does not check the grammar.
func nestedDeeper(data []byte, limit int) bool {
	depth := 0
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inString && c == '\\':
			i++ // the escaped byte cannot end the string
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

func requiredString(raw json.RawMessage, field string, maxBytes int) (string, *RejectError) {
	if isNull(raw) {
		return "", reject(ReasonInvalid, "field %q is required", field)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", reject(ReasonInvalid, "field %q must be a string", field)
	}
	switch {
	case s == "":
		return "", reject(ReasonInvalid, "field %q must not be empty", field)
	case len(s) > maxBytes:
		return "", reject(ReasonInvalid, "field %q is %d bytes, more than %d", field, len(s), maxBytes)
	case strings.IndexByte(s, 0) >= 0:
		return "", reject(ReasonInvalid, "field %q must not contain NUL", field)
	}
	return s, nil
}

// ValidateKey checks a user or conversation id as events and the API
// require: non-empty UTF-8 of at most MaxKeyBytes bytes without NUL.
func ValidateKey(field, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s must not be empty", field)
	case len(s) > MaxKeyBytes:
		return fmt.Errorf("%s is %d bytes, more than %d", field, len(s), MaxKeyBytes)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s must be UTF-8", field)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%s must not contain NUL", field)
	}
	return nil
}
