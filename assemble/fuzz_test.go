package assemble_test

import (
	"encoding/json"
	"testing"

	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/checkpoint"
)

// FuzzBuild decodes arbitrary bodies and builds what decodes: no panic, and
// every result is valid JSON within its limit.
func FuzzBuild(f *testing.F) {
	for _, s := range []string{
		`{"messages":` + history + `}`,
		`{"messages":[{"role":"user","content":"hi"}],"system":"s","tools":[{"name":"t"}],"budget":{"prompt":30}}`,
		`{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"","tool_calls":[{"id":"c","name":"f","args":{}}]},{"role":"tool","tool_call_id":"c","content":"{\"rows\":[{\"id\":1,\"text\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"},{\"id\":2}],\"total\":3}"}],"budget":{"tool_result_tokens":64}}`,
		`{"messages":[{"type":"human","data":{"content":[{"type":"text","text":"a"},{"type":"image_url"}]}}],"evidence":{"role":"assistant","content":"e"}}`,
		`{"messages":[],"budget":{"prompt":-5}}`,
		`{"messages":[{"role":"wizard"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		body, err := assemble.DecodeBody(data)
		if err != nil {
			if _, ok := err.(*assemble.Error); !ok {
				t.Fatalf("DecodeBody returned %T, want *assemble.Error", err)
			}
			return
		}
		res, err := assemble.Build(&body.Request)
		if err != nil {
			if _, ok := err.(*assemble.Error); !ok {
				t.Fatalf("Build returned %T, want *assemble.Error", err)
			}
			return
		}
		if res.Tokens.Total > res.Limit {
			t.Fatalf("total %d > limit %d", res.Tokens.Total, res.Limit)
		}
		if out := res.AppendJSON(nil); !json.Valid(out) {
			t.Fatalf("response is not valid JSON: %s", out)
		}
		for i := range res.Messages {
			if _, err := checkpoint.DecodeMessage(res.Messages[i].AppendJSON(nil)); err != nil {
				t.Fatalf("message %d does not decode: %v", i, err)
			}
		}
	})
}

// FuzzCompact feeds arbitrary tool output, as content and as artifact, to
// the compaction of the current exchange: the result is valid JSON within
// the per-result limit, or cannot_compact.
func FuzzCompact(f *testing.F) {
	for _, s := range []string{
		financeTransactions(40), noteSearch(5), documentSearch(10), logDump(40),
		`[1,2,3]`, `{"a":"\u00e9\ud83d\ude00"}`, `{"rows":[[1],[2]],"rows":{}}`, `{"_compaction":1,"results":[1]}`,
	} {
		f.Add(s, s[:len(s)/2])
	}
	f.Fuzz(func(t *testing.T, content, artifact string) {
		c, _ := json.Marshal(content)
		art := "null"
		if json.Valid([]byte(artifact)) {
			art = artifact
		}
		raw := `[{"id":"u","role":"user","content":"x"},{"id":"a","role":"assistant","content":"","tool_calls":[{"id":"c","name":"f","args":{}}]},` +
			`{"id":"t","role":"tool","tool_call_id":"c","content":` + string(c) + `,"artifact":` + art + `}]`
		msgs, err := checkpoint.DecodeMessages([]byte(raw))
		if err != nil {
			return
		}
		b := assemble.DefaultBudget()
		b.ToolResultTokens = assemble.MinToolResultTokens
		res, err := assemble.Build(&assemble.Request{Messages: msgs, Budget: b})
		if err != nil {
			if errCode(err) != assemble.CodeCannotCompact {
				t.Fatalf("Build: %v", err)
			}
			return
		}
		last := res.Messages[len(res.Messages)-1]
		if last.Tokens > b.ToolResultTokens {
			t.Fatalf("result of %d tokens over the limit", last.Tokens)
		}
		if res.CompactedToolResults == 1 {
			var s string
			if json.Unmarshal(last.Content, &s) != nil || !json.Valid([]byte(s)) {
				t.Fatalf("compacted result is not valid JSON: %s", last.Content)
			}
		}
	})
}
