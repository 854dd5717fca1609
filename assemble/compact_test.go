package assemble_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/recallhq/recall/assemble"
)

// The seed's categories of tool output.

func financeTransactions(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"account":"checking","period":{"from":"2024-03-01","to":"2024-03-31"},"filters":{"min_amount":10},"total":-48211.37,"total_count":%d,"currency":"EUR","transactions":[`, n)
	for j := 0; j < n; j++ {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"tx-%d","date":"2024-03-%02d","payee":"Vendor %d","amount":-%d.%02d,"memo":"invoice %d, consulting in March \"phase %d\""}`, j, 1+j%31, j%50, 10+j%500, j%100, j, j%3)
	}
	b.WriteString("]}")
	return b.String()
}

func noteSearch(n int) string {
	var b strings.Builder
	b.WriteString(`{"query":"migration notes","source":"notes","results":[`)
	for j := 0; j < n; j++ {
		if j > 0 {
			b.WriteByte(',')
		}
		md, _ := json.Marshal(fmt.Sprintf("# Note %d\n\n", j) + strings.Repeat("Some *markdown* body, with [a link](https://example.com) and `code`. ", 30))
		fmt.Fprintf(&b, `{"id":"note-%d","path":"notes/2024/%03d.md","title":"Note %d","updated_at":"2024-02-%02d","markdown":%s}`, j, j, j, 1+j%28, md)
	}
	b.WriteString("]}")
	return b.String()
}

func documentSearch(n int) string {
	var b strings.Builder
	b.WriteString(`{"query":"retention policy","source":"drive","count":` + fmt.Sprint(n) + `,"documents":[`)
	for j := 0; j < n; j++ {
		if j > 0 {
			b.WriteByte(',')
		}
		snippet, _ := json.Marshal(strings.Repeat("Records are retained for seven years; drafts for ninety days. ", 5) + "über naïve 数据")
		fmt.Fprintf(&b, `{"doc_id":"doc-%d","source_ref":"drive://policies/%d","title":"Policy %d","snippet":%s}`, j, j, j, snippet)
	}
	b.WriteString("]}")
	return b.String()
}

func logDump(lines int) string {
	var b strings.Builder
	for j := 0; j < lines; j++ {
		fmt.Fprintf(&b, "2024-03-01T12:%02d:%02dZ INFO worker %d: processed batch %d in %dms — ok\n", j/60%60, j%60, j%8, j, j%997)
	}
	return b.String()
}

// currentExchange builds a checkpoint whose current turn calls a tool that
// returned content (and, when artifact is not "", that artifact).
func currentExchange(t *testing.T, content, artifact string) *assemble.Request {
	t.Helper()
	c, _ := json.Marshal(content)
	art := ""
	if artifact != "" {
		art = `,"artifact":` + artifact
	}
	msgs := decode(t, `[
		{"id":"u0","role":"user","content":"What did we spend in March?"},
		{"id":"a0","role":"assistant","content":"","tool_calls":[{"id":"c0","name":"lookup","args":{"month": "2024-03"}}]},
		{"id":"t0","role":"tool","tool_call_id":"c0","content":`+string(c)+art+`}]`)
	return &assemble.Request{Messages: msgs, Budget: assemble.DefaultBudget()}
}

// compacted builds req and returns the compacted tool result, decoded.
func compacted(t *testing.T, req *assemble.Request) (string, map[string]any) {
	t.Helper()
	res, err := assemble.Build(req)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	checkResult(t, req, res)
	if res.CompactedToolResults != 1 {
		t.Fatalf("compacted %d tool results, want 1", res.CompactedToolResults)
	}
	last := res.Messages[len(res.Messages)-1]
	text := contentText(t, &last)
	if !json.Valid([]byte(text)) {
		t.Fatalf("compacted result is not valid JSON: %.200s", text)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("compacted result is not a JSON object: %v", err)
	}
	return text, out
}

// checkRows asserts the compaction rules for a JSON source: every field but
// the collections is unchanged; each collection keeps its first rows, with
// text fields as prefix excerpts; returned = retained + omitted; every
// omitted row's reference is listed.
func checkRows(t *testing.T, source string, out map[string]any, refField string) {
	t.Helper()
	var in map[string]any
	if err := json.Unmarshal([]byte(source), &in); err != nil {
		t.Fatal(err)
	}
	info, ok := out["_compaction"].(map[string]any)
	if !ok {
		t.Fatalf("no _compaction object in %v", keys(out))
	}
	colls := map[string]map[string]any{}
	for _, c := range info["collections"].([]any) {
		c := c.(map[string]any)
		colls[c["path"].(string)] = c
	}
	if len(colls) == 0 {
		t.Fatalf("no collection reported")
	}
	for k, v := range in {
		c, isColl := colls[k]
		if !isColl {
			if !reflect.DeepEqual(out[k], v) {
				t.Errorf("field %q changed: %v, want %v", k, out[k], v)
			}
			continue
		}
		rows, kept := v.([]any), out[k].([]any)
		returned, retained, omitted := int(c["returned"].(float64)), int(c["retained"].(float64)), int(c["omitted"].(float64))
		if returned != len(rows) || retained != len(kept) || returned != retained+omitted {
			t.Errorf("%s: returned %d retained %d omitted %d; the tool returned %d rows, %d kept", k, returned, retained, omitted, len(rows), len(kept))
		}
		if retained == 0 {
			t.Errorf("%s: no row retained", k)
		}
		for i, row := range kept {
			checkRow(t, rows[i].(map[string]any), row.(map[string]any))
		}
		refs := fmt.Sprint(c["omitted_refs"])
		for _, row := range rows[retained:] {
			ref := fmt.Sprint(row.(map[string]any)[refField])
			if !strings.Contains(refs, ref+" ") && !strings.Contains(refs, ref+"]") {
				t.Errorf("%s: omitted row %s is not referenced", k, ref)
			}
		}
	}
	for k := range out {
		if _, ok := in[k]; !ok && k != "_compaction" {
			t.Errorf("compaction invented field %q", k)
		}
	}
}

// checkRow asserts that a kept row equals its source but for text fields,
// which are the source's prefix and a count of the omitted characters.
func checkRow(t *testing.T, src, got map[string]any) {
	t.Helper()
	for k, v := range src {
		s, isString := v.(string)
		g, _ := got[k].(string)
		if isString && g != s {
			head, marker, ok := strings.Cut(g, "… [")
			n := 0
			if !ok || !strings.HasPrefix(s, head) {
				t.Errorf("row field %q: %q is not an excerpt of the source", k, g)
				continue
			}
			if _, err := fmt.Sscanf(marker, "%d characters omitted]", &n); err != nil || n != utf8.RuneCountInString(s[len(head):]) {
				t.Errorf("row field %q: marker %q, want %d characters omitted", k, marker, utf8.RuneCountInString(s[len(head):]))
			}
			continue
		}
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("row field %q changed: %v, want %v", k, got[k], v)
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCompactCategories(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		source   string
		fullRef  string // the field an omitted row is referenced by
		briefRef string // the same, with brief references
		artifact bool   // the source is the artifact; the content is a short text
		// wantBrief: "" either, "yes" brief references, "no" full ones.
		wantBrief string
	}{
		{name: "finance transactions with totals", source: financeTransactions(80), fullRef: "id", briefRef: "id"},
		{name: "finance transactions, many", source: financeTransactions(500), fullRef: "id", briefRef: "id", wantBrief: "yes"},
		{name: "finance transactions in the artifact", source: financeTransactions(300), fullRef: "id", briefRef: "id", artifact: true},
		{name: "note search with markdown bodies", source: noteSearch(40), fullRef: "path", briefRef: "id"},
		{name: "document search with snippets", source: documentSearch(120), fullRef: "source_ref", briefRef: "doc_id"},
		{name: "document search, few", source: documentSearch(30), fullRef: "source_ref", briefRef: "doc_id", wantBrief: "no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var req *assemble.Request
			if tt.artifact {
				// A content that is long but not JSON: the artifact wins.
				req = currentExchange(t, strings.Repeat("Found the March transactions. ", 400), tt.source)
			} else {
				req = currentExchange(t, tt.source, "")
			}
			text, out := compacted(t, req)
			brief := strings.Contains(text, `"omitted_refs_brief":true`)
			ref := tt.fullRef
			if brief {
				ref = tt.briefRef
			}
			checkRows(t, tt.source, out, ref)
			if tt.wantBrief != "" && brief != (tt.wantBrief == "yes") {
				t.Errorf("brief references %v, want %s", brief, tt.wantBrief)
			}
		})
	}
}

func TestCompactLogDump(t *testing.T) {
	t.Parallel()
	dump := logDump(3000)
	_, out := compacted(t, currentExchange(t, dump, ""))
	begin, end := out["beginning"].(string), out["end"].(string)
	if !strings.HasPrefix(dump, begin) || !strings.HasSuffix(dump, end) || begin == "" || end == "" {
		t.Fatalf("beginning and end are not the dump's own")
	}
	total, omitted := int(out["characters"].(float64)), int(out["omitted_characters"].(float64))
	if total != utf8.RuneCountInString(dump) || omitted != total-utf8.RuneCountInString(begin)-utf8.RuneCountInString(end) {
		t.Errorf("characters %d omitted %d do not add up", total, omitted)
	}
	if !strings.Contains(out["notice"].(string), "beginning") {
		t.Errorf("no notice marks the excerpt")
	}
}

// A JSON result without recognised names is shrunk anyway, as valid JSON.
func TestCompactUnrecognisedJSON(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"total":3,"items":[`)
	for i := 0; i < 600; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"k":%d,"v":"value number %d"}`, i, i)
	}
	b.WriteString("]}")
	_, out := compacted(t, currentExchange(t, b.String(), ""))
	if out["total"] != 3.0 {
		t.Errorf("total changed: %v", out["total"])
	}
	items := out["items"].([]any)
	if len(items) == 0 || len(items) == 600 {
		t.Errorf("kept %d items", len(items))
	}
}

// Where even the references do not fit, nothing is cut: the current turn
// fails with cannot_compact, an older turn is dropped whole.
func TestCannotCompact(t *testing.T) {
	t.Parallel()
	req := currentExchange(t, financeTransactions(3000), "")
	_, err := assemble.Build(req)
	if errCode(err) != assemble.CodeCannotCompact {
		t.Fatalf("Build = %v, want cannot_compact", err)
	}
	if strings.Contains(err.Error(), "Vendor") || strings.Contains(err.Error(), "invoice") {
		t.Errorf("the error quotes the tool result: %v", err)
	}

	// The same exchange in an older turn: that turn goes, the rest stays.
	msgs := append(req.Messages, decode(t, `[
		{"id":"f0","role":"assistant","content":"You spent a lot."},
		{"id":"u1","role":"user","content":"Thanks. Now the April plan?"}]`)...)
	res, err := assemble.Build(&assemble.Request{Messages: msgs, Budget: assemble.DefaultBudget()})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if got := strings.Join(ids(res), ","); got != "u1" || res.DroppedTurns != 1 {
		t.Errorf("kept %s, dropped %d; want u1, 1", got, res.DroppedTurns)
	}
}
