// Command fixturegen writes the long evaluation fixtures of eval/fixtures:
// planning chats of hundreds of turns and coding sessions with heavy tool
// traffic, in the contract's three message forms. Development fixtures go
// to OUT/dev, held-out ones to OUT/heldout. Its output is deterministic, so
// that the committed JSON files can be regenerated and diffed:
//
//	go run ./eval/internal/fixturegen -out eval/fixtures
//
// The short fixtures are written by hand; this program does not touch them.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	out := flag.String("out", "eval/fixtures", "folder of the fixture sets: development fixtures go to its dev/, held-out ones to its heldout/")
	flag.Parse()
	var all []*fixture
	for _, f := range []*fixture{
		migrationPlan(),
		offsitePlan(),
		productLaunch(),
		codingRateLimit(),
		codingLangChain(),
		weddingIT(),
		appRelease(),
		b2bIntegration(),
		shopMigrationZH(),
		bakeryCampaign(),
		houseMovePT(),
		debugLatency(),
	} {
		f.set = devSet
		all = append(all, f)
	}
	for _, f := range heldOut() {
		f.set = heldOutSet
		all = append(all, f)
	}
	for _, f := range all {
		data, err := f.encode()
		if err != nil {
			fmt.Fprintln(os.Stderr, "fixturegen:", f.name, err)
			os.Exit(1)
		}
		dir := filepath.Join(*out, f.set)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "fixturegen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name+".json"), data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fixturegen:", err)
			os.Exit(1)
		}
	}
}

// form is the wire form a builder writes messages in (docs/protocol.md).
type form int

const (
	flat form = iota
	stored
	constructor
)

type fact struct {
	Text   string `json:"text"`
	Why    string `json:"why,omitempty"`
	Bucket string `json:"bucket,omitempty"`
}

type marker struct {
	Text  string `json:"text"`
	Why   string `json:"why,omitempty"`
	Where string `json:"where,omitempty"`
}

// The fixture sets, as folders under -out.
const (
	devSet     = "dev"
	heldOutSet = "heldout"
)

type probe struct {
	Request string   `json:"request"`
	Facts   []string `json:"facts"`
	Why     string   `json:"why,omitempty"`
}

type fixture struct {
	name        string
	set         string
	description string
	userID      string
	convID      string
	b           *builder
	required    []fact
	forbidden   []marker
	probes      []probe
}

// builder appends messages in one form; channel messages (thinking, status,
// todos) are always flat, as a backend that mixes forms would send them.
type builder struct {
	form   form
	prefix string
	msgs   []json.RawMessage
	calls  int
	rnd    *rand.Rand
}

func newBuilder(f form, prefix string, seed uint64) *builder {
	return &builder{form: f, prefix: prefix, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (b *builder) id() string { return fmt.Sprintf("%s-m%d", b.prefix, len(b.msgs)) }

func (b *builder) add(v any) {
	b.msgs = append(b.msgs, marshal(v))
}

// marshal encodes v without HTML escaping, so that the fixtures read as
// written.
func marshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSpace(buf.Bytes())
}

type obj = map[string]any

// lc wraps fields in the builder's LangChain form.
func (b *builder) lc(kind, class string, fields obj) {
	switch b.form {
	case stored:
		b.add(obj{"type": kind, "data": fields})
	default:
		b.add(obj{"lc": 1, "type": "constructor", "id": []string{"langchain_core", "messages", class}, "kwargs": fields})
	}
}

func (b *builder) user(text string) {
	if b.form == flat {
		b.add(obj{"id": b.id(), "role": "user", "content": text})
		return
	}
	b.lc("human", "HumanMessage", obj{"content": text, "id": b.id(), "additional_kwargs": obj{}, "response_metadata": obj{}})
}

func (b *builder) system(text string) {
	if b.form == flat {
		b.add(obj{"id": b.id(), "role": "system", "content": text})
		return
	}
	b.lc("system", "SystemMessage", obj{"content": text, "id": b.id(), "additional_kwargs": obj{}, "response_metadata": obj{}})
}

func (b *builder) assistant(text string) {
	if b.form == flat {
		b.add(obj{"id": b.id(), "role": "assistant", "content": text})
		return
	}
	b.lc("ai", "AIMessage", obj{
		"content": text, "id": b.id(), "tool_calls": []any{}, "invalid_tool_calls": []any{},
		"additional_kwargs": obj{}, "response_metadata": obj{"finish_reason": "stop", "model_name": "gpt-4o-2024-08-06"},
		"usage_metadata": obj{"input_tokens": 1800 + b.rnd.IntN(9000), "output_tokens": len(text) / 4, "total_tokens": 0},
	})
}

// channel adds a flat message on a non-conversation channel.
func (b *builder) channel(typ, text string) {
	b.add(obj{"id": b.id(), "role": "assistant", "type": typ, "content": text})
}

type call struct {
	name     string
	args     obj
	output   string
	artifact any
}

// tools adds an assistant message with prose (may be "") and tool calls,
// then one tool message per call.
func (b *builder) tools(prose string, calls ...call) {
	ids := make([]string, len(calls))
	for i := range calls {
		b.calls++
		ids[i] = fmt.Sprintf("call_%s_%03d", b.prefix, b.calls)
	}
	switch b.form {
	case flat:
		tcs := make([]any, len(calls))
		for i, c := range calls {
			tcs[i] = obj{"id": ids[i], "name": c.name, "args": c.args}
		}
		b.add(obj{"id": b.id(), "role": "assistant", "content": prose, "tool_calls": tcs})
	default:
		tcs := make([]any, len(calls))
		oai := make([]any, len(calls))
		for i, c := range calls {
			tcs[i] = obj{"name": c.name, "args": c.args, "id": ids[i], "type": "tool_call"}
			args, _ := json.Marshal(c.args)
			oai[i] = obj{"id": ids[i], "type": "function", "function": obj{"name": c.name, "arguments": string(args)}}
		}
		b.lc("ai", "AIMessage", obj{
			"content": prose, "id": b.id(), "tool_calls": tcs, "invalid_tool_calls": []any{},
			"additional_kwargs": obj{"tool_calls": oai}, "response_metadata": obj{"finish_reason": "tool_calls"},
		})
	}
	for i, c := range calls {
		if b.form == flat {
			m := obj{"id": b.id(), "role": "tool", "tool_call_id": ids[i], "name": c.name, "content": c.output}
			if c.artifact != nil {
				m["artifact"] = c.artifact
			}
			b.add(m)
			continue
		}
		fields := obj{"content": c.output, "id": b.id(), "tool_call_id": ids[i], "name": c.name, "status": "success", "additional_kwargs": obj{}, "response_metadata": obj{}}
		if c.artifact != nil {
			fields["artifact"] = c.artifact
		}
		b.lc("tool", "ToolMessage", fields)
	}
}

// pick returns one of xs, chosen by the builder's generator.
func pick[T any](b *builder, xs []T) T { return xs[b.rnd.IntN(len(xs))] }

// choose picks one value per slot, so that a user message and its reply
// talk about the same thing.
func (b *builder) choose(slots map[string][]string) map[string]string {
	keys := make([]string, 0, len(slots))
	for k := range slots {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := make(map[string]string, len(keys))
	for _, k := range keys {
		vals[k] = pick(b, slots[k])
	}
	return vals
}

// fill replaces each {key} in s with vals[key].
func fill(s string, vals map[string]string) string {
	for k, v := range vals {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// deck deals items in a shuffled order, reshuffling when all are dealt, so
// that a long chat repeats an exchange only after using every other one.
type deck[T any] struct {
	items []T
	order []int
	b     *builder
}

func newDeck[T any](b *builder, items []T) *deck[T] { return &deck[T]{items: items, b: b} }

func (d *deck[T]) next() T {
	if len(d.order) == 0 {
		d.order = d.b.rnd.Perm(len(d.items))
	}
	i := d.order[0]
	d.order = d.order[1:]
	return d.items[i]
}

// encode writes the fixture with one message per line, so that diffs of
// regenerated fixtures stay readable.
func (f *fixture) encode() ([]byte, error) {
	var buf bytes.Buffer
	field := func(name string, v any, last bool) error {
		fmt.Fprintf(&buf, "  %q: %s", name, marshal(v))
		if !last {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
		return nil
	}
	list := func(name string, items []json.RawMessage, last bool) {
		fmt.Fprintf(&buf, "  %q: [\n", name)
		for i, it := range items {
			buf.WriteString("    ")
			buf.Write(it)
			if i < len(items)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString("  ]")
		if !last {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	raws := func(v any) []json.RawMessage {
		var out []json.RawMessage
		data, _ := json.Marshal(v)
		_ = json.Unmarshal(data, &out)
		return out
	}
	buf.WriteString("{\n")
	for _, kv := range []struct {
		k string
		v any
	}{{"description", f.description}, {"user_id", f.userID}, {"conversation_id", f.convID}} {
		if err := field(kv.k, kv.v, false); err != nil {
			return nil, err
		}
	}
	list("messages", f.b.msgs, false)
	list("required", raws(f.required), false)
	list("forbidden", raws(f.forbidden), len(f.probes) == 0)
	if len(f.probes) > 0 {
		list("probes", raws(f.probes), true)
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}
