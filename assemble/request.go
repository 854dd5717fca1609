package assemble

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// Budget defaults.
const (
	DefaultContextWindow    = 32768
	DefaultPrompt           = 16000
	DefaultResponseReserve  = 4096
	DefaultSafetyReserve    = 2048
	DefaultToolResultTokens = 2000
	DefaultImageTokens      = 1000
)

// MaxBudgetTokens bounds every budget field: a larger value is a mistake
// (no model has a context window of a hundred million tokens), answered
// with CodeInvalidBudget rather than trusted.
const MaxBudgetTokens = 100_000_000

// MinToolResultTokens is the smallest per-result limit: a compacted result
// needs room for its envelope.
const MinToolResultTokens = 64

// MaxRequestBytes bounds a request body, as it bounds a checkpoint event.
const MaxRequestBytes = checkpoint.DefaultMaxEventBytes

// Budget bounds one model call, in estimated tokens. Start from
// DefaultBudget and change what differs: Build uses every field as given.
type Budget struct {
	// ContextWindow is the model's context window. Defaults to 32,768.
	ContextWindow int `json:"context_window"`
	// Prompt caps the prompt whatever the window. Defaults to 16,000.
	Prompt int `json:"prompt"`
	// ResponseReserve is kept free for the model's answer. Defaults to
	// 4,096.
	ResponseReserve int `json:"response_reserve"`
	// SafetyReserve is kept free for the estimate's error. Defaults to
	// 2,048.
	SafetyReserve int `json:"safety_reserve"`
	// ToolResultTokens is the per-result limit above which a tool result is
	// compacted. Defaults to 2,000.
	ToolResultTokens int `json:"tool_result_tokens"`
	// ImageTokens is charged for each image (or other non-text) part.
	// Defaults to 1,000.
	ImageTokens int `json:"image_tokens"`
}

// DefaultBudget returns the default budget.
func DefaultBudget() Budget {
	return Budget{
		ContextWindow:    DefaultContextWindow,
		Prompt:           DefaultPrompt,
		ResponseReserve:  DefaultResponseReserve,
		SafetyReserve:    DefaultSafetyReserve,
		ToolResultTokens: DefaultToolResultTokens,
		ImageTokens:      DefaultImageTokens,
	}
}

// Limit validates the budget and returns the prompt limit:
// min(Prompt, ContextWindow − ResponseReserve − SafetyReserve). Errors
// are *Error with CodeInvalidBudget naming the field.
func (b *Budget) Limit() (int, error) {
	for _, f := range b.fields() {
		lo := 0
		switch f.name {
		case "context_window", "prompt":
			lo = 1
		case "tool_result_tokens":
			lo = MinToolResultTokens
		}
		if *f.v < lo || *f.v > MaxBudgetTokens {
			return 0, invalid(CodeInvalidBudget, "budget."+f.name,
				fmt.Sprintf("must be between %d and %d, not %d", lo, MaxBudgetTokens, *f.v))
		}
	}
	room := b.ContextWindow - b.ResponseReserve - b.SafetyReserve
	if room <= 0 {
		return 0, invalid(CodeInvalidBudget, "budget.context_window",
			fmt.Sprintf("%d leaves no room for a prompt after response_reserve %d and safety_reserve %d", b.ContextWindow, b.ResponseReserve, b.SafetyReserve))
	}
	return min(b.Prompt, room), nil
}

type budgetField struct {
	name string
	v    *int
}

func (b *Budget) fields() []budgetField {
	return []budgetField{
		{"context_window", &b.ContextWindow},
		{"prompt", &b.Prompt},
		{"response_reserve", &b.ResponseReserve},
		{"safety_reserve", &b.SafetyReserve},
		{"tool_result_tokens", &b.ToolResultTokens},
		{"image_tokens", &b.ImageTokens},
	}
}

// Evidence is the conversation's evidence message and the state it was
// rendered from.
type Evidence struct {
	// Message is the evidence message; nil when the conversation has none.
	Message *evidence.EvidenceMessage
	// Version and Cursor are the state's.
	Version int64
	Cursor  int
	// Lagging reports that the state had not reached the cursor the caller
	// asked for.
	Lagging bool
}

// Request is what Build assembles.
type Request struct {
	// Messages is the checkpoint, oldest first; its newest user message is
	// the current request. Decode it with checkpoint.DecodeMessages (any of
	// the three forms, mixed).
	Messages []checkpoint.Message
	// System is the system text; "" for none. When it is empty, system
	// messages at the head of Messages serve as the system text.
	System string
	// Tools are the JSON schemas of the tools the model may call.
	Tools []json.RawMessage
	// Budget bounds the call.
	Budget Budget
	// Evidence is the conversation's evidence; nil for none.
	Evidence *Evidence
	// Complement, when set, chooses the evidence message that goes beside
	// the history Build keeps: Build calls it with the current request's
	// text, the index of the oldest message it keeps whole (the evidence
	// is chosen from older messages only, so that its tokens never repeat
	// the prompt's) and the tokens it may take, and uses what it returns
	// instead of Evidence.Message (nil: none). It is called only when
	// Evidence.Message fits and some history is left out.
	Complement func(request string, before, maxTokens int) (*evidence.EvidenceMessage, error)
}

// Body is a decoded request body of the context endpoint (and of recall
// context): the Request, and how the endpoint should fetch evidence.
type Body struct {
	Request Request
	// FetchEvidence asks the endpoint to load the conversation's evidence
	// ("evidence": true, the default). False when the body says false or
	// carries an evidence message of its own (then in Request.Evidence).
	FetchEvidence bool
	// MinCursor and Wait are the body's min_cursor and wait: wait until the
	// evidence's cursor reaches MinCursor, at most Wait. Wait is as given
	// (a duration such as "2s", or a number of seconds); "" when absent.
	MinCursor int
	Wait      string
}

// DecodeBody decodes a request body:
//
//	{"messages": […], "system": "…", "tools": [{…}],
//	 "budget": {"context_window": 32768, "prompt": 16000,
//	            "response_reserve": 4096, "safety_reserve": 2048,
//	            "tool_result_tokens": 2000, "image_tokens": 1000},
//	 "evidence": true, "min_cursor": 0, "wait": "0s"}
//
// Absent budget fields take their defaults. "evidence" may also be an
// evidence message ({"role":"assistant","content":"…"}) or a read API
// evidence response, used as given. Errors are *Error naming the field,
// never quoting message text.
func DecodeBody(data []byte) (*Body, error) {
	if len(data) > MaxRequestBytes {
		return nil, invalid(CodeInvalidRequest, "", fmt.Sprintf("the body is %d bytes; at most %d are accepted", len(data), MaxRequestBytes))
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil, invalid(CodeInvalidRequest, "", "the body must be a JSON object")
	}
	// One validating pass over the body; each message is then decoded
	// from its own bytes.
	root, ok, release := parseJSON(data)
	defer release()
	if !ok || root.kind != '{' {
		return nil, invalid(CodeInvalidRequest, "", "the body must be a JSON object with messages, system, tools, budget, evidence, min_cursor and wait")
	}
	var w struct {
		Messages                                         *node
		System, Tools, Budget, Evidence, MinCursor, Wait json.RawMessage
	}
	for i, k := range root.keys() {
		v := root.vals()[i]
		switch k.name {
		case "messages":
			w.Messages = v
		case "system":
			w.System = v.raw
		case "tools":
			w.Tools = v.raw
		case "budget":
			w.Budget = v.raw
		case "evidence":
			w.Evidence = v.raw
		case "min_cursor":
			w.MinCursor = v.raw
		case "wait":
			w.Wait = v.raw
		}
	}
	body := &Body{FetchEvidence: true}
	req := &body.Request
	if w.Messages == nil || isNull(w.Messages.raw) {
		return nil, invalid(CodeInvalidMessages, "messages", "is required: the checkpoint's messages, oldest first")
	}
	msgs, err := decodeMessages(w.Messages)
	if err != nil {
		return nil, invalid(CodeInvalidMessages, "messages", err.Error())
	}
	req.Messages = msgs
	if !isNull(w.System) {
		if err := json.Unmarshal(w.System, &req.System); err != nil {
			return nil, invalid(CodeInvalidRequest, "system", "must be a string")
		}
	}
	if !isNull(w.Tools) {
		if err := json.Unmarshal(w.Tools, &req.Tools); err != nil {
			return nil, invalid(CodeInvalidRequest, "tools", "must be a list of JSON schemas")
		}
	}
	if req.Budget, err = decodeBudget(w.Budget); err != nil {
		return nil, err
	}
	if err := body.decodeEvidence(w.Evidence); err != nil {
		return nil, err
	}
	if !isNull(w.MinCursor) {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(w.MinCursor)), 10, 64)
		if err != nil || n < 0 || n > checkpoint.DefaultMaxMessages*1000 {
			return nil, invalid(CodeInvalidRequest, "min_cursor", "must be a non-negative integer")
		}
		body.MinCursor = int(n)
	}
	if !isNull(w.Wait) {
		var s string
		switch t := bytes.TrimSpace(w.Wait); t[0] {
		case '"':
			if err := json.Unmarshal(t, &s); err != nil {
				return nil, invalid(CodeInvalidRequest, "wait", `must be a duration such as "2s", or a number of seconds`)
			}
		default:
			if _, err := strconv.ParseFloat(string(t), 64); err != nil {
				return nil, invalid(CodeInvalidRequest, "wait", `must be a duration such as "2s", or a number of seconds`)
			}
			s = string(t)
		}
		body.Wait = s
	}
	return body, nil
}

// decodeMessages decodes a parsed list of messages, each from its bytes.
func decodeMessages(list *node) ([]checkpoint.Message, error) {
	if list.kind != '[' {
		return nil, &checkpoint.DecodeError{Index: -1, Problem: "messages must be a JSON list"}
	}
	msgs := make([]checkpoint.Message, len(list.vals()))
	for i, v := range list.vals() {
		m, err := checkpoint.DecodeMessage(v.raw)
		if err != nil {
			if de, ok := errors.AsType[*checkpoint.DecodeError](err); ok {
				cp := *de
				cp.Index = i
				return nil, &cp
			}
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func decodeBudget(raw json.RawMessage) (Budget, error) {
	b := DefaultBudget()
	if isNull(raw) {
		return b, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return b, invalid(CodeInvalidBudget, "budget", "must be a JSON object")
	}
	known := b.fields()
	for name, v := range fields {
		var dst *int
		for _, f := range known {
			if f.name == name {
				dst = f.v
			}
		}
		if dst == nil {
			return b, invalid(CodeInvalidBudget, "budget", fmt.Sprintf("has an unknown field %q; the fields are context_window, prompt, response_reserve, safety_reserve, tool_result_tokens and image_tokens", truncate(name, 64)))
		}
		if isNull(v) {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil || n < 0 || n > MaxBudgetTokens {
			return b, invalid(CodeInvalidBudget, "budget."+name, fmt.Sprintf("must be an integer between 0 and %d", MaxBudgetTokens))
		}
		*dst = int(n)
	}
	if _, err := b.Limit(); err != nil {
		return b, err
	}
	return b, nil
}

// truncate cuts s to at most n bytes at a character boundary.
func truncate(s string, n int) string {
	t, _ := evidence.Excerpt(s, n)
	return t
}

func (body *Body) decodeEvidence(raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0 || string(t) == "true":
		return nil
	case string(t) == "false" || string(t) == "null":
		body.FetchEvidence = false
		return nil
	case t[0] != '{':
		return invalid(CodeInvalidRequest, "evidence", "must be true, false, an evidence message or a read API evidence response")
	}
	body.FetchEvidence = false
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(t, &obj); err != nil {
		return invalid(CodeInvalidRequest, "evidence", "must be a JSON object")
	}
	ev := &Evidence{}
	msgRaw := json.RawMessage(t)
	if m, ok := obj["message"]; ok {
		// A read API response: the message and the state's scalars.
		var scalars struct {
			Version int64 `json:"version"`
			Cursor  int   `json:"cursor"`
			Lagging bool  `json:"lagging"`
		}
		if err := json.Unmarshal(t, &scalars); err != nil {
			return invalid(CodeInvalidRequest, "evidence", "version and cursor must be integers, lagging a boolean")
		}
		ev.Version, ev.Cursor, ev.Lagging = scalars.Version, scalars.Cursor, scalars.Lagging
		msgRaw = m
	}
	if !isNull(msgRaw) {
		var m struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		}
		if err := json.Unmarshal(msgRaw, &m); err != nil || m.Role == nil || m.Content == nil {
			return invalid(CodeInvalidRequest, "evidence.message", `must be {"role":"assistant","content":"…"}`)
		}
		if *m.Role != string(checkpoint.RoleAssistant) {
			return invalid(CodeInvalidRequest, "evidence.message.role", "must be assistant: historical text never takes the system or user role")
		}
		ev.Message = &evidence.EvidenceMessage{Role: checkpoint.RoleAssistant, Content: *m.Content}
	}
	body.Request.Evidence = ev
	return nil
}
