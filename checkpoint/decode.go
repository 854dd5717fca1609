package checkpoint

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// DecodeMessage decodes one message in any of the three forms of the
// protocol (docs/protocol.md), recognised by its shape. Errors are *DecodeError with Index
// -1.
func DecodeMessage(data []byte) (Message, error) {
	return decodeMessage(data, -1)
}

// DecodeMessages decodes a JSON list of messages.
func DecodeMessages(data []byte) ([]Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, &DecodeError{Index: -1, Problem: "messages must be a JSON list"}
	}
	return decodeRawMessages(raws)
}

func decodeRawMessages(raws []json.RawMessage) ([]Message, error) {
	msgs := make([]Message, len(raws))
	for i, raw := range raws {
		m, err := decodeMessage(raw, i)
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

type rawObject map[string]json.RawMessage

func decodeMessage(data []byte, index int) (Message, error) {
	fail := func(field, problem string) (Message, error) {
		return Message{}, &DecodeError{Index: index, Field: field, Problem: problem}
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return fail("", "must be a JSON object")
	}
	var obj rawObject
	if err := json.Unmarshal(data, &obj); err != nil {
		return fail("", "must be a JSON object")
	}
	if _, ok := obj["role"]; ok {
		return decodeFields(fieldsOf(obj), FormFlat, index)
	}
	var kind string
	if raw, ok := obj["type"]; ok {
		if err := json.Unmarshal(raw, &kind); err != nil {
			return fail("type", "must be a string")
		}
	}
	if _, hasLC := obj["lc"]; hasLC && kind == "constructor" {
		kwargs, ok := asObject(obj["kwargs"])
		if !ok {
			return fail("kwargs", "must be a JSON object")
		}
		var path []string
		if err := json.Unmarshal(obj["id"], &path); err != nil || len(path) == 0 {
			return fail("id", "must be a non-empty list of strings naming the message class")
		}
		role, ok := classRole(path[len(path)-1], kwargs)
		if !ok {
			return fail("id", "names an unsupported message class")
		}
		return decodeLangChain(fieldsOf(kwargs), role, FormConstructor, index)
	}
	if dataObj, ok := asObject(obj["data"]); ok {
		role, ok := storedRole(kind, dataObj)
		if !ok {
			return fail("type", "names an unsupported message type")
		}
		return decodeLangChain(fieldsOf(dataObj), role, FormStored, index)
	}
	return fail("role", "is required (or use a LangChain stored or constructor form)")
}

func asObject(raw json.RawMessage) (rawObject, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var obj rawObject
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, false
	}
	return obj, true
}

// normaliseRole maps a role name or alias to a Role.
func normaliseRole(s string) (Role, bool) {
	switch strings.ToLower(s) {
	case "user", "human":
		return RoleUser, true
	case "assistant", "ai":
		return RoleAssistant, true
	case "system", "developer":
		return RoleSystem, true
	case "tool", "function":
		return RoleTool, true
	}
	return "", false
}

// storedRole maps a LangChain stored type ("human", "ai", …) to a Role. A
// generic "chat" message carries its role in data.role.
func storedRole(kind string, data rawObject) (Role, bool) {
	if kind == "chat" || kind == "generic" {
		var r string
		if err := json.Unmarshal(data["role"], &r); err != nil {
			return "", false
		}
		return normaliseRole(r)
	}
	if r, ok := normaliseRole(strings.TrimSuffix(kind, "Chunk")); ok {
		return r, true
	}
	// messages_to_dict writes chunks by class name ("AIMessageChunk").
	return classRole(kind, data)
}

// classRole maps a LangChain class name (the last element of the
// constructor's id) to a Role.
func classRole(class string, kwargs rawObject) (Role, bool) {
	class = strings.TrimSuffix(class, "Chunk")
	switch class {
	case "HumanMessage":
		return RoleUser, true
	case "AIMessage":
		return RoleAssistant, true
	case "SystemMessage":
		return RoleSystem, true
	case "ToolMessage", "FunctionMessage":
		return RoleTool, true
	case "ChatMessage":
		var r string
		if err := json.Unmarshal(kwargs["role"], &r); err != nil {
			return "", false
		}
		return normaliseRole(r)
	}
	return "", false
}

// msgFields are the members of a message object that decoding reads, each
// nil when absent. The general decoder fills them from a map, the fast path
// of ParseEvent from the event's bytes in place.
type msgFields struct {
	role, typ, id, toolCallID, name, content                json.RawMessage
	toolCalls, invalidToolCalls, additionalKwargs, artifact json.RawMessage
	// inPlace is set by ParseEvent's fast path, which digests the message
	// at once: a string content is kept as Text only (Content is nil; the
	// digest writes its part list), tool calls are read by the scanner.
	inPlace bool
	// shareText is set with inPlace by ParseEventInPlace: a string content
	// without escapes becomes a Text that shares the event's memory.
	shareText bool
}

func fieldsOf(obj rawObject) *msgFields {
	return &msgFields{
		role: obj["role"], typ: obj["type"], id: obj["id"], toolCallID: obj["tool_call_id"], name: obj["name"],
		content: obj["content"], toolCalls: obj["tool_calls"], invalidToolCalls: obj["invalid_tool_calls"],
		additionalKwargs: obj["additional_kwargs"], artifact: obj["artifact"],
	}
}

func decodeLangChain(fields *msgFields, role Role, form Form, index int) (Message, error) {
	// In the LangChain forms "type" inside data is the LangChain type, not a
	// channel type, and "role" belongs to ChatMessage: both are consumed here.
	m, err := decodeCommon(fields, index)
	if err != nil {
		return Message{}, err
	}
	m.Role = role
	m.Type = TypeChat
	m.Form = form
	return m, nil
}

func decodeFields(obj *msgFields, form Form, index int) (Message, error) {
	role, ok, err := decodeRole(obj.role)
	if err != nil {
		return Message{}, &DecodeError{Index: index, Field: "role", Problem: "must be a string"}
	}
	if !ok {
		return Message{}, &DecodeError{Index: index, Field: "role", Problem: "must be one of user, assistant, system, tool (aliases human, ai)"}
	}
	m, err := decodeCommon(obj, index)
	if err != nil {
		return Message{}, err
	}
	m.Role = role
	m.Form = form
	m.Type = TypeChat
	if raw := obj.typ; !isNull(raw) {
		t, err := decodeString(raw)
		if err != nil {
			return Message{}, &DecodeError{Index: index, Field: "type", Problem: "must be a string"}
		}
		if t != "" {
			m.Type = t
		}
	}
	return m, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// decodeRole decodes a role as json.Unmarshal into a string would (null is
// "") and normalises it.
func decodeRole(raw json.RawMessage) (Role, bool, error) {
	if s, ok := plainString(raw); ok {
		// The spellings senders use, without a conversion to string.
		switch string(s) {
		case "user":
			return RoleUser, true, nil
		case "assistant":
			return RoleAssistant, true, nil
		case "tool":
			return RoleTool, true, nil
		case "system":
			return RoleSystem, true, nil
		}
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return "", false, err
	}
	r, ok := normaliseRole(name)
	return r, ok, nil
}

// plainString returns the body of raw when it is a JSON string without
// escapes of valid UTF-8: what it decodes to, byte for byte.
func plainString(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	body := raw[1 : len(raw)-1]
	for i := skipPlain(body, 0); i < len(body); i = skipPlain(body, i) {
		if body[i] < utf8.RuneSelf {
			return nil, false // an escape, a quote or a control character
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size <= 1 {
			return nil, false
		}
		i += size
	}
	return body, true
}

// decodeString decodes a JSON value into a string as json.Unmarshal does;
// null is "".
func decodeString(raw json.RawMessage) (string, error) {
	if len(raw) > 1 && raw[0] == '"' && raw[len(raw)-1] == '"' && utf8.Valid(raw) {
		// raw is a valid JSON value (the caller's decoder checked it), so
		// a string of valid UTF-8 that unquote decodes alike.
		return unquote(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// isPlainStringOrNull reports whether raw is absent, null or a string
// without escapes: an optional string field that is valid without decoding.
func isPlainStringOrNull(raw json.RawMessage) bool {
	_, ok := plainString(raw)
	return ok || isNull(raw)
}

// optString decodes an optional string field: absent or null is "".
func optString(raw json.RawMessage, field string, index int) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	s, err := decodeString(raw)
	if err != nil {
		return "", &DecodeError{Index: index, Field: field, Problem: "must be a string"}
	}
	return s, nil
}

// decodeCommon decodes the fields the three forms share: id, content,
// tool_calls, invalid_tool_calls, additional_kwargs.tool_calls,
// tool_call_id and artifact.
func decodeCommon(obj *msgFields, index int) (Message, error) {
	var m Message
	var err error
	if m.ID, err = optString(obj.id, "id", index); err != nil {
		return Message{}, err
	}
	if m.ToolCallID, err = optString(obj.toolCallID, "tool_call_id", index); err != nil {
		return Message{}, err
	}
	if !isPlainStringOrNull(obj.name) {
		if _, err := optString(obj.name, "name", index); err != nil {
			return Message{}, err
		}
	}
	if c := bytes.TrimSpace(obj.content); len(c) > 0 && c[0] == '"' {
		m.StringContent = true
	}
	if body, ok := plainString(obj.content); ok && obj.shareText {
		m.Text = unsafe.String(unsafe.SliceData(body), len(body))
	} else if obj.inPlace && m.StringContent {
		if m.Text, err = decodeString(obj.content); err != nil {
			return Message{}, &DecodeError{Index: index, Field: "content", Problem: "is not a valid JSON string"}
		}
	} else if m.Content, m.Text, err = decodeContent(obj.content, index); err != nil {
		return Message{}, err
	}
	var fast bool
	if obj.inPlace && !isNull(obj.toolCalls) {
		m.ToolCalls, fast = scanToolCalls(obj.toolCalls)
	}
	if !fast {
		if m.ToolCalls, err = decodeToolCalls(obj.toolCalls, "tool_calls", index); err != nil {
			return Message{}, err
		}
	}
	m.HasToolCalls = len(m.ToolCalls) > 0
	if !m.HasToolCalls {
		m.HasToolCalls, err = nonEmptyList(obj.invalidToolCalls, "invalid_tool_calls", index)
		if err != nil {
			return Message{}, err
		}
	}
	if !m.HasToolCalls {
		if kw, ok := asObject(obj.additionalKwargs); ok {
			m.HasToolCalls, err = nonEmptyList(kw["tool_calls"], "additional_kwargs.tool_calls", index)
			if err != nil {
				return Message{}, err
			}
		}
	}
	m.Artifact = jsonNull
	if raw := obj.artifact; raw != nil {
		m.Artifact = bytes.TrimSpace(raw)
	}
	return m, nil
}

// nonEmptyList reports whether raw is a non-empty JSON list; absent and null
// are empty.
func nonEmptyList(raw json.RawMessage, field string, index int) (bool, error) {
	if isNull(raw) {
		return false, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return false, &DecodeError{Index: index, Field: field, Problem: "must be a list"}
	}
	return len(items) > 0, nil
}

// decodeContent returns the content as a part list and its text.
func decodeContent(raw json.RawMessage, index int) (json.RawMessage, string, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return jsonEmptyList, "", nil
	}
	switch raw[0] {
	case '"':
		s, err := decodeString(raw)
		if err != nil {
			return nil, "", &DecodeError{Index: index, Field: "content", Problem: "is not a valid JSON string"}
		}
		if s == "" {
			return jsonEmptyList, "", nil
		}
		return textParts(s), s, nil
	case '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return nil, "", &DecodeError{Index: index, Field: "content", Problem: "must be a string or a list of parts"}
		}
		var texts []string
		for _, p := range parts {
			var part struct {
				Type string          `json:"type"`
				Text json.RawMessage `json:"text"`
			}
			if len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &part) != nil || part.Type != "text" {
				continue
			}
			var t string
			if json.Unmarshal(part.Text, &t) == nil {
				texts = append(texts, t)
			}
		}
		return raw, strings.Join(texts, "\n"), nil
	}
	return nil, "", &DecodeError{Index: index, Field: "content", Problem: "must be a string or a list of parts"}
}

func decodeToolCalls(raw json.RawMessage, field string, index int) ([]ToolCall, error) {
	if isNull(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &DecodeError{Index: index, Field: field, Problem: "must be a list"}
	}
	calls := make([]ToolCall, 0, len(items))
	for _, item := range items {
		obj, ok := asObject(item)
		if !ok {
			return nil, &DecodeError{Index: index, Field: field, Problem: "entries must be JSON objects"}
		}
		var c ToolCall
		var err error
		if c.ID, err = optString(obj["id"], "id", index); err != nil {
			return nil, &DecodeError{Index: index, Field: field + ".id", Problem: "must be a string"}
		}
		if fn, ok := asObject(obj["function"]); ok {
			if c.Name, err = optString(fn["name"], "name", index); err != nil {
				return nil, &DecodeError{Index: index, Field: field + ".function.name", Problem: "must be a string"}
			}
			c.Args = argumentsValue(fn["arguments"])
		} else {
			if c.Name, err = optString(obj["name"], "name", index); err != nil {
				return nil, &DecodeError{Index: index, Field: field + ".name", Problem: "must be a string"}
			}
			// LangChain's args are kept as given: only OpenAI's arguments
			// are a string of JSON to parse (docs/protocol.md, Digests).
			c.Args = argsValue(obj["args"])
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// argsValue returns a LangChain tool call's args as given; missing is {}.
func argsValue(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return jsonEmptyObj
	}
	return raw
}

// argumentsValue returns tool-call arguments as JSON: missing is {}, a string
// holding JSON is parsed, anything else is kept as given.
func argumentsValue(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return jsonEmptyObj
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			t := bytes.TrimSpace([]byte(s))
			if len(t) > 0 && json.Valid(t) {
				return t
			}
		}
	}
	return raw
}
