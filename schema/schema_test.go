package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/publisher"
)

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(CheckpointV1))
	if err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(CheckpointV1ID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(CheckpointV1ID) // also checks it against the 2020-12 metaschema
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return sch
}

func schemaValid(t *testing.T, sch *jsonschema.Schema, data string) (bool, error) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(data))
	if err != nil {
		return false, err
	}
	err = sch.Validate(inst)
	return err == nil, err
}

func parserValid(data string) (bool, error) {
	_, err := checkpoint.ParseEvent([]byte(data), checkpoint.Limits{})
	return err == nil, err
}

// fields is an event under construction: field name to raw JSON.
type fields map[string]string

func (f fields) with(kv ...string) fields {
	out := maps.Clone(f)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func (f fields) without(keys ...string) fields {
	out := maps.Clone(f)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

func (f fields) String() string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for _, k := range []string{"schema", "kind", "event_id", "user_id", "conversation_id", "offset", "prefix_digest", "messages"} {
		if v, ok := f[k]; ok {
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(`"` + k + `":` + v)
		}
	}
	for k, v := range f {
		switch k {
		case "schema", "kind", "event_id", "user_id", "conversation_id", "offset", "prefix_digest", "messages":
			continue
		}
		b.WriteString(`,"` + k + `":` + v)
	}
	b.WriteByte('}')
	return b.String()
}

var base = fields{
	"schema":          `"recall.checkpoint.v1"`,
	"kind":            `"snapshot"`,
	"event_id":        `"e-1"`,
	"user_id":         `"u-42"`,
	"conversation_id": `"c-7"`,
	"offset":          `0`,
	"prefix_digest":   `null`,
	"messages":        `[{"id":"m0","role":"user","content":"We must ship by Friday."}]`,
}

// withMessages returns the base snapshot carrying msgs.
func withMessages(msgs ...string) fields {
	return base.with("messages", "["+strings.Join(msgs, ",")+"]")
}

const user = `{"id":"m0","role":"user","content":"hi"}`

// appendSample returns an append event at offset 2 of a history, with the
// right prefix digest.
func appendSample(t *testing.T) fields {
	t.Helper()
	history := `[{"id":"m0","role":"user","content":"We must ship by Friday."},` +
		`{"type":"ai","data":{"id":"m1","content":"Agreed: we'll use Postgres."}}]`
	msgs, err := checkpoint.DecodeMessages([]byte(history))
	if err != nil {
		t.Fatal(err)
	}
	d, err := checkpoint.PrefixDigest(msgs, 2)
	if err != nil {
		t.Fatal(err)
	}
	return base.with("offset", "2", "prefix_digest", `"`+d.String()+`"`,
		"messages", `[{"id":"m2","role":"user","content":"Next, draft the schema."}]`)
}

// corpusSample wraps a corpus file ({"user_id","conversation_id","messages"})
// as a snapshot event.
func corpusSample(t *testing.T, name string) fields {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return base.with("user_id", string(c["user_id"]), "conversation_id", string(c["conversation_id"]), "messages", string(c["messages"]))
}

type sample struct {
	name  string
	event string
	valid bool
}

func samples(t *testing.T) []sample {
	c0 := `"` + checkpoint.ChainStart().String() + `"`
	valid := func(name string, f fmt.Stringer) sample { return sample{name, f.String(), true} }
	invalid := func(name string, f fmt.Stringer) sample { return sample{name, f.String(), false} }
	return []sample{
		// Valid events.
		valid("corpus planning.json", corpusSample(t, "planning.json")),
		valid("corpus coding.json", corpusSample(t, "coding.json")),
		valid("contract example", withMessages(
			`{"id":"m0","role":"user","content":"We must ship by Friday."}`,
			`{"id":"m1","role":"assistant","content":"","tool_calls":[{"id":"t1","name":"search","args":{}}]}`,
			`{"id":"m2","role":"tool","tool_call_id":"t1","content":"{}","artifact":{"rows":[]}}`,
			`{"id":"m3","role":"assistant","content":"Agreed: we'll use Postgres."}`,
			`{"id":"m4","role":"user","content":"Next, draft the schema."}`)),
		valid("flat: content parts", withMessages(`{"id":"m0","role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},"odd",3]}`)),
		valid("flat: role aliases in any case", withMessages(`{"role":"human","content":"a"}`, `{"role":"AI","content":"b"}`, `{"role":"Developer","content":"c"}`, `{"role":"function","content":"d"}`)),
		valid("flat: channel types", withMessages(`{"role":"assistant","type":"thinking","content":"a"}`, `{"role":"assistant","type":"chat","content":"b"}`, `{"role":"user","type":null,"content":"c"}`)),
		valid("flat: nulls read as absent", withMessages(`{"id":null,"role":"user","content":null,"tool_calls":null,"tool_call_id":null,"name":null,"artifact":null}`)),
		valid("flat: OpenAI tool calls", withMessages(`{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"search","arguments":"{\"q\":1}"}}]}`)),
		valid("flat: tool calls elsewhere", withMessages(`{"role":"assistant","content":"a","invalid_tool_calls":[{"id":"x"}],"additional_kwargs":{"tool_calls":[{"id":"t"}]}}`, `{"role":"assistant","content":"b","additional_kwargs":"ignored"}`)),
		valid("stored: four types", withMessages(
			`{"type":"human","data":{"id":"m0","content":"a","additional_kwargs":{},"response_metadata":{}}}`,
			`{"type":"ai","data":{"id":"m1","content":"","tool_calls":[{"id":"t1","name":"search","args":{"q":"x"},"type":"tool_call"}],"usage_metadata":{"input_tokens":3}}}`,
			`{"type":"tool","data":{"id":"m2","content":"{}","tool_call_id":"t1","artifact":[1,2]}}`,
			`{"type":"system","data":{"content":"be brief"}}`)),
		valid("stored: chat with a role", withMessages(`{"type":"chat","data":{"role":"user","content":"a"}}`)),
		valid("constructor: message classes", withMessages(
			`{"lc":1,"type":"constructor","id":["langchain_core","messages","HumanMessage"],"kwargs":{"id":"m0","content":"a"}}`,
			`{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessageChunk"],"kwargs":{"content":"b","tool_calls":[]}}`,
			`{"lc":1,"type":"constructor","id":["langchain","schema","messages","ToolMessage"],"kwargs":{"content":"c","tool_call_id":"t1"}}`,
			`{"lc":1,"type":"constructor","id":["SystemMessage"],"kwargs":{"content":"d"}}`)),
		valid("constructor: chat message with a role", withMessages(`{"lc":1,"type":"constructor","id":["langchain_core","messages","ChatMessage"],"kwargs":{"role":"assistant","content":"a"}}`)),
		valid("forms mixed", withMessages(user, `{"type":"ai","data":{"content":"b"}}`, `{"lc":1,"type":"constructor","id":["HumanMessage"],"kwargs":{"content":"c"}}`)),
		valid("append event", appendSample(t)),
		valid("offset 0 with the digest of the empty prefix", base.with("prefix_digest", c0)),
		valid("kind, offset and prefix_digest absent", base.without("kind", "offset", "prefix_digest")),
		valid("kind and offset null", base.with("kind", "null", "offset", "null")),
		valid("kind empty", base.with("kind", `""`)),
		valid("empty history", base.with("messages", "[]")),
		valid("unknown fields are ignored", base.with("trace_id", `"abc"`)),
		valid("delete", base.with("kind", `"delete"`).without("offset", "prefix_digest", "messages")),
		valid("delete with empty messages", base.with("kind", `"delete"`, "messages", "[]")),
		valid("delete with null messages", base.with("kind", `"delete"`, "messages", "null")),
		valid("ids of 256 and 1,024 ASCII bytes", base.with("user_id", `"`+strings.Repeat("u", 256)+`"`, "event_id", `"`+strings.Repeat("e", 1024)+`"`)),

		// Invalid events: the event.
		invalid("schema missing", base.without("schema")),
		invalid("schema null", base.with("schema", "null")),
		invalid("schema of another version", base.with("schema", `"recall.checkpoint.v2"`)),
		invalid("schema a number", base.with("schema", "1")),
		invalid("kind unknown", base.with("kind", `"update"`)),
		invalid("kind a number", base.with("kind", "1")),
		invalid("event_id missing", base.without("event_id")),
		invalid("event_id empty", base.with("event_id", `""`)),
		invalid("event_id a number", base.with("event_id", "7")),
		invalid("event_id of 1,025 bytes", base.with("event_id", `"`+strings.Repeat("e", 1025)+`"`)),
		invalid("user_id missing", base.without("user_id")),
		invalid("user_id null", base.with("user_id", "null")),
		invalid("user_id empty", base.with("user_id", `""`)),
		invalid("user_id a number", base.with("user_id", "42")),
		invalid("user_id of 257 bytes", base.with("user_id", `"`+strings.Repeat("u", 257)+`"`)),
		invalid("conversation_id with NUL", base.with("conversation_id", `"c\u00007"`)),
		invalid("conversation_id missing", base.without("conversation_id")),
		invalid("offset negative", base.with("offset", "-1")),
		invalid("offset a string", base.with("offset", `"2"`)),
		invalid("offset a fraction", appendSample(t).with("offset", "1.5")),
		invalid("append without prefix_digest", appendSample(t).without("prefix_digest")),
		invalid("append with prefix_digest null", appendSample(t).with("prefix_digest", "null")),
		invalid("snapshot with another digest", base.with("prefix_digest", `"`+strings.Repeat("ab", 32)+`"`)),
		invalid("digest in upper case", appendSample(t).with("prefix_digest", `"`+strings.ToUpper(strings.Repeat("ab", 32))+`"`)),
		invalid("digest too short", appendSample(t).with("prefix_digest", `"abc"`)),
		invalid("digest not hex", appendSample(t).with("prefix_digest", `"`+strings.Repeat("zz", 32)+`"`)),
		invalid("digest a number", appendSample(t).with("prefix_digest", "1")),
		invalid("messages missing", base.without("messages")),
		invalid("messages null", base.with("messages", "null")),
		invalid("messages an object", base.with("messages", "{}")),
		invalid("messages a string", base.with("messages", `"hi"`)),
		invalid("delete with messages", base.with("kind", `"delete"`)),
		invalid("delete with messages an object", base.with("kind", `"delete"`, "messages", "{}")),

		// Invalid events: a message.
		invalid("message a string", withMessages(`"hi"`)),
		invalid("message a list", withMessages(`[]`)),
		invalid("message null", withMessages(`null`)),
		invalid("message of no form", withMessages(`{"id":"m0","content":"hi"}`)),
		invalid("role unknown", withMessages(`{"role":"robot","content":"hi"}`)),
		invalid("role a number", withMessages(`{"role":1,"content":"hi"}`)),
		invalid("role null", withMessages(`{"role":null,"content":"hi"}`)),
		invalid("role empty", withMessages(`{"role":"","content":"hi"}`)),
		invalid("content a number", withMessages(`{"role":"user","content":42}`)),
		invalid("content an object", withMessages(`{"role":"user","content":{"text":"hi"}}`)),
		invalid("content a boolean", withMessages(`{"role":"user","content":true}`)),
		invalid("id a number", withMessages(`{"id":7,"role":"user","content":"hi"}`)),
		invalid("tool_call_id a number", withMessages(`{"role":"tool","tool_call_id":7,"content":"hi"}`)),
		invalid("name a list", withMessages(`{"role":"user","name":[],"content":"hi"}`)),
		invalid("type a number", withMessages(`{"role":"user","type":1,"content":"hi"}`)),
		invalid("tool_calls an object", withMessages(`{"role":"assistant","tool_calls":{}}`)),
		invalid("tool call a string", withMessages(`{"role":"assistant","tool_calls":["search"]}`)),
		invalid("tool call id a number", withMessages(`{"role":"assistant","tool_calls":[{"id":1,"name":"search"}]}`)),
		invalid("tool call name a number", withMessages(`{"role":"assistant","tool_calls":[{"id":"t","name":1}]}`)),
		invalid("OpenAI tool call name a number", withMessages(`{"role":"assistant","tool_calls":[{"id":"t","function":{"name":1,"arguments":"{}"}}]}`)),
		invalid("invalid_tool_calls an object", withMessages(`{"role":"assistant","invalid_tool_calls":{}}`)),
		invalid("additional_kwargs.tool_calls a string", withMessages(`{"role":"assistant","content":"a","additional_kwargs":{"tool_calls":"x"}}`)),
		invalid("stored: unknown type", withMessages(`{"type":"robot","data":{"content":"hi"}}`)),
		invalid("stored: type missing", withMessages(`{"data":{"content":"hi"}}`)),
		invalid("stored: type a number", withMessages(`{"type":1,"data":{"content":"hi"}}`)),
		invalid("stored: data a string", withMessages(`{"type":"human","data":"hi"}`)),
		invalid("stored: chat without a role", withMessages(`{"type":"chat","data":{"content":"hi"}}`)),
		invalid("stored: chat with an unknown role", withMessages(`{"type":"chat","data":{"role":"robot","content":"hi"}}`)),
		invalid("stored: content a number", withMessages(`{"type":"human","data":{"content":1}}`)),
		invalid("constructor: kwargs missing", withMessages(`{"lc":1,"type":"constructor","id":["HumanMessage"]}`)),
		invalid("constructor: kwargs a string", withMessages(`{"lc":1,"type":"constructor","id":["HumanMessage"],"kwargs":"hi"}`)),
		invalid("constructor: id empty", withMessages(`{"lc":1,"type":"constructor","id":[],"kwargs":{"content":"hi"}}`)),
		invalid("constructor: id a string", withMessages(`{"lc":1,"type":"constructor","id":"HumanMessage","kwargs":{"content":"hi"}}`)),
		invalid("constructor: unknown class", withMessages(`{"lc":1,"type":"constructor","id":["langchain","FooMessage"],"kwargs":{"content":"hi"}}`)),
		invalid("constructor: chat message without a role", withMessages(`{"lc":1,"type":"constructor","id":["ChatMessage"],"kwargs":{"content":"hi"}}`)),
		invalid("constructor: message id a number", withMessages(`{"lc":1,"type":"constructor","id":["HumanMessage"],"kwargs":{"id":1,"content":"hi"}}`)),
	}
}

func TestSchemaAgreesWithParseEvent(t *testing.T) {
	t.Parallel()
	sch := compile(t)
	all := samples(t)
	all = append(all,
		sample{"event a list", `[]`, false},
		sample{"event a string", `"recall.checkpoint.v1"`, false},
		sample{"event null", `null`, false},
	)
	var nValid, nInvalid int
	for _, s := range all {
		if !json.Valid([]byte(s.event)) {
			t.Errorf("%s: the sample is not JSON: %s", s.name, s.event)
			continue
		}
		gotSchema, schemaErr := schemaValid(t, sch, s.event)
		gotParser, parserErr := parserValid(s.event)
		if gotSchema != s.valid {
			t.Errorf("%s: schema says valid=%v, want %v (%v)\n%s", s.name, gotSchema, s.valid, schemaErr, s.event)
		}
		if gotParser != s.valid {
			t.Errorf("%s: evidence.ParseEvent says valid=%v, want %v (%v)\n%s", s.name, gotParser, s.valid, parserErr, s.event)
		}
		if s.valid {
			nValid++
		} else {
			nInvalid++
		}
	}
	t.Logf("%d valid and %d invalid samples agree", nValid, nInvalid)
}

// TestDocumentedExceptions pins where the schema and checkpoint.ParseEvent
// differ, as the schema's $comment lists them. When one side changes, the
// test says so: update the schema, its comment and this list.
func TestDocumentedExceptions(t *testing.T) {
	t.Parallel()
	sch := compile(t)
	app := appendSample(t)
	tests := []struct {
		name        string
		event       string
		wantSchema  bool
		wantParser  bool
		commentMark string // the $comment item that documents it
	}{
		{"user_id of 200 characters, 400 bytes", base.with("user_id", `"`+strings.Repeat("é", 200)+`"`).String(), true, false, "(1)"},
		{"event_id of 600 characters, 1,200 bytes", base.with("event_id", `"`+strings.Repeat("é", 600)+`"`).String(), true, false, "(1)"},
		{"offset 2.0", app.with("offset", "2.0").String(), true, false, "(3)"},
		{"offset 2e0", app.with("offset", "2e0").String(), true, false, "(3)"},
		{"offset 1e20", app.with("offset", "1e20").String(), true, false, "(3)"},
		{"delete with offset a string", base.with("kind", `"delete"`, "offset", `"x"`).without("messages").String(), false, true, "(4)"},
		{"delete with a bad digest", base.with("kind", `"delete"`, "prefix_digest", `"bad"`).without("messages").String(), false, true, "(4)"},
		{"constructor class not last in id", withMessages(`{"lc":1,"type":"constructor","id":["HumanMessage","extra"],"kwargs":{"content":"hi"}}`).String(), true, false, "(5)"},
		{"artifact number beyond a double", withMessages(`{"role":"tool","content":"x","artifact":1e999}`).String(), true, false, "(6)"},
		{"null in a constructor id", withMessages(`{"lc":1,"type":"constructor","id":[null,"HumanMessage"],"kwargs":{"content":"hi"}}`).String(), false, true, "(7)"},
		{"role with a Unicode capital", withMessages(`{"role":"A\u0130","content":"hi"}`).String(), false, true, "(8)"},
	}
	for _, tt := range tests {
		gotSchema, schemaErr := schemaValid(t, sch, tt.event)
		gotParser, parserErr := parserValid(tt.event)
		if gotSchema != tt.wantSchema || gotParser != tt.wantParser {
			t.Errorf("%s: schema valid=%v (%v), parser valid=%v (%v); documented as schema %v, parser %v",
				tt.name, gotSchema, schemaErr, gotParser, parserErr, tt.wantSchema, tt.wantParser)
		}
		if !strings.Contains(CheckpointV1, tt.commentMark) {
			t.Errorf("%s: the schema's $comment lacks item %s", tt.name, tt.commentMark)
		}
	}
}

// Events built by the publisher package pass the schema.
func TestPublisherEventsPassSchema(t *testing.T) {
	t.Parallel()
	sch := compile(t)
	data, err := os.ReadFile(filepath.Join("testdata", "planning.json"))
	if err != nil {
		t.Fatal(err)
	}
	var corpus struct {
		UserID         string            `json:"user_id"`
		ConversationID string            `json:"conversation_id"`
		Messages       []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &corpus); err != nil {
		t.Fatal(err)
	}
	var events []*publisher.Event
	for k := 0; k <= len(corpus.Messages); k += 3 {
		ev, err := publisher.NewAppend(corpus.UserID, corpus.ConversationID, corpus.Messages, k)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	del, err := publisher.NewDelete(corpus.UserID, corpus.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	events = append(events, del)
	for i, ev := range events {
		ev.EventID = "e"
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := schemaValid(t, sch, string(b)); !ok {
			t.Errorf("event %d (offset %d, kind %s): %v", i, ev.Offset, ev.Kind, err)
		}
	}
}
