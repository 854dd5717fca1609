package checkpointtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
)

// BenchArtifact returns a tool artifact of about size bytes as a Python
// publisher writes it (json.dumps defaults): spaces after separators, keys
// in insertion order, not sorted, so that canonicalisation has work to do.
func BenchArtifact(r *rand.Rand, size int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"query": "select * from invoice_lines", "rows": [`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"table": "invoice_lines", "id": %d, "customer": "Cliente n\u00ba %d \u2014 S\u00e3o Paulo", "amount_cents": %d, "paid": %v, "note": "line\nwith \"quotes\" and a tab\t", "tags": ["a", "b", "c"], "parent": null}`,
			i, r.IntN(100000), r.IntN(1_000_000), r.IntN(2) == 0)
	}
	b.WriteString(`], "count": 2, "truncated": false}`)
	return json.RawMessage(b.String())
}

var benchSentences = []string{
	"We must keep the billing database online during business hours.",
	"Agreed: we'll use logical replication for billing and a bulk copy for the archive.",
	"Next step: draft the cut-over runbook and the rollback plan.",
	"The archive is 4 TB and can be migrated last; CRM has 40 tables.",
	"I read the file; the handler builds a token bucket per API key, about 100 requests per minute.",
	"Still need to add tests for burst behaviour and a metric for rejected requests.",
	"Please keep it compatible with Go 1.22 — no new external dependency, ça va?",
}

// BenchText returns the given number of sentences an agent's conversation
// might hold.
func BenchText(r *rand.Rand, sentences int) string {
	var b strings.Builder
	for i := range sentences {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchSentences[r.IntN(len(benchSentences))])
	}
	return b.String()
}

// BenchSource returns about size bytes of Go source, as a coding agent's
// file-reading tool returns it.
func BenchSource(size int) string {
	lines := []string{
		"// Package gateway serves the API: « ratelimit » — per key.",
		"func (s *Server) handle(w http.ResponseWriter, r *http.Request) {",
		"\tkey := r.Header.Get(\"X-Api-Key\")",
		"\tif !s.limiter.Allow(key) {",
		"\t\thttp.Error(w, `{\"error\":\"rate limited\"}`, http.StatusTooManyRequests)",
		"\t\treturn",
		"\t}",
		"\tif err := json.NewDecoder(r.Body).Decode(&req); err != nil {",
		"\t\treturn fmt.Errorf(\"decode %s: %w\", name, err) // C:\\temp",
		"\t}",
		"}",
		"",
	}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
	}
	return b.String()
}

// Kinds of tool results in benchHistory.
const (
	BenchNoTools = iota // text only
	BenchRows           // a query tool: a large artifact of rows
	BenchFiles          // a file tool: a large file as content, a small artifact
	BenchMixed          // both, turn by turn
)

// BenchHistory returns a realistic agent conversation of turns turns, each a
// user request, an assistant tool call, a tool result of the given kind with
// about artifactBytes of data, and an assistant answer, in the flat form;
// and the raw JSON of each message.
func BenchHistory(tb testing.TB, turns, artifactBytes int, kind ...int) ([]checkpoint.Message, []json.RawMessage) {
	tb.Helper()
	r := rand.New(rand.NewPCG(42, 42))
	var raws []json.RawMessage
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		raws = append(raws, b)
	}
	for t := range turns {
		add(map[string]any{"id": fmt.Sprintf("u%d", t), "role": "user", "content": BenchText(r, 1+r.IntN(4))})
		add(map[string]any{"id": fmt.Sprintf("a%d", t), "role": "assistant", "content": "Let me check.", "tool_calls": []any{
			map[string]any{"id": fmt.Sprintf("call_%d", t), "type": "function", "function": map[string]any{"name": "run_query", "arguments": `{"sql": "select * from invoice_lines", "limit": 100}`}},
		}})
		k := BenchMixed
		if len(kind) > 0 {
			k = kind[0]
		}
		if k == BenchMixed {
			k = BenchRows + t%2
		}
		switch {
		case artifactBytes == 0 || k == BenchNoTools:
		case k == BenchRows:
			add(map[string]any{"id": fmt.Sprintf("t%d", t), "role": "tool", "tool_call_id": fmt.Sprintf("call_%d", t), "content": "212 rows; largest table invoice_lines", "artifact": BenchArtifact(r, artifactBytes)})
		case k == BenchFiles:
			add(map[string]any{"id": fmt.Sprintf("t%d", t), "role": "tool", "tool_call_id": fmt.Sprintf("call_%d", t), "content": BenchSource(artifactBytes), "artifact": map[string]any{"path": "gateway/server.go", "lines": 900}})
		}
		add(map[string]any{"id": fmt.Sprintf("b%d", t), "role": "assistant", "content": BenchText(r, 2+r.IntN(8))})
	}
	add(map[string]any{"id": "last", "role": "user", "content": "What now?"})
	msgs := make([]checkpoint.Message, len(raws))
	for i, raw := range raws {
		m, err := checkpoint.DecodeMessage(raw)
		if err != nil {
			tb.Fatal(err)
		}
		msgs[i] = m
	}
	return msgs, raws
}
