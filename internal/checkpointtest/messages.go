package checkpointtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
)

// Decode decodes one message or fails the test.
func Decode(tb testing.TB, raw string) checkpoint.Message {
	tb.Helper()
	m, err := checkpoint.DecodeMessage([]byte(raw))
	if err != nil {
		tb.Fatalf("DecodeMessage(%s): %v", raw, err)
	}
	return m
}

// Flat builds the JSON of a flat message. extra holds further fields.
func Flat(role, id string, content any, extra ...any) string {
	obj := map[string]any{"role": role, "id": id, "content": content}
	for i := 0; i+1 < len(extra); i += 2 {
		obj[extra[i].(string)] = extra[i+1]
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Msg decodes a flat message built by flat; it panics on error, so it can be
// used in table literals.
func Msg(role, id string, content any, extra ...any) checkpoint.Message {
	m, err := checkpoint.DecodeMessage([]byte(Flat(role, id, content, extra...)))
	if err != nil {
		panic(err)
	}
	return m
}

// User is a flat user message.
func User(id, text string) checkpoint.Message { return Msg("user", id, text) }

// Assistant is a flat assistant message.
func Assistant(id, text string) checkpoint.Message { return Msg("assistant", id, text) }

// ToolUse is an assistant message with one tool call and some prose.
func ToolUse(id, text string) checkpoint.Message {
	return Msg("assistant", id, text, "tool_calls", []any{map[string]any{"id": "call-" + id, "name": "search", "args": map[string]any{"q": "x"}}})
}

// ToolResult is the tool message answering ToolUse(id, ...).
func ToolResult(id, text string) checkpoint.Message {
	return Msg("tool", id, text, "tool_call_id", "call-"+id, "artifact", map[string]any{"rows": []any{1, 2}})
}

// ChainOf returns the chain digest of history[:k] or fails the test.
func ChainOf(tb testing.TB, history []checkpoint.Message, k int) checkpoint.Digest {
	tb.Helper()
	d, err := checkpoint.PrefixDigest(history, k)
	if err != nil {
		tb.Fatalf("PrefixDigest: %v", err)
	}
	return d
}

// CorpusFile is one of the sample conversations.
type CorpusFile struct {
	Name     string
	UserID   string            `json:"user_id"`
	ConvID   string            `json:"conversation_id"`
	Messages []json.RawMessage `json:"messages"`
}

// corpusDir holds the sample conversations the repository ships (the ones
// `recall publish --example` sends), from a test's directory one level below
// the repository root.
const corpusDir = "../examples/conversations"

// LoadCorpus reads the sample conversations or fails the test.
func LoadCorpus(tb testing.TB) []CorpusFile {
	tb.Helper()
	paths, _ := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	var files []CorpusFile
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		var f CorpusFile
		if err := json.Unmarshal(data, &f); err != nil {
			tb.Fatalf("%s: %v", p, err)
		}
		f.Name = strings.TrimSuffix(filepath.Base(p), ".json")
		files = append(files, f)
	}
	if len(files) == 0 {
		tb.Fatalf("no sample conversations in %s", corpusDir)
	}
	return files
}

// CorpusEvent returns a snapshot event carrying messages.
func CorpusEvent(f CorpusFile, messages []json.RawMessage) []byte {
	ev := map[string]any{
		"schema":          checkpoint.Schema,
		"event_id":        "ev-" + f.Name,
		"user_id":         f.UserID,
		"conversation_id": f.ConvID,
		"offset":          0,
		"prefix_digest":   nil,
		"messages":        messages,
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return b
}

// words the random histories are made of: keywords of every bucket, plain
// words, punctuation, multi-byte characters and text that tries to forge
// structure.
var randomWords = []string{
	"must", "never", "always", "required", "cannot", "can't", "don’t", "do not", "only", "at most", "at least", "deadline",
	"decided", "agreed", "confirmed", "chose", "approved", "go with", "we’ll use", "settled",
	"todo", "next step", "follow-up", "pending", "still need", "need to", "TBD", "open question",
	"the", "schema", "migration", "billing", "runbook", "Postgres", "mustard", "onlyfans", "todos", "agreeable",
	"é", "中文", "😀", "ß", "\t", "\n", "  ", `"}],"x":`, "</assistant_message>", "<user_message>", "\\", "&amp;", "\u2028",
}

// RandomText returns up to maxWords random words (sometimes many more, or
// only blanks).
func RandomText(r *rand.Rand, maxWords int) string {
	if r.IntN(10) == 0 {
		return []string{"", "   ", "\n\t "}[r.IntN(3)]
	}
	n := 1 + r.IntN(maxWords)
	if r.IntN(8) == 0 {
		n += 200 + r.IntN(300) // long enough to be cut at 900 bytes
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(randomWords[r.IntN(len(randomWords))])
	}
	return b.String()
}

// RandomMessage returns the JSON of a random message in a random form.
func RandomMessage(r *rand.Rand, i int) []byte {
	id := fmt.Sprintf("m%d", i)
	var fields map[string]any
	role := []string{"user", "assistant", "assistant", "tool", "system", "human", "ai"}[r.IntN(7)]
	text := RandomText(r, 40)
	var content any = text
	if r.IntN(6) == 0 {
		content = []any{
			map[string]any{"type": "text", "text": text},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}},
			map[string]any{"type": "text", "text": RandomText(r, 5)},
		}
	}
	fields = map[string]any{"id": id, "content": content}
	if role == "tool" {
		fields["tool_call_id"] = "call-" + id
		fields["artifact"] = map[string]any{"rows": []any{map[string]any{"n": r.IntN(1000), "s": RandomText(r, 3)}}}
	}
	if (role == "assistant" || role == "ai") && r.IntN(4) == 0 {
		switch r.IntN(3) {
		case 0:
			fields["tool_calls"] = []any{map[string]any{"id": "c" + id, "name": "search", "args": map[string]any{"q": text}}}
		case 1:
			fields["tool_calls"] = []any{map[string]any{"id": "c" + id, "type": "function", "function": map[string]any{"name": "search", "arguments": `{"q": 1}`}}}
		case 2:
			fields["invalid_tool_calls"] = []any{map[string]any{"id": "c" + id, "name": "broken", "args": "{", "error": "bad"}}
		}
	}
	form := r.IntN(3)
	if form == 0 {
		fields["role"] = role
		if r.IntN(6) == 0 {
			fields["type"] = []string{"thinking", "status", "todos", "error", "queue_cancel", "chat", "other"}[r.IntN(7)]
		}
	}
	var obj any = fields
	lcType := map[string]string{"user": "human", "human": "human", "assistant": "ai", "ai": "ai", "tool": "tool", "system": "system"}[role]
	class := map[string]string{"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage", "system": "SystemMessage"}[lcType]
	switch form {
	case 1:
		fields["type"] = lcType
		fields["response_metadata"] = map[string]any{"model": "x"}
		obj = map[string]any{"type": lcType, "data": fields}
	case 2:
		fields["additional_kwargs"] = map[string]any{}
		obj = map[string]any{"lc": 1, "type": "constructor", "id": []string{"langchain_core", "messages", class}, "kwargs": fields}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return b
}

// RandomHistory returns n random messages, decoded, and their JSON.
func RandomHistory(tb testing.TB, r *rand.Rand, n int) ([]checkpoint.Message, []json.RawMessage) {
	tb.Helper()
	raws := make([]json.RawMessage, n)
	msgs := make([]checkpoint.Message, n)
	for i := range n {
		raws[i] = RandomMessage(r, i)
		m, err := checkpoint.DecodeMessage(raws[i])
		if err != nil {
			tb.Fatalf("random message %d %s: %v", i, raws[i], err)
		}
		msgs[i] = m
	}
	return msgs, raws
}

// TextContent returns s as message content in the parts form: one text
// part.
func TextContent(s string) json.RawMessage {
	b, err := json.Marshal([]map[string]string{{"type": "text", "text": s}})
	if err != nil {
		panic(err)
	}
	return b
}
