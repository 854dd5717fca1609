package evidence

import (
	"bytes"
	"strings"
)

// parseEventFast is ParseEvent's fast path: one pass over the event's bytes
// (trimmed, valid UTF-8, within the size limit) that validates the JSON,
// decodes each message in place and digests it, keeping of the message only
// what the fold needs. It answers only for a valid snapshot event whose
// members it recognises; ok is false for anything else — an error, a delete,
// an escaped key or header string, a duplicate member — and the caller then
// decodes the event by the general path, which gives every error its
// message. Where it answers, the answer is the general path's, field for
// field and digest for digest (FuzzParseEvent checks it).
//
// With shareText, a message text that needs no unescaping is a string over
// data's bytes rather than a copy (ParseEventInPlace).
func parseEventFast(data []byte, limits Limits, shareText bool) (ev *Event, ok bool) {
	s := jsonScanner{data: data}
	if !s.consume('{') {
		return nil, false
	}
	var (
		schema, kind, eventID, userID, conversationID, offset, prefix []byte
		haveMessages                                                  bool
		msgs                                                          []Message
		digests                                                       []Digest
	)
	// set stores a header member's value; false for a duplicate.
	set := func(dst *[]byte) bool {
		if *dst != nil {
			return false
		}
		v, ok := s.value()
		*dst = v
		return ok
	}
	if !s.consume('}') {
		for {
			s.skipSpace()
			if s.pos >= len(s.data) || s.data[s.pos] != '"' {
				return nil, false
			}
			key, escaped, ok := s.stringBody()
			if !ok || escaped || !s.consume(':') {
				return nil, false
			}
			s.skipSpace()
			switch string(key) {
			case "schema":
				ok = set(&schema)
			case "kind":
				ok = set(&kind)
			case "event_id":
				ok = set(&eventID)
			case "user_id":
				ok = set(&userID)
			case "conversation_id":
				ok = set(&conversationID)
			case "offset":
				ok = set(&offset)
			case "prefix_digest":
				ok = set(&prefix)
			case "messages":
				if haveMessages {
					return nil, false
				}
				haveMessages = true
				msgs, digests, ok = s.messages(limits.MaxMessages, shareText)
			default:
				// encoding/json matches members to fields without regard
				// to case: such a member is the general path's.
				if !isPlainKey(key) {
					return nil, false
				}
				ok = s.skipValue(0)
			}
			if !ok {
				return nil, false
			}
			if s.consume(',') {
				continue
			}
			if !s.consume('}') {
				return nil, false
			}
			break
		}
	}
	s.skipSpace()
	if s.pos != len(s.data) || !haveMessages {
		return nil, false
	}

	ev = &Event{Schema: Schema, Kind: KindSnapshot}
	if v, ok := plainString(schema); !ok || string(v) != Schema {
		return nil, false
	}
	if kind != nil && !isNull(kind) {
		if v, ok := plainString(kind); !ok || len(v) > 0 && string(v) != KindSnapshot {
			return nil, false
		}
	}
	for _, f := range []struct {
		raw []byte
		dst *string
		max int
	}{{eventID, &ev.EventID, MaxEventIDBytes}, {userID, &ev.UserID, MaxKeyBytes}, {conversationID, &ev.ConversationID, MaxKeyBytes}} {
		// A string without escapes holds no NUL.
		v, ok := plainString(f.raw)
		if !ok || len(v) == 0 || len(v) > f.max {
			return nil, false
		}
		*f.dst = string(v)
	}
	if !isNull(offset) {
		n, ok := intValue(offset)
		if !ok || n < 0 {
			return nil, false
		}
		ev.Offset = n
	}
	if ev.Offset > MaxHistoryLength-len(msgs) {
		return nil, false
	}
	ev.PrefixDigest = chainStart
	if !isNull(prefix) {
		v, ok := plainString(prefix)
		if !ok {
			return nil, false
		}
		d, err := ParseDigest(string(v))
		if err != nil || ev.Offset == 0 && d != chainStart {
			return nil, false
		}
		ev.PrefixDigest = d
	} else if ev.Offset > 0 {
		return nil, false
	}
	if msgs == nil {
		msgs, digests = []Message{}, []Digest{}
	}
	ev.Messages, ev.Digests = msgs, digests
	return ev, true
}

// eventFields are the members of an event, as wireEvent names them.
var eventFields = []string{"schema", "kind", "event_id", "user_id", "conversation_id", "offset", "prefix_digest", "messages"}

// isPlainKey reports whether key is an ASCII name that encoding/json would
// not match to an event field.
func isPlainKey(key []byte) bool {
	for _, b := range key {
		if b >= 0x80 {
			return false
		}
	}
	for _, f := range eventFields {
		if strings.EqualFold(string(key), f) {
			return false
		}
	}
	return true
}

// messages decodes and digests the list of messages at s.pos, one message
// at a time, keeping what the fold needs. ok is false for anything but a
// list of at most max valid messages.
func (s *jsonScanner) messages(max int, shareText bool) (msgs []Message, digests []Digest, ok bool) {
	if !s.consume('[') {
		return nil, nil, false
	}
	// Room for the messages: one for each "role" is a guess for the flat
	// form, which most senders use.
	n := min(max, bytes.Count(s.data[s.pos:], []byte(`"role"`)))
	msgs, digests = make([]Message, 0, n), make([]Digest, 0, n)
	if s.consume(']') {
		return msgs, digests, true
	}
	for i := 0; ; i++ {
		if i >= max {
			return nil, nil, false
		}
		s.skipSpace()
		start := s.pos
		var m Message
		var err error
		if f, ok := s.messageFields(); ok {
			f.shareText = shareText
			m, err = decodeFields(&f, FormFlat, i)
		} else {
			// Another form, or a member the general decoder must see:
			// decode the message alone by the general path.
			s.pos = start
			if !s.skipValue(1) {
				return nil, nil, false
			}
			m, err = decodeMessage(s.data[start:s.pos], i)
		}
		if err != nil {
			return nil, nil, false
		}
		d, err := m.digest(m.StringContent)
		if err != nil {
			return nil, nil, false
		}
		m.Content, m.Artifact, m.ToolCalls = nil, nil, nil
		msgs, digests = append(msgs, m), append(digests, d)
		if s.consume(',') {
			continue
		}
		if !s.consume(']') {
			return nil, nil, false
		}
		return msgs, digests, true
	}
}

// messageFields reads the flat-form message object at s.pos. ok is false
// when it is not an object, has no role, has a duplicate member that
// decoding reads or a key with escapes.
func (s *jsonScanner) messageFields() (f msgFields, ok bool) {
	if !s.consume('{') {
		return f, false
	}
	if s.consume('}') {
		return f, false
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return f, false
		}
		key, escaped, ok := s.stringBody()
		if !ok || escaped || !s.consume(':') {
			return f, false
		}
		var dst *[]byte
		switch string(key) {
		case "role":
			dst = (*[]byte)(&f.role)
		case "type":
			dst = (*[]byte)(&f.typ)
		case "id":
			dst = (*[]byte)(&f.id)
		case "tool_call_id":
			dst = (*[]byte)(&f.toolCallID)
		case "name":
			dst = (*[]byte)(&f.name)
		case "content":
			dst = (*[]byte)(&f.content)
		case "tool_calls":
			dst = (*[]byte)(&f.toolCalls)
		case "invalid_tool_calls":
			dst = (*[]byte)(&f.invalidToolCalls)
		case "additional_kwargs":
			dst = (*[]byte)(&f.additionalKwargs)
		case "artifact":
			dst = (*[]byte)(&f.artifact)
		}
		s.skipSpace()
		start := s.pos
		if !s.skipValue(1) {
			return f, false
		}
		if dst != nil {
			if *dst != nil {
				return f, false // a duplicate: the last one wins in a map
			}
			*dst = s.data[start:s.pos]
		}
		if s.consume(',') {
			continue
		}
		if !s.consume('}') || f.role == nil {
			return f, false
		}
		f.inPlace = true
		return f, true
	}
}

// scanToolCalls reads a list of tool calls as decodeToolCalls does, from a
// value the scanner has validated. ok is false for anything but a list of
// objects whose members id, name, args, function (and its name and
// arguments) are unescaped, unique and of the types decodeToolCalls accepts;
// the caller then uses decodeToolCalls.
func scanToolCalls(raw []byte) (calls []ToolCall, ok bool) {
	s := jsonScanner{data: raw}
	if !s.consume('[') {
		return nil, false
	}
	calls = []ToolCall{}
	if s.consume(']') {
		return calls, true
	}
	for {
		var id, name, args, function []byte
		if !s.members(func(key string) *[]byte {
			switch key {
			case "id":
				return &id
			case "name":
				return &name
			case "args":
				return &args
			case "function":
				return &function
			}
			return nil
		}) {
			return nil, false
		}
		var c ToolCall
		var ok bool
		if c.ID, ok = optionalString(id); !ok {
			return nil, false
		}
		if len(function) > 0 && function[0] == '{' {
			var fnName, arguments []byte
			fs := jsonScanner{data: function}
			if !fs.members(func(key string) *[]byte {
				switch key {
				case "name":
					return &fnName
				case "arguments":
					return &arguments
				}
				return nil
			}) {
				return nil, false
			}
			if c.Name, ok = optionalString(fnName); !ok {
				return nil, false
			}
			c.Args = argumentsValue(arguments)
		} else {
			if c.Name, ok = optionalString(name); !ok {
				return nil, false
			}
			c.Args = argsValue(args)
		}
		calls = append(calls, c)
		if s.consume(',') {
			continue
		}
		if !s.consume(']') {
			return nil, false
		}
		return calls, true
	}
}

// optionalString decodes an absent, null or string member as optString
// does; ok is false for any other value.
func optionalString(raw []byte) (string, bool) {
	if isNull(raw) {
		return "", true
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	s, err := decodeString(raw)
	return s, err == nil
}

// members reads the object at s.pos, storing the value of each member for
// which field returns a destination. ok is false when it is not an object,
// or a key has escapes, or a member with a destination repeats.
func (s *jsonScanner) members(field func(key string) *[]byte) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return false
		}
		key, escaped, ok := s.stringBody()
		if !ok || escaped || !s.consume(':') {
			return false
		}
		dst := field(string(key))
		v, ok := s.value()
		if !ok {
			return false
		}
		if dst != nil {
			if *dst != nil {
				return false
			}
			*dst = v
		}
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}
