package assemble_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// conversationGen writes random checkpoints: turns with plain answers,
// tool exchanges with parallel calls, cancelled calls, orphan results,
// images, huge tool results (row collections, JSON without recognised
// structure, plain text), non-chat channel types and system messages, in
// the flat and the LangChain stored forms.
type conversationGen struct {
	r    *rand.Rand
	n    int
	msgs []string
}

func (g *conversationGen) id() string { g.n++; return fmt.Sprintf("m%d", g.n) }

func (g *conversationGen) words(n int) string {
	vocab := []string{"we", "must", "ship", "by", "Friday", "the", "schema", "uses", "Postgres", "budget", "über", "naïve", "\"quoted\"", "<tag>", "line\nbreak", "数据"}
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[g.r.IntN(len(vocab))])
	}
	return b.String()
}

func (g *conversationGen) str(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (g *conversationGen) add(format string, args ...any) {
	g.msgs = append(g.msgs, fmt.Sprintf(format, args...))
}

func (g *conversationGen) user() {
	id := g.id()
	switch g.r.IntN(6) {
	case 0: // an image
		g.add(`{"id":%q,"role":"user","content":[{"type":"text","text":%s},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}`, id, g.str(g.words(5)))
	case 1: // LangChain stored form
		g.add(`{"type":"human","data":{"id":%q,"content":%s}}`, id, g.str(g.words(1+g.r.IntN(30))))
	default:
		g.add(`{"id":%q,"role":"user","content":%s}`, id, g.str(g.words(1+g.r.IntN(60))))
	}
}

func (g *conversationGen) result(callID string) {
	id := g.id()
	switch g.r.IntN(5) {
	case 0: // huge: a row collection in the artifact
		rows := make([]string, 20+g.r.IntN(400))
		for i := range rows {
			rows[i] = fmt.Sprintf(`{"id":"t%d","date":"2024-01-%02d","amount":%d.5,"memo":%s}`, i, 1+i%28, i, g.str(g.words(g.r.IntN(40))))
		}
		art := fmt.Sprintf(`{"total":12345.67,"count":%d,"transactions":[%s]}`, len(rows), strings.Join(rows, ","))
		g.add(`{"id":%q,"role":"tool","tool_call_id":%q,"content":%s,"artifact":%s}`, id, callID, g.str(art), art)
	case 1: // huge: plain text
		g.add(`{"id":%q,"role":"tool","tool_call_id":%q,"content":%s}`, id, callID, g.str(g.words(2000+g.r.IntN(8000))))
	case 2: // huge: JSON without recognised names
		items := make([]string, 50+g.r.IntN(500))
		for i := range items {
			items[i] = fmt.Sprintf(`{"k":%d,"v":%s}`, i, g.str(g.words(10)))
		}
		g.add(`{"id":%q,"role":"tool","tool_call_id":%q,"content":%s}`, id, callID, g.str(`{"items":[`+strings.Join(items, ",")+`]}`))
	default:
		g.add(`{"id":%q,"role":"tool","tool_call_id":%q,"content":%s}`, id, callID, g.str(g.words(1+g.r.IntN(50))))
	}
}

func (g *conversationGen) exchange() {
	id := g.id()
	n := 1 + g.r.IntN(3)
	calls := make([]string, n)
	callIDs := make([]string, n)
	for i := range calls {
		callIDs[i] = fmt.Sprintf("c%d", g.n*10+i)
		// Arguments with whitespace: kept byte for byte.
		calls[i] = fmt.Sprintf(`{"id":%q,"name":"search","args":{ "q" : %s,  "n": %d }}`, callIDs[i], g.str(g.words(3)), i)
	}
	prose := `""`
	if g.r.IntN(3) == 0 {
		prose = g.str(g.words(g.r.IntN(800)))
	}
	g.add(`{"id":%q,"role":"assistant","content":%s,"tool_calls":[%s]}`, id, prose, strings.Join(calls, ","))
	for _, c := range callIDs {
		if g.r.IntN(8) == 0 {
			continue // cancelled: no result
		}
		g.result(c)
	}
	if g.r.IntN(10) == 0 {
		g.add(`{"id":%q,"role":"tool","tool_call_id":"orphan-%d","content":"late"}`, g.id(), g.n)
	}
}

func (g *conversationGen) noise() {
	switch g.r.IntN(3) {
	case 0:
		g.add(`{"id":%q,"role":"assistant","type":"thinking","content":%s}`, g.id(), g.str(g.words(20)))
	case 1:
		g.add(`{"id":%q,"role":"user","type":"status","content":"typing"}`, g.id())
	default:
		g.add(`{"id":%q,"role":"system","content":%s}`, g.id(), g.str(g.words(5)))
	}
}

func (g *conversationGen) conversation() string {
	if g.r.IntN(4) == 0 {
		g.add(`{"id":%q,"role":"system","content":"You are terse."}`, g.id())
	}
	turns := 1 + g.r.IntN(12)
	for t := 0; t < turns; t++ {
		g.user()
		for g.r.IntN(2) == 0 {
			if g.r.IntN(3) == 0 {
				g.noise()
			} else {
				g.exchange()
			}
		}
		if t < turns-1 || g.r.IntN(2) == 0 {
			g.add(`{"id":%q,"role":"assistant","content":%s}`, g.id(), g.str(g.words(1+g.r.IntN(100))))
		}
	}
	return "[" + strings.Join(g.msgs, ",") + "]"
}

func TestBuildProperties(t *testing.T) {
	t.Parallel()
	for seed := uint64(0); seed < 250; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		g := &conversationGen{r: r}
		msgs := decode(t, g.conversation())
		b := assemble.DefaultBudget()
		b.Prompt = 60 + r.IntN(6000)
		b.ToolResultTokens = assemble.MinToolResultTokens + r.IntN(1500)
		b.ImageTokens = r.IntN(1500)
		req := &assemble.Request{Messages: msgs, Budget: b}
		if r.IntN(2) == 0 {
			req.System = g.words(r.IntN(50))
		}
		if r.IntN(3) == 0 {
			req.Tools = []json.RawMessage{json.RawMessage(`{"name": "search", "parameters": {"type": "object"}}`)}
		}
		if r.IntN(2) == 0 {
			req.Evidence = &assemble.Evidence{Version: 3, Cursor: 2, Message: &evidence.EvidenceMessage{Role: checkpoint.RoleAssistant, Content: g.words(r.IntN(400))}}
		}
		res, err := assemble.Build(req)
		switch code := errCode(err); code {
		case "":
			checkResult(t, req, res)
		case assemble.CodeBudgetTooSmall, assemble.CodeCannotCompact:
			// Justified only if a generous budget does not help (cannot_compact)
			// or does (budget_too_small).
			big := *req
			big.Budget.Prompt, big.Budget.ContextWindow = assemble.MaxBudgetTokens, assemble.MaxBudgetTokens
			res, err := assemble.Build(&big)
			if code == assemble.CodeBudgetTooSmall && err != nil && errCode(err) != assemble.CodeCannotCompact {
				t.Errorf("seed %d: budget_too_small, and with a huge prompt budget: %v", seed, err)
			}
			if code == assemble.CodeCannotCompact && errCode(err) != assemble.CodeCannotCompact {
				t.Errorf("seed %d: cannot_compact depends on the prompt budget", seed)
			}
			if err == nil {
				checkResult(t, &big, res)
			}
		default:
			t.Fatalf("seed %d: %v", seed, err)
		}
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
}
