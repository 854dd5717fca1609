package checkpoint

import (
	"bytes"
	"encoding/json"
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
	var (
		schema, kind, eventID, userID, conversationID, offset, prefix []byte
		haveMessages                                                  bool
		msgs                                                          []Message
		digests                                                       []Digest
	)
	// set stores a header member's value; false for a duplicate.
	set := func(dst *[]byte) bool {
		v, ok := s.value()
		return ok && setOnce(dst, v)
	}
	empty, ok := s.openObject()
	for more := !empty; ok && more; {
		var key []byte
		if key, ok = s.key(); !ok {
			break
		}
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
			ok = isPlainKey(key) && s.skipValue(0)
		}
		if ok {
			more, ok = s.nextMember()
		}
	}
	if !ok {
		return nil, false
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
	empty, ok := s.openObject()
	for more := !empty; ok && more; {
		var key, v []byte
		if key, ok = s.key(); ok {
			v, ok = s.value()
		}
		if dst := f.field(key); ok && dst != nil {
			ok = setOnce(dst, v)
		}
		if ok {
			more, ok = s.nextMember()
		}
	}
	if !ok || f.role == nil {
		return f, false
	}
	f.inPlace = true
	return f, true
}

// field returns where the member named key goes, nil for a member decoding
// does not read.
func (f *msgFields) field(key []byte) *[]byte {
	var dst *json.RawMessage
	switch string(key) {
	case "role":
		dst = &f.role
	case "type":
		dst = &f.typ
	case "id":
		dst = &f.id
	case "tool_call_id":
		dst = &f.toolCallID
	case "name":
		dst = &f.name
	case "content":
		dst = &f.content
	case "tool_calls":
		dst = &f.toolCalls
	case "invalid_tool_calls":
		dst = &f.invalidToolCalls
	case "additional_kwargs":
		dst = &f.additionalKwargs
	case "artifact":
		dst = &f.artifact
	default:
		return nil
	}
	return (*[]byte)(dst)
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
		if !s.members(func(key []byte) *[]byte {
			switch string(key) {
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
			if !fs.members(func(key []byte) *[]byte {
				switch string(key) {
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
func (s *jsonScanner) members(field func(key []byte) *[]byte) bool {
	empty, ok := s.openObject()
	for more := !empty; ok && more; {
		var key, v []byte
		if key, ok = s.key(); ok {
			v, ok = s.value()
		}
		if dst := field(key); ok && dst != nil {
			ok = setOnce(dst, v)
		}
		if ok {
			more, ok = s.nextMember()
		}
	}
	return ok
}

// openObject moves past the opening brace of an object, and past its
// closing one when it is empty.
func (s *jsonScanner) openObject() (empty, ok bool) {
	if !s.consume('{') {
		return false, false
	}
	return s.consume('}'), true
}

// key moves past a member's key and colon, to its value. ok is false for
// anything but a key without escapes.
func (s *jsonScanner) key() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	key, escaped, ok := s.stringBody()
	if !ok || escaped || !s.consume(':') {
		return nil, false
	}
	s.skipSpace()
	return key, true
}

// nextMember moves past what follows a member: more reports a comma, !more
// the closing brace.
func (s *jsonScanner) nextMember() (more, ok bool) {
	if s.consume(',') {
		return true, true
	}
	return false, s.consume('}')
}

// setOnce stores v in *dst; false when *dst holds a value already (a
// duplicate member: in a map, the last one wins).
func setOnce(dst *[]byte, v []byte) bool {
	if *dst != nil {
		return false
	}
	*dst = v
	return true
}
