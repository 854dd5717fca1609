package checkpoint_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// messageView is a Message with its raw JSON compacted, so that expectations
// need not match the input's whitespace.
type messageView struct {
	Role         checkpoint.Role
	ID           string
	Type         string
	Content      string
	ToolCalls    []toolCallView
	ToolCallID   string
	Artifact     string
	Text         string
	HasToolCalls bool
	Form         checkpoint.Form
}

type toolCallView struct{ ID, Name, Args string }

func compact(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	out, err := compactJSON(raw)
	if err != nil {
		return "INVALID:" + string(raw)
	}
	return string(out)
}

func compactJSON(raw []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func view(m checkpoint.Message) messageView {
	v := messageView{
		Role: m.Role, ID: m.ID, Type: m.Type, Content: compact(m.Content), ToolCallID: m.ToolCallID,
		Artifact: compact(m.Artifact), Text: m.Text, HasToolCalls: m.HasToolCalls, Form: m.Form,
	}
	for _, c := range m.ToolCalls {
		v.ToolCalls = append(v.ToolCalls, toolCallView{c.ID, c.Name, compact(c.Args)})
	}
	return v
}

// decodeTests are shared with FuzzDecodeMessage as seeds.
var decodeTests = []struct {
	name string
	in   string
	want messageView
}{
	{
		name: "flat user string",
		in:   `{"id":"m0","role":"user","content":"We must ship by Friday."}`,
		want: messageView{Role: checkpoint.RoleUser, ID: "m0", Type: "chat", Content: `[{"text":"We must ship by Friday.","type":"text"}]`, Artifact: "null", Text: "We must ship by Friday."},
	},
	{
		name: "flat alias human",
		in:   `{"id":"m0","role":"human","content":"hi"}`,
		want: messageView{Role: checkpoint.RoleUser, ID: "m0", Type: "chat", Content: `[{"text":"hi","type":"text"}]`, Artifact: "null", Text: "hi"},
	},
	{
		name: "flat alias ai",
		in:   `{"id":"m1","role":"ai","content":"hello"}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[{"text":"hello","type":"text"}]`, Artifact: "null", Text: "hello"},
	},
	{
		name: "flat system without id",
		in:   `{"role":"system","content":"You are helpful."}`,
		want: messageView{Role: checkpoint.RoleSystem, Type: "chat", Content: `[{"text":"You are helpful.","type":"text"}]`, Artifact: "null", Text: "You are helpful."},
	},
	{
		name: "flat tool with artifact",
		in:   `{"id":"m2","role":"tool","tool_call_id":"t1","name":"search","content":"{\"n\":1}","artifact":{"rows":[1,2]}}`,
		want: messageView{Role: checkpoint.RoleTool, ID: "m2", Type: "chat", Content: `[{"text":"{\"n\":1}","type":"text"}]`, ToolCallID: "t1", Artifact: `{"rows":[1,2]}`, Text: `{"n":1}`},
	},
	{
		name: "flat explicit null artifact and null ids",
		in:   `{"id":null,"role":"tool","tool_call_id":null,"content":"x","artifact":null}`,
		want: messageView{Role: checkpoint.RoleTool, Type: "chat", Content: `[{"text":"x","type":"text"}]`, Artifact: "null", Text: "x"},
	},
	{
		name: "flat type chat",
		in:   `{"id":"m0","role":"user","type":"chat","content":"hi"}`,
		want: messageView{Role: checkpoint.RoleUser, ID: "m0", Type: "chat", Content: `[{"text":"hi","type":"text"}]`, Artifact: "null", Text: "hi"},
	},
	{
		name: "flat type null is chat",
		in:   `{"id":"m0","role":"user","type":null,"content":"hi"}`,
		want: messageView{Role: checkpoint.RoleUser, ID: "m0", Type: "chat", Content: `[{"text":"hi","type":"text"}]`, Artifact: "null", Text: "hi"},
	},
	{
		name: "flat type thinking",
		in:   `{"id":"m7","role":"assistant","type":"thinking","content":"hmm"}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m7", Type: "thinking", Content: `[{"text":"hmm","type":"text"}]`, Artifact: "null", Text: "hmm"},
	},
	{
		name: "empty and null content",
		in:   `{"id":"m1","role":"assistant","content":""}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[]`, Artifact: "null"},
	},
	{
		name: "null content",
		in:   `{"id":"m1","role":"assistant","content":null}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[]`, Artifact: "null"},
	},
	{
		name: "absent content",
		in:   `{"id":"m1","role":"assistant"}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[]`, Artifact: "null"},
	},
	{
		name: "content parts joined with newline, non-text parts ignored",
		in:   `{"id":"m7","role":"user","content":[{"type":"text","text":"first"},{"type":"image_url","image_url":{"url":"data:x"}},"loose string",{"type":"text","text":"second"},{"type":"text"},{"text":"no type"}]}`,
		want: messageView{
			Role: checkpoint.RoleUser, ID: "m7", Type: "chat",
			Content:  `[{"text":"first","type":"text"},{"image_url":{"url":"data:x"},"type":"image_url"},"loose string",{"text":"second","type":"text"},{"type":"text"},{"text":"no type"}]`,
			Artifact: "null", Text: "first\nsecond",
		},
	},
	{
		name: "empty content list",
		in:   `{"id":"m7","role":"user","content":[]}`,
		want: messageView{Role: checkpoint.RoleUser, ID: "m7", Type: "chat", Content: `[]`, Artifact: "null"},
	},
	{
		name: "langchain tool calls",
		in:   `{"id":"m1","role":"assistant","content":"","tool_calls":[{"id":"t1","name":"search","args":{"q":"x"},"type":"tool_call"}]}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[]`, ToolCalls: []toolCallView{{"t1", "search", `{"q":"x"}`}}, Artifact: "null", HasToolCalls: true},
	},
	{
		name: "openai tool calls with JSON arguments",
		in:   `{"id":"m1","role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\": \"x\", \"n\": 2}"}}]}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[{"text":"Let me look.","type":"text"}]`, ToolCalls: []toolCallView{{"call_1", "search", `{"n":2,"q":"x"}`}}, Artifact: "null", Text: "Let me look.", HasToolCalls: true},
	},
	{
		name: "openai tool calls with non-JSON arguments",
		in:   `{"id":"m1","role":"assistant","tool_calls":[{"id":"call_1","function":{"name":"search","arguments":"{not json"}}]}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[]`, ToolCalls: []toolCallView{{"call_1", "search", `"{not json"`}}, Artifact: "null", HasToolCalls: true},
	},
	{
		name: "tool call without id, name or args",
		in:   `{"id":"m1","role":"assistant","tool_calls":[{}]}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[]`, ToolCalls: []toolCallView{{"", "", `{}`}}, Artifact: "null", HasToolCalls: true},
	},
	{
		name: "empty tool calls",
		in:   `{"id":"m1","role":"assistant","content":"ok","tool_calls":[],"invalid_tool_calls":[],"additional_kwargs":{"tool_calls":[]}}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[{"text":"ok","type":"text"}]`, Artifact: "null", Text: "ok"},
	},
	{
		name: "invalid tool calls",
		in:   `{"id":"m1","role":"assistant","content":"ok","invalid_tool_calls":[{"name":"x","args":"{","error":"bad"}]}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[{"text":"ok","type":"text"}]`, Artifact: "null", Text: "ok", HasToolCalls: true},
	},
	{
		name: "additional_kwargs tool calls",
		in:   `{"id":"m1","role":"assistant","content":"ok","additional_kwargs":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[{"text":"ok","type":"text"}]`, Artifact: "null", Text: "ok", HasToolCalls: true},
	},
	{
		name: "stored human",
		in:   `{"type":"human","data":{"content":"hi","additional_kwargs":{},"response_metadata":{},"type":"human","name":null,"id":"m0","example":false}}`,
		want: messageView{Role: checkpoint.RoleUser, ID: "m0", Type: "chat", Content: `[{"text":"hi","type":"text"}]`, Artifact: "null", Text: "hi", Form: checkpoint.FormStored},
	},
	{
		name: "stored ai with tool calls and metadata",
		in:   `{"type":"ai","data":{"content":"","type":"ai","id":"m1","tool_calls":[{"name":"search","args":{"q":"x"},"id":"t1","type":"tool_call"}],"invalid_tool_calls":[],"usage_metadata":{"input_tokens":3},"response_metadata":{"model_name":"m"}}}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[]`, ToolCalls: []toolCallView{{"t1", "search", `{"q":"x"}`}}, Artifact: "null", HasToolCalls: true, Form: checkpoint.FormStored},
	},
	{
		name: "stored tool",
		in:   `{"type":"tool","data":{"content":"42","type":"tool","tool_call_id":"t1","artifact":[1],"status":"success","id":"m2"}}`,
		want: messageView{Role: checkpoint.RoleTool, ID: "m2", Type: "chat", Content: `[{"text":"42","type":"text"}]`, ToolCallID: "t1", Artifact: `[1]`, Text: "42", Form: checkpoint.FormStored},
	},
	{
		name: "stored system",
		in:   `{"type":"system","data":{"content":"sys","type":"system"}}`,
		want: messageView{Role: checkpoint.RoleSystem, Type: "chat", Content: `[{"text":"sys","type":"text"}]`, Artifact: "null", Text: "sys", Form: checkpoint.FormStored},
	},
	{
		name: "stored generic chat message",
		in:   `{"type":"chat","data":{"content":"hi","role":"user","id":"m0"}}`,
		want: messageView{Role: checkpoint.RoleUser, ID: "m0", Type: "chat", Content: `[{"text":"hi","type":"text"}]`, Artifact: "null", Text: "hi", Form: checkpoint.FormStored},
	},
	{
		name: "constructor human",
		in:   `{"lc":1,"type":"constructor","id":["langchain_core","messages","HumanMessage"],"kwargs":{"content":"hi","id":"m0","type":"human","additional_kwargs":{},"response_metadata":{}}}`,
		want: messageView{Role: checkpoint.RoleUser, ID: "m0", Type: "chat", Content: `[{"text":"hi","type":"text"}]`, Artifact: "null", Text: "hi", Form: checkpoint.FormConstructor},
	},
	{
		name: "constructor ai with openai tool calls in additional_kwargs only",
		in:   `{"lc":1,"type":"constructor","id":["langchain","schema","messages","AIMessage"],"kwargs":{"content":"checking","id":"m1","additional_kwargs":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[{"text":"checking","type":"text"}]`, Artifact: "null", Text: "checking", HasToolCalls: true, Form: checkpoint.FormConstructor},
	},
	{
		name: "constructor ai chunk",
		in:   `{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessageChunk"],"kwargs":{"content":"partial","id":"m1"}}`,
		want: messageView{Role: checkpoint.RoleAssistant, ID: "m1", Type: "chat", Content: `[{"text":"partial","type":"text"}]`, Artifact: "null", Text: "partial", Form: checkpoint.FormConstructor},
	},
	{
		name: "constructor tool",
		in:   `{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"tool_call_id":"t1","artifact":{"k":"v"}}}`,
		want: messageView{Role: checkpoint.RoleTool, Type: "chat", Content: `[{"text":"a","type":"text"},{"text":"b","type":"text"}]`, ToolCallID: "t1", Artifact: `{"k":"v"}`, Text: "a\nb", Form: checkpoint.FormConstructor},
	},
	{
		name: "constructor system",
		in:   `{"lc":1,"type":"constructor","id":["langchain_core","messages","SystemMessage"],"kwargs":{"content":"sys"}}`,
		want: messageView{Role: checkpoint.RoleSystem, Type: "chat", Content: `[{"text":"sys","type":"text"}]`, Artifact: "null", Text: "sys", Form: checkpoint.FormConstructor},
	},
	{
		name: "whitespace around the object",
		in:   " \n{\"role\":\"user\",\"content\":\"hi\"}\t",
		want: messageView{Role: checkpoint.RoleUser, Type: "chat", Content: `[{"text":"hi","type":"text"}]`, Artifact: "null", Text: "hi"},
	},
}

func TestDecodeMessage(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := checkpoint.DecodeMessage([]byte(tt.in))
			if err != nil {
				t.Fatalf("DecodeMessage: %v", err)
			}
			if diff := cmp.Diff(tt.want, view(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DecodeMessage mismatch (-want +got):\n%s", diff)
			}
			if _, err := got.Digest(); err != nil {
				t.Errorf("Digest: %v", err)
			}
		})
	}
}

// marker is message text that must never appear in an error.
const marker = checkpointtest.Marker

// decodeErrorTests each hold the marker somewhere, often in the offending
// field itself.
var decodeErrorTests = []struct {
	name      string
	in        string
	wantField string
}{
	{name: "not an object", in: `["` + marker + `"]`},
	{name: "a string", in: `"` + marker + `"`},
	{name: "empty", in: ``},
	{name: "truncated", in: `{"role":"user","content":"` + marker},
	{name: "role not a string", in: `{"role":["` + marker + `"],"content":"x"}`, wantField: "role"},
	{name: "unknown role", in: `{"role":"` + marker + `","content":"x"}`, wantField: "role"},
	{name: "id not a string", in: `{"role":"user","id":{"x":"` + marker + `"},"content":"` + marker + `"}`, wantField: "id"},
	{name: "tool_call_id not a string", in: `{"role":"tool","tool_call_id":7,"content":"` + marker + `"}`, wantField: "tool_call_id"},
	{name: "name not a string", in: `{"role":"user","name":["` + marker + `"],"content":"x"}`, wantField: "name"},
	{name: "type not a string", in: `{"role":"user","type":["` + marker + `"],"content":"x"}`, wantField: "type"},
	{name: "content a number", in: `{"role":"user","content":42,"name":"` + marker + `"}`, wantField: "content"},
	{name: "content an object", in: `{"role":"user","content":{"text":"` + marker + `"}}`, wantField: "content"},
	{name: "content true", in: `{"role":"user","content":true}`, wantField: "content"},
	{name: "tool_calls not a list", in: `{"role":"assistant","content":"` + marker + `","tool_calls":{"id":"x"}}`, wantField: "tool_calls"},
	{name: "tool_calls entry not an object", in: `{"role":"assistant","content":"` + marker + `","tool_calls":["` + marker + `"]}`, wantField: "tool_calls"},
	{name: "tool call id not a string", in: `{"role":"assistant","tool_calls":[{"id":1,"name":"` + marker + `"}]}`, wantField: "tool_calls.id"},
	{name: "tool call name not a string", in: `{"role":"assistant","tool_calls":[{"id":"x","name":["` + marker + `"]}]}`, wantField: "tool_calls.name"},
	{name: "function name not a string", in: `{"role":"assistant","tool_calls":[{"id":"x","function":{"name":1,"arguments":"` + marker + `"}}]}`, wantField: "tool_calls.function.name"},
	{name: "invalid_tool_calls not a list", in: `{"role":"assistant","content":"` + marker + `","invalid_tool_calls":"` + marker + `"}`, wantField: "invalid_tool_calls"},
	{name: "additional_kwargs tool_calls not a list", in: `{"role":"assistant","content":"` + marker + `","additional_kwargs":{"tool_calls":{"a":"` + marker + `"}}}`, wantField: "additional_kwargs.tool_calls"},
	{name: "no role and no data", in: `{"content":"` + marker + `"}`, wantField: "role"},
	{name: "stored type not a string", in: `{"type":7,"data":{"content":"` + marker + `"}}`, wantField: "type"},
	{name: "stored unknown type", in: `{"type":"` + marker + `","data":{"content":"` + marker + `"}}`, wantField: "type"},
	{name: "stored chat without role", in: `{"type":"chat","data":{"content":"` + marker + `"}}`, wantField: "type"},
	{name: "stored bad content", in: `{"type":"human","data":{"content":{"x":"` + marker + `"}}}`, wantField: "content"},
	{name: "constructor kwargs not an object", in: `{"lc":1,"type":"constructor","id":["HumanMessage"],"kwargs":"` + marker + `"}`, wantField: "kwargs"},
	{name: "constructor id not a list", in: `{"lc":1,"type":"constructor","id":"HumanMessage","kwargs":{"content":"` + marker + `"}}`, wantField: "id"},
	{name: "constructor empty id", in: `{"lc":1,"type":"constructor","id":[],"kwargs":{"content":"` + marker + `"}}`, wantField: "id"},
	{name: "constructor unknown class", in: `{"lc":1,"type":"constructor","id":["x","` + marker + `"],"kwargs":{"content":"` + marker + `"}}`, wantField: "id"},
	{name: "constructor bad tool calls", in: `{"lc":1,"type":"constructor","id":["AIMessage"],"kwargs":{"content":"` + marker + `","tool_calls":7}}`, wantField: "tool_calls"},
}

func TestDecodeMessageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := checkpoint.DecodeMessage([]byte(tt.in))
			var de *checkpoint.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("DecodeMessage error = %v (%T), want *DecodeError", err, err)
			}
			if de.Field != tt.wantField {
				t.Errorf("Field = %q, want %q", de.Field, tt.wantField)
			}
			if de.Index != -1 {
				t.Errorf("Index = %d, want -1", de.Index)
			}
			if tt.wantField != "" && !strings.Contains(err.Error(), `"`+tt.wantField+`"`) {
				t.Errorf("error %q does not name field %q", err, tt.wantField)
			}
			if strings.Contains(err.Error(), marker) {
				t.Errorf("error %q quotes message text", err)
			}
		})
	}
}

func TestDecodeMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		wantRoles []checkpoint.Role
		wantIndex int // of the *DecodeError, -2 for none
	}{
		{name: "mixed forms", in: `[{"role":"user","content":"a"},{"type":"ai","data":{"content":"b"}},{"lc":1,"type":"constructor","id":["ToolMessage"],"kwargs":{"content":"c"}}]`, wantRoles: []checkpoint.Role{checkpoint.RoleUser, checkpoint.RoleAssistant, checkpoint.RoleTool}, wantIndex: -2},
		{name: "empty", in: `[]`, wantRoles: []checkpoint.Role{}, wantIndex: -2},
		{name: "not a list", in: `{"role":"user"}`, wantIndex: -1},
		{name: "second bad", in: `[{"role":"user","content":"a"},{"role":"` + marker + `"}]`, wantIndex: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := checkpoint.DecodeMessages([]byte(tt.in))
			if tt.wantIndex != -2 {
				var de *checkpoint.DecodeError
				if !errors.As(err, &de) || de.Index != tt.wantIndex {
					t.Fatalf("DecodeMessages error = %v, want *DecodeError at index %d", err, tt.wantIndex)
				}
				if strings.Contains(err.Error(), marker) {
					t.Errorf("error %q quotes message text", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeMessages: %v", err)
			}
			roles := []checkpoint.Role{}
			for _, m := range got {
				roles = append(roles, m.Role)
			}
			if diff := cmp.Diff(tt.wantRoles, roles); diff != "" {
				t.Errorf("roles mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessagePredicates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		in               string
		wantConversation bool
		wantEvidential   bool
		wantRequest      bool
	}{
		{name: "user", in: `{"role":"user","content":"x"}`, wantConversation: true, wantEvidential: true, wantRequest: true},
		{name: "assistant", in: `{"role":"assistant","content":"x"}`, wantConversation: true, wantEvidential: true},
		{name: "assistant with tool calls", in: `{"role":"assistant","content":"x","tool_calls":[{"id":"t","name":"f","args":{}}]}`, wantConversation: true},
		{name: "assistant with invalid tool calls", in: `{"role":"assistant","content":"x","invalid_tool_calls":[{"id":"t"}]}`, wantConversation: true},
		{name: "assistant with additional_kwargs tool calls", in: `{"role":"assistant","content":"x","additional_kwargs":{"tool_calls":[{"id":"t"}]}}`, wantConversation: true},
		{name: "system", in: `{"role":"system","content":"x"}`, wantConversation: true},
		{name: "tool", in: `{"role":"tool","content":"x"}`, wantConversation: true},
		{name: "user thinking", in: `{"role":"user","type":"thinking","content":"x"}`, wantRequest: true},
		{name: "assistant status", in: `{"role":"assistant","type":"status","content":"x"}`},
		{name: "assistant todos", in: `{"role":"assistant","type":"todos","content":"x"}`},
		{name: "assistant error", in: `{"role":"assistant","type":"error","content":"x"}`},
		{name: "user queue_cancel", in: `{"role":"user","type":"queue_cancel","content":"x"}`, wantRequest: true},
		{name: "assistant other", in: `{"role":"assistant","type":"other","content":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := checkpointtest.Decode(t, tt.in)
			if got := m.IsConversation(); got != tt.wantConversation {
				t.Errorf("IsConversation() = %v, want %v", got, tt.wantConversation)
			}
			if got := m.Evidential(); got != tt.wantEvidential {
				t.Errorf("Evidential() = %v, want %v", got, tt.wantEvidential)
			}
			if got := m.IsRequest(); got != tt.wantRequest {
				t.Errorf("IsRequest() = %v, want %v", got, tt.wantRequest)
			}
		})
	}
}

func TestFormString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		form checkpoint.Form
		want string
	}{
		{checkpoint.FormFlat, "flat"},
		{checkpoint.FormStored, "langchain_stored"},
		{checkpoint.FormConstructor, "langchain_constructor"},
	}
	for _, tt := range tests {
		if got := tt.form.String(); got != tt.want {
			t.Errorf("Form(%d).String() = %q, want %q", tt.form, got, tt.want)
		}
	}
}
