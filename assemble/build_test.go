package assemble_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// history is three turns; the last user message is the current request.
const history = `[
	{"id":"u0","role":"user","content":"We must ship by Friday."},
	{"id":"a0","role":"assistant","content":"Agreed: Friday it is."},
	{"id":"u1","role":"user","content":"Use Postgres for the store."},
	{"id":"a1","role":"assistant","content":"Postgres, then."},
	{"id":"u2","role":"user","content":"Draft the schema."}
]`

func evidenceOf(content string) *assemble.Evidence {
	return &assemble.Evidence{Version: 4, Cursor: 4, Message: &evidence.EvidenceMessage{Role: checkpoint.RoleAssistant, Content: content}}
}

func TestBuildRules(t *testing.T) {
	t.Parallel()
	ev := strings.Repeat("e", 300) // 104 tokens
	tests := []struct {
		name         string
		messages     string
		system       string
		tools        []string
		prompt       int
		evidence     *assemble.Evidence
		wantIDs      []string // "" for the system and evidence messages
		wantRoles    []checkpoint.Role
		wantDropped  int
		wantEvidence bool
	}{
		{
			name: "everything fits", messages: history, system: "Be brief.", prompt: 16000,
			wantIDs: []string{"", "u0", "a0", "u1", "a1", "u2"},
		},
		{
			name: "evidence after the system message, as an assistant", messages: history, system: "Be brief.", prompt: 16000,
			evidence: evidenceOf(ev), wantEvidence: true,
			wantIDs:   []string{"", "", "u0", "a0", "u1", "a1", "u2"},
			wantRoles: []checkpoint.Role{"system", "assistant", "user", "assistant", "user", "assistant", "user"},
		},
		{
			// 9 (system) + 10 (current) + 104 (evidence) = 123; the turns are 23 and 22.
			name: "evidence is charged before history", messages: history, system: "Be brief.", prompt: 150,
			evidence: evidenceOf(ev), wantEvidence: true,
			wantIDs: []string{"", "", "u1", "a1", "u2"}, wantDropped: 1,
		},
		{
			name: "evidence left out when it would not fit beside the mandatory part", messages: history, system: "Be brief.", prompt: 110,
			evidence: evidenceOf(ev),
			wantIDs:  []string{"", "u0", "a0", "u1", "a1", "u2"},
		},
		{
			name: "whole turns, newest first", messages: history, prompt: 32,
			wantIDs: []string{"u1", "a1", "u2"}, wantDropped: 1,
		},
		{
			name: "a turn that does not fit stops the older ones", messages: `[
				{"id":"u0","role":"user","content":"short"},
				{"id":"a0","role":"assistant","content":"short"},
				{"id":"u1","role":"user","content":"` + strings.Repeat("long ", 60) + `"},
				{"id":"a1","role":"assistant","content":"ok"},
				{"id":"u2","role":"user","content":"now"}]`, prompt: 40,
			wantIDs: []string{"u2"}, wantDropped: 2,
		},
		{
			name: "parallel results stay with their call; orphans and unanswered calls go", messages: `[
				{"id":"u0","role":"user","content":"Compare both."},
				{"id":"a0","role":"assistant","content":"","tool_calls":[{"id":"c1","name":"f","args":{}},{"id":"c2","name":"f","args":{}},{"id":"c3","name":"f","args":{}}]},
				{"id":"t1","role":"tool","tool_call_id":"c1","content":"one"},
				{"id":"t2","role":"tool","tool_call_id":"c2","content":"two"},
				{"id":"t9","role":"tool","tool_call_id":"c9","content":"orphan"},
				{"id":"t1b","role":"tool","tool_call_id":"c1","content":"again"},
				{"id":"a1","role":"assistant","content":"Both done."},
				{"id":"u1","role":"user","content":"Thanks."}]`, prompt: 16000,
			wantIDs: []string{"u0", "a0", "t1", "t2", "a1", "u1"},
		},
		{
			name: "a call never answered is left out, its prose kept", messages: `[
				{"id":"u0","role":"user","content":"Look it up."},
				{"id":"a0","role":"assistant","content":"Looking.","tool_calls":[{"id":"c1","name":"f","args":{}}]},
				{"id":"u1","role":"user","content":"Never mind."}]`, prompt: 16000,
			wantIDs: []string{"u0", "a0", "u1"},
		},
		{
			name: "the current exchange is kept, an unanswered call at its end is not", messages: `[
				{"id":"u0","role":"user","content":"Look it up."},
				{"id":"a0","role":"assistant","content":"","tool_calls":[{"id":"c1","name":"f","args":{}}]},
				{"id":"t1","role":"tool","tool_call_id":"c1","content":"found"},
				{"id":"a1","role":"assistant","content":"","tool_calls":[{"id":"c2","name":"g","args":{}}]}]`, prompt: 16000,
			wantIDs: []string{"u0", "a0", "t1"},
		},
		{
			name: "non-chat channel types are left out", messages: `[
				{"id":"u0","role":"user","content":"Hi."},
				{"id":"th","role":"assistant","type":"thinking","content":"hmm"},
				{"id":"st","role":"assistant","type":"status","content":"working"},
				{"id":"a0","role":"assistant","content":"Hello."},
				{"id":"u1","role":"user","content":"Bye."},
				{"id":"td","role":"assistant","type":"todos","content":"[]"}]`, prompt: 16000,
			wantIDs: []string{"u0", "a0", "u1"},
		},
		{
			name: "history never takes the system role; a leading system message is the system text", messages: `[
				{"id":"s0","role":"system","content":"You are terse."},
				{"id":"u0","role":"user","content":"Hi."},
				{"id":"s1","role":"system","content":"Injected later."},
				{"id":"a0","role":"assistant","content":"Hello."},
				{"id":"u1","role":"user","content":"Bye."}]`, prompt: 16000,
			wantIDs:   []string{"", "u0", "a0", "u1"},
			wantRoles: []checkpoint.Role{"system", "user", "assistant", "user"},
		},
		{
			name: "the three forms, mixed", messages: `[
				{"type":"human","data":{"id":"h0","content":"Stored form."}},
				{"lc":1,"type":"constructor","id":["langchain","schema","messages","AIMessage"],"kwargs":{"id":"k0","content":"Constructor form."}},
				{"id":"f0","role":"human","content":"Flat form."}]`, prompt: 16000,
			wantIDs: []string{"h0", "k0", "f0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &assemble.Request{Messages: decode(t, tt.messages), System: tt.system, Budget: budget(tt.prompt), Evidence: tt.evidence}
			for _, s := range tt.tools {
				req.Tools = append(req.Tools, json.RawMessage(s))
			}
			res, err := assemble.Build(req)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			checkResult(t, req, res)
			if diff := cmp.Diff(tt.wantIDs, ids(res)); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if tt.wantRoles != nil {
				var roles []checkpoint.Role
				for _, m := range res.Messages {
					roles = append(roles, m.Role)
				}
				if diff := cmp.Diff(tt.wantRoles, roles); diff != "" {
					t.Errorf("roles (-want +got):\n%s", diff)
				}
			}
			if res.DroppedTurns != tt.wantDropped {
				t.Errorf("dropped %d turns, want %d", res.DroppedTurns, tt.wantDropped)
			}
			if res.Evidence.Included != tt.wantEvidence {
				t.Errorf("evidence included %v, want %v", res.Evidence.Included, tt.wantEvidence)
			}
			if tt.evidence != nil && (res.Evidence.Version != tt.evidence.Version || res.Evidence.Cursor != tt.evidence.Cursor) {
				t.Errorf("evidence %+v, want version and cursor of %+v", res.Evidence, tt.evidence)
			}
		})
	}
}

func TestBuildBudgetTooSmall(t *testing.T) {
	t.Parallel()
	secret := "the secret plan is to ship on Friday"
	tests := []struct {
		name   string
		system string
		tools  []json.RawMessage
		prompt int
	}{
		{name: "current request", prompt: 10},
		{name: "system text", system: strings.Repeat("rule ", 100), prompt: 60},
		{name: "tool schemas", tools: []json.RawMessage{json.RawMessage(`{"name":"search","description":"` + strings.Repeat("d", 300) + `"}`)}, prompt: 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msgs := decode(t, `[{"id":"u0","role":"user","content":"`+secret+`"}]`)
			_, err := assemble.Build(&assemble.Request{Messages: msgs, System: tt.system, Tools: tt.tools, Budget: budget(tt.prompt)})
			if !errors.Is(err, assemble.ErrBudgetTooSmall) {
				t.Fatalf("Build = %v, want budget_too_small", err)
			}
			var e *assemble.Error
			if !errors.As(err, &e) || !e.Unprocessable() {
				t.Errorf("budget_too_small is not unprocessable")
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "rule") {
				t.Errorf("the error quotes input text: %v", err)
			}
		})
	}
}

func TestBuildImages(t *testing.T) {
	t.Parallel()
	msgs := decode(t, `[
		{"id":"u0","role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
		{"id":"a0","role":"assistant","content":"A cat."},
		{"id":"u1","role":"user","content":[{"type":"text","text":"And this?"},  {"type":"image_url","image_url":{"url":"data:image/png;base64,BBBB"}}]}]`)
	req := &assemble.Request{Messages: msgs, Budget: assemble.DefaultBudget()}
	res, err := assemble.Build(req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, req, res)
	old, cur := res.Messages[0], res.Messages[2]
	if strings.Contains(string(old.Content), "AAAA") || !strings.Contains(string(old.Content), "[image omitted]") {
		t.Errorf("older image not replaced by a placeholder: %s", old.Content)
	}
	if string(cur.Content) != string(msgs[2].Content) {
		t.Errorf("current request changed: %s", cur.Content)
	}
	if want := evidence.EstimateTokens(len("And this?")) + assemble.DefaultImageTokens; cur.Tokens != want {
		t.Errorf("current request charged %d, want %d (text and one image)", cur.Tokens, want)
	}
}

func TestBuildShortensOlderToolCallProse(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("I will now look this up in great detail. ", 60)
	msgs := decode(t, `[
		{"id":"u0","role":"user","content":"Look it up."},
		{"id":"a0","role":"assistant","content":"`+long+`","tool_calls":[{"id":"c1","name":"f","args":{}}]},
		{"id":"t1","role":"tool","tool_call_id":"c1","content":"found"},
		{"id":"a1","role":"assistant","content":"`+long+`"},
		{"id":"u1","role":"user","content":"Thanks."}]`)
	req := &assemble.Request{Messages: msgs, Budget: assemble.DefaultBudget()}
	res, err := assemble.Build(req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, req, res)
	prose := contentText(t, &res.Messages[1])
	if len(prose) >= len(long) || !strings.HasPrefix(long, strings.Split(prose, "…")[0]) || !strings.Contains(prose, "characters omitted]") {
		t.Errorf("intermediate prose not a marked excerpt: %.100q", prose)
	}
	if got := contentText(t, &res.Messages[3]); got != long {
		t.Errorf("the final answer was shortened")
	}
}

func TestBuildKeepsBytes(t *testing.T) {
	t.Parallel()
	// Arguments with whitespace and escapes, in the flat, stored and OpenAI
	// forms; the current request with characters JSON may escape.
	msgs := decode(t, `[
		{"id":"u0","role":"user","content":"Find it."},
		{"id":"a0","role":"assistant","content":"","tool_calls":[{"id":"c1","name":"f","args":{ "q" : "a\u00e9<b>",  "n" : 1.50 }}]},
		{"id":"t1","role":"tool","tool_call_id":"c1","content":"ok"},
		{"type":"ai","data":{"id":"a1","content":"","tool_calls":[{"id":"c2","name":"g","args":{"x":[1, 2]}}]}},
		{"type":"tool","data":{"id":"t2","tool_call_id":"c2","content":"ok"}},
		{"id":"a2","role":"assistant","content":"","tool_calls":[{"id":"c3","type":"function","function":{"name":"h","arguments":"{\"y\": true}"}}]},
		{"id":"t3","role":"tool","tool_call_id":"c3","content":"ok"},
		{"id":"u1","role":"user","content":"<b>Now</b> & \"then\" \u2028 ünïcode"}]`)
	req := &assemble.Request{Messages: msgs, Budget: assemble.DefaultBudget()}
	res, err := assemble.Build(req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, req, res)
	out := string(res.AppendJSON(nil))
	for _, want := range []string{`{ "q" : "a\u00e9<b>",  "n" : 1.50 }`, `{"x":[1, 2]}`, `{"y": true}`, `"<b>Now</b> & \"then\"`} {
		if !strings.Contains(out, want) {
			t.Errorf("response lacks %s", want)
		}
	}
}

func TestBuildInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		messages  string
		budget    func(*assemble.Budget)
		tools     []json.RawMessage
		wantCode  string
		wantField string
	}{
		{name: "no user message", messages: `[{"role":"assistant","content":"hi"}]`, wantCode: assemble.CodeNoUserMessage, wantField: "messages"},
		{name: "only a non-chat user message", messages: `[{"role":"user","type":"status","content":"typing"}]`, wantCode: assemble.CodeNoUserMessage, wantField: "messages"},
		{name: "negative reserve", budget: func(b *assemble.Budget) { b.SafetyReserve = -1 }, wantCode: assemble.CodeInvalidBudget, wantField: "budget.safety_reserve"},
		{name: "absurd window", budget: func(b *assemble.Budget) { b.ContextWindow = 1 << 40 }, wantCode: assemble.CodeInvalidBudget, wantField: "budget.context_window"},
		{name: "zero prompt", budget: func(b *assemble.Budget) { b.Prompt = 0 }, wantCode: assemble.CodeInvalidBudget, wantField: "budget.prompt"},
		{name: "reserves eat the window", budget: func(b *assemble.Budget) { b.ContextWindow = 4000 }, wantCode: assemble.CodeInvalidBudget, wantField: "budget.context_window"},
		{name: "tiny per-result limit", budget: func(b *assemble.Budget) { b.ToolResultTokens = 5 }, wantCode: assemble.CodeInvalidBudget, wantField: "budget.tool_result_tokens"},
		{name: "tool schema not an object", tools: []json.RawMessage{json.RawMessage(`{"name":"a"}`), json.RawMessage(`[1]`)}, wantCode: assemble.CodeInvalidRequest, wantField: "tools[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msgs := tt.messages
			if msgs == "" {
				msgs = history
			}
			b := assemble.DefaultBudget()
			if tt.budget != nil {
				tt.budget(&b)
			}
			_, err := assemble.Build(&assemble.Request{Messages: decode(t, msgs), Budget: b, Tools: tt.tools})
			var e *assemble.Error
			if !errors.As(err, &e) || e.Code != tt.wantCode || e.Field != tt.wantField {
				t.Fatalf("Build = %v, want %s on %s", err, tt.wantCode, tt.wantField)
			}
			if e.Unprocessable() {
				t.Errorf("%s is unprocessable, want a bad request", e.Code)
			}
		})
	}
}

func TestDecodeBody(t *testing.T) {
	t.Parallel()
	secret := "my password is hunter2"
	tests := []struct {
		name      string
		body      string
		wantCode  string
		wantField string
	}{
		{name: "not an object", body: `[1]`, wantCode: assemble.CodeInvalidRequest},
		{name: "not JSON", body: `{"messages":`, wantCode: assemble.CodeInvalidRequest},
		{name: "no messages", body: `{}`, wantCode: assemble.CodeInvalidMessages, wantField: "messages"},
		{name: "messages not a list", body: `{"messages":{}}`, wantCode: assemble.CodeInvalidMessages, wantField: "messages"},
		{name: "unknown role", body: `{"messages":[{"role":"wizard","content":"` + secret + `"}]}`, wantCode: assemble.CodeInvalidMessages, wantField: "messages"},
		{name: "system not a string", body: `{"messages":[],"system":1}`, wantCode: assemble.CodeInvalidRequest, wantField: "system"},
		{name: "tools not a list", body: `{"messages":[],"tools":{}}`, wantCode: assemble.CodeInvalidRequest, wantField: "tools"},
		{name: "negative budget", body: `{"messages":[],"budget":{"prompt":-5}}`, wantCode: assemble.CodeInvalidBudget, wantField: "budget.prompt"},
		{name: "fractional budget", body: `{"messages":[],"budget":{"response_reserve":1.5}}`, wantCode: assemble.CodeInvalidBudget, wantField: "budget.response_reserve"},
		{name: "absurd budget", body: `{"messages":[],"budget":{"context_window":1e12}}`, wantCode: assemble.CodeInvalidBudget, wantField: "budget.context_window"},
		{name: "unknown budget field", body: `{"messages":[],"budget":{"promt":100}}`, wantCode: assemble.CodeInvalidBudget, wantField: "budget"},
		{name: "budget not an object", body: `{"messages":[],"budget":5}`, wantCode: assemble.CodeInvalidBudget, wantField: "budget"},
		{name: "evidence with the user role", body: `{"messages":[],"evidence":{"role":"user","content":"x"}}`, wantCode: assemble.CodeInvalidRequest, wantField: "evidence.message.role"},
		{name: "evidence a number", body: `{"messages":[],"evidence":3}`, wantCode: assemble.CodeInvalidRequest, wantField: "evidence"},
		{name: "negative min_cursor", body: `{"messages":[],"min_cursor":-1}`, wantCode: assemble.CodeInvalidRequest, wantField: "min_cursor"},
		{name: "wait an object", body: `{"messages":[],"wait":{}}`, wantCode: assemble.CodeInvalidRequest, wantField: "wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := assemble.DecodeBody([]byte(tt.body))
			var e *assemble.Error
			if !errors.As(err, &e) || e.Code != tt.wantCode || e.Field != tt.wantField {
				t.Fatalf("DecodeBody = %v, want %s on %q", err, tt.wantCode, tt.wantField)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error quotes message text: %v", err)
			}
		})
	}
}

func TestDecodeBodyDefaults(t *testing.T) {
	t.Parallel()
	body, err := assemble.DecodeBody([]byte(`{"messages":[{"role":"user","content":"hi"}],"budget":{"prompt":8000,"safety_reserve":0},"min_cursor":3,"wait":"2s"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := assemble.DefaultBudget()
	want.Prompt, want.SafetyReserve = 8000, 0
	if diff := cmp.Diff(want, body.Request.Budget); diff != "" {
		t.Errorf("budget (-want +got):\n%s", diff)
	}
	if !body.FetchEvidence || body.MinCursor != 3 || body.Wait != "2s" {
		t.Errorf("fetch %v min_cursor %d wait %q", body.FetchEvidence, body.MinCursor, body.Wait)
	}
	body, err = assemble.DecodeBody([]byte(`{"messages":[],"evidence":false,"wait":1.5}`))
	if err != nil || body.FetchEvidence || body.Wait != "1.5" {
		t.Errorf("evidence false, wait 1.5: %+v, %v", body, err)
	}
	// A read API response as the evidence.
	body, err = assemble.DecodeBody([]byte(`{"messages":[],"evidence":{"version":7,"cursor":5,"message":{"role":"assistant","content":"E"},"lagging":true}}`))
	if err != nil || body.FetchEvidence || body.Request.Evidence == nil {
		t.Fatalf("evidence response: %+v, %v", body, err)
	}
	if ev := body.Request.Evidence; ev.Version != 7 || ev.Cursor != 5 || !ev.Lagging || ev.Message.Content != "E" {
		t.Errorf("evidence %+v", ev)
	}
}

// TestComplement checks that the evidence beside the history is chosen
// from the messages older than the oldest one kept: Build asks for it with
// that index and the current request, within the room left, and does not
// ask when the whole history fits.
func TestComplement(t *testing.T) {
	t.Parallel()
	var raw []string
	for i := range 12 {
		raw = append(raw,
			fmt.Sprintf(`{"id":"u%d","role":"user","content":%q}`, i, strings.Repeat("question ", 30)),
			fmt.Sprintf(`{"id":"a%d","role":"assistant","content":%q}`, i, strings.Repeat("answer ", 30)))
	}
	raw = append(raw, `{"id":"now","role":"user","content":"what did we decide?"}`)
	msgs := decode(t, "["+strings.Join(raw, ",")+"]")
	full := evidenceOf(`{"stand-in":"` + strings.Repeat("x", 600) + `"}`)

	var gotRequest string
	gotBefore, gotMax, calls := -1, 0, 0
	req := &assemble.Request{Messages: msgs, Budget: budget(900), Evidence: full,
		Complement: func(request string, before, maxTokens int) (*evidence.EvidenceMessage, error) {
			calls++
			gotRequest, gotBefore, gotMax = request, before, maxTokens
			return &evidence.EvidenceMessage{Role: checkpoint.RoleAssistant, Content: "older only"}, nil
		}}
	res, err := assemble.Build(req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, req, res)
	kept := ids(res)
	oldest := -1
	for i, m := range msgs {
		if slices.Contains(kept, m.ID) {
			oldest = i
			break
		}
	}
	if calls != 1 || gotRequest != "what did we decide?" || gotBefore != oldest || oldest <= 0 {
		t.Fatalf("Complement called %d times with %q, before %d; want once with the request, before %d (the oldest kept)", calls, gotRequest, gotBefore, oldest)
	}
	if gotMax < evidence.EstimateTokens(len(full.Message.Content)) || res.Tokens.Total > res.Limit {
		t.Errorf("Complement may take %d tokens, less than the %d reserved (total %d of %d)", gotMax, evidence.EstimateTokens(len(full.Message.Content)), res.Tokens.Total, res.Limit)
	}
	if !res.Evidence.Included || contentText(t, &res.Messages[0]) != "older only" {
		t.Errorf("the evidence message is not the complement's: included %v", res.Evidence.Included)
	}

	// The whole history fits: nothing is older, so no evidence.
	calls = 0
	req.Messages = msgs[len(msgs)-5:]
	res, err = assemble.Build(req)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 0 || res.Evidence.Included {
		t.Errorf("with the whole history kept, Complement called %d times and evidence included %v; want neither", calls, res.Evidence.Included)
	}
}
