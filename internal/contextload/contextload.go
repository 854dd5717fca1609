// Package contextload is the workload of the context assembly
// measurements: a large checkpoint, the request body around it and the
// bare handler the endpoint is measured against. recall bench (scenario 7)
// and the Go benchmarks of packages assemble and api share it, so it is
// shipped code, not test support: it imports only the standard library.
package contextload

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Checkpoint is a 200-message checkpoint of about 1 MB: 40 turns of a
// user request, an assistant call, its tool result and an answer, with ten
// tool results of about 90 KB (finance transactions, note searches with
// markdown bodies, document searches, log dumps) spread through it, the
// last in the current turn.
func Checkpoint() []byte {
	var msgs []string
	add := func(format string, args ...any) { msgs = append(msgs, fmt.Sprintf(format, args...)) }
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	prose := strings.Repeat("The quarterly numbers look steady and the migration plan holds. ", 8)
	large := 0
	for turn := 0; len(msgs) < 196; turn++ {
		add(`{"id":"u%d","role":"user","content":%s}`, turn, str(fmt.Sprintf("Request %d: %s", turn, prose[:200])))
		add(`{"id":"a%d","role":"assistant","content":"","tool_calls":[{"id":"c%d","name":"lookup","args":{"turn": %d}}]}`, turn, turn, turn)
		result := str(prose[:300])
		if turn%4 == 3 && large < 9 {
			result = str(largeResult(large))
			large++
		}
		add(`{"id":"t%d","role":"tool","tool_call_id":"c%d","content":%s}`, turn, turn, result)
		add(`{"id":"f%d","role":"assistant","content":%s}`, turn, str(prose))
	}
	add(`{"id":"u-now","role":"user","content":"Which of these payments are duplicates?"}`)
	add(`{"id":"a-now","role":"assistant","content":"","tool_calls":[{"id":"c-now","name":"transactions","args":{"month": "2024-03"}}]}`)
	add(`{"id":"t-now","role":"tool","tool_call_id":"c-now","content":%s}`, str(largeResult(0)))
	return []byte("[" + strings.Join(msgs, ",") + "]")
}

// largeResult is a tool result of about 90 KB in one of the seed's
// categories.
func largeResult(i int) string {
	var b strings.Builder
	switch i % 4 {
	case 0:
		b.WriteString(`{"account":"checking","period":{"from":"2024-03-01","to":"2024-03-31"},"total":-48211.37,"count":450,"transactions":[`)
		for j := 0; j < 450; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"tx-%d","date":"2024-03-%02d","payee":"Vendor %d","amount":-%d.%02d,"memo":"invoice %d for consulting services rendered in March, see the attached statement for the hours"}`, j, 1+j%31, j%50, j%500, j%100, j)
		}
	case 1:
		b.WriteString(`{"query":"migration notes","results":[`)
		for j := 0; j < 60; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"note-%d","path":"notes/2024/%d.md","title":"Note %d","markdown":%q}`, j, j, j, strings.Repeat("## Heading\n\nSome *markdown* body text with [links](x). ", 28))
		}
	case 2:
		b.WriteString(`{"query":"retention policy","source":"docs","documents":[`)
		for j := 0; j < 300; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"doc-%d","source_ref":"drive://policies/%d","snippet":%q}`, j, j, strings.Repeat("retention of records for seven years ", 7))
		}
	default:
		for j := 0; b.Len() < 90_000; j++ {
			fmt.Fprintf(&b, "2024-03-01T12:%02d:%02dZ INFO worker %d: processed batch %d in %dms\n", j/60%60, j%60, j%8, j, j%997)
		}
		return b.String()
	}
	b.WriteString("]}")
	return b.String()
}

// Body is a context request body around Checkpoint, with the default
// budget.
func Body() []byte {
	return []byte(`{"system":"You are a careful bookkeeping assistant.","tools":[{"name":"transactions","parameters":{"type":"object","properties":{"month":{"type":"string"}}}}],"messages":` +
		string(Checkpoint()) + `}`)
}

// EchoHandler is the baseline the context endpoint is measured against: it
// reads the body (at most 16 MiB), decodes it as JSON, encodes it again and
// writes it, and does nothing else.
func EchoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}
