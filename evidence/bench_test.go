package evidence

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// benchArtifact returns a tool artifact of about size bytes as a Python
// publisher writes it (json.dumps defaults): spaces after separators, keys
// in insertion order, not sorted, so that canonicalisation has work to do.
func benchArtifact(r *rand.Rand, size int) json.RawMessage {
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

func benchText(r *rand.Rand, sentences int) string {
	var b strings.Builder
	for i := range sentences {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchSentences[r.IntN(len(benchSentences))])
	}
	return b.String()
}

// benchSource returns about size bytes of Go source, as a coding agent's
// file-reading tool returns it.
func benchSource(size int) string {
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
	benchNoTools = iota // text only
	benchRows           // a query tool: a large artifact of rows
	benchFiles          // a file tool: a large file as content, a small artifact
	benchMixed          // both, turn by turn
)

// benchHistory returns a realistic agent conversation of turns turns, each a
// user request, an assistant tool call, a tool result of the given kind with
// about artifactBytes of data, and an assistant answer, in the flat form;
// and the raw JSON of each message.
func benchHistory(tb testing.TB, turns, artifactBytes int, kind ...int) ([]Message, []json.RawMessage) {
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
		add(map[string]any{"id": fmt.Sprintf("u%d", t), "role": "user", "content": benchText(r, 1+r.IntN(4))})
		add(map[string]any{"id": fmt.Sprintf("a%d", t), "role": "assistant", "content": "Let me check.", "tool_calls": []any{
			map[string]any{"id": fmt.Sprintf("call_%d", t), "type": "function", "function": map[string]any{"name": "run_query", "arguments": `{"sql": "select * from invoice_lines", "limit": 100}`}},
		}})
		k := benchMixed
		if len(kind) > 0 {
			k = kind[0]
		}
		if k == benchMixed {
			k = benchRows + t%2
		}
		switch {
		case artifactBytes == 0 || k == benchNoTools:
		case k == benchRows:
			add(map[string]any{"id": fmt.Sprintf("t%d", t), "role": "tool", "tool_call_id": fmt.Sprintf("call_%d", t), "content": "212 rows; largest table invoice_lines", "artifact": benchArtifact(r, artifactBytes)})
		case k == benchFiles:
			add(map[string]any{"id": fmt.Sprintf("t%d", t), "role": "tool", "tool_call_id": fmt.Sprintf("call_%d", t), "content": benchSource(artifactBytes), "artifact": map[string]any{"path": "gateway/server.go", "lines": 900}})
		}
		add(map[string]any{"id": fmt.Sprintf("b%d", t), "role": "assistant", "content": benchText(r, 2+r.IntN(8))})
	}
	add(map[string]any{"id": "last", "role": "user", "content": "What now?"})
	msgs := make([]Message, len(raws))
	for i, raw := range raws {
		m, err := DecodeMessage(raw)
		if err != nil {
			tb.Fatal(err)
		}
		msgs[i] = m
	}
	return msgs, raws
}

func BenchmarkDecode(b *testing.B) {
	_, raws := benchHistory(b, 20, 32<<10)
	n := 0
	for _, r := range raws {
		n += len(r)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range raws {
			if _, err := DecodeMessage(r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(raws)), "ns/msg")
}

// canonicalBytes returns the canonical form of each message and their total.
func canonicalBytes(b *testing.B, msgs []Message) ([][]byte, int) {
	b.Helper()
	canon := make([][]byte, len(msgs))
	n := 0
	for i := range msgs {
		c, err := msgs[i].Canonical()
		if err != nil {
			b.Fatal(err)
		}
		canon[i] = c
		n += len(c)
	}
	return canon, n
}

// digestKinds are the histories of the digest benchmarks: 20 turns with
// tool results of 32 KB: mixed (the default: rows and files turn by turn),
// rows only (structured artifacts as Python writes them, the canonicaliser's
// worst case) and files only (large strings).
var digestKinds = []struct {
	name string
	kind int
}{{"mixed", benchMixed}, {"rows", benchRows}, {"files", benchFiles}}

// BenchmarkDigestChain and BenchmarkSHA256SameBytes hash the same canonical
// bytes (SetBytes is their total in both): the ratio of their MB/s is the
// chain's throughput relative to plain SHA-256. BenchmarkDigestRatio
// measures that ratio directly, alternating the two, which is steadier on a
// busy machine.
func BenchmarkDigestChain(b *testing.B) {
	for _, k := range digestKinds {
		b.Run(k.name, func(b *testing.B) {
			msgs, _ := benchHistory(b, 20, 32<<10, k.kind)
			_, n := canonicalBytes(b, msgs)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Chain(ChainStart(), msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSHA256SameBytes(b *testing.B) {
	for _, k := range digestKinds {
		b.Run(k.name, func(b *testing.B) {
			msgs, _ := benchHistory(b, 20, 32<<10, k.kind)
			canon, n := canonicalBytes(b, msgs)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				sha256Chain(canon)
			}
		})
	}
}

// sha256Chain is the chain over canonical bytes already at hand.
func sha256Chain(canon [][]byte) Digest {
	c := ChainStart()
	for _, m := range canon {
		c = c.Next(sha256.Sum256(m))
	}
	return c
}

// BenchmarkDigestRatio alternates the chain and plain SHA-256 over the same
// bytes, timing each by the CPU time of its thread (threadCPU), and reports
// the chain's throughput as a fraction of SHA-256's: on a busy machine the
// ratio of wall times wanders with the load.
func BenchmarkDigestRatio(b *testing.B) {
	for _, k := range digestKinds {
		b.Run(k.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			msgs, _ := benchHistory(b, 20, 32<<10, k.kind)
			canon, n := canonicalBytes(b, msgs)
			var chain, plain time.Duration
			for b.Loop() {
				t0 := threadCPU()
				if _, err := Chain(ChainStart(), msgs); err != nil {
					b.Fatal(err)
				}
				t1 := threadCPU()
				sha256Chain(canon)
				chain += t1 - t0
				plain += threadCPU() - t1
			}
			b.ReportMetric(float64(plain)/float64(chain), "chain/sha256")
			b.ReportMetric(float64(n)*float64(b.N)/chain.Seconds()/1e6, "chain-cpu-MB/s")
			b.ReportMetric(float64(n)*float64(b.N)/plain.Seconds()/1e6, "sha256-cpu-MB/s")
		})
	}
}

// BenchmarkFold reports the cost per summarised message: summarise is the
// fold alone (the caller streams the chain), fold is Fold with its lineage
// check and digests.
func BenchmarkFold(b *testing.B) {
	msgs, _ := benchHistory(b, 500, 0) // 1,501 messages, 1,500 summarised
	k := NewestRequest(msgs)
	prefix, err := PrefixDigest(msgs, k)
	if err != nil {
		b.Fatal(err)
	}
	// perMessage reports per summarised message: wall time, CPU time of
	// the benchmark's thread (steadier on a busy machine) and allocations.
	perMessage := func(b *testing.B, run func()) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b.ReportAllocs()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu := threadCPU()
		for b.Loop() {
			run()
		}
		cpu = threadCPU() - cpu
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/msg")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*k), "cpu-ns/msg")
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*k), "allocs/msg")
	}
	b.Run("summarise", func(b *testing.B) {
		perMessage(b, func() {
			s := NewState()
			s.Summarise(msgs[:k], prefix, nil, seedConfig)
		})
	})
	b.Run("fold", func(b *testing.B) {
		perMessage(b, func() {
			if _, _, err := Fold(NewState(), msgs, seedConfig); err != nil {
				b.Fatal(err)
			}
		})
	})
	// One turn at a time, as a worker sees a growing conversation: the
	// chain is streamed, not recomputed.
	b.Run("turns", func(b *testing.B) {
		perMessage(b, func() {
			s := NewState()
			c := ChainStart()
			for end := 1; end <= len(msgs); end++ {
				if !msgs[end-1].IsRequest() || end-1 <= s.Cursor {
					continue
				}
				next, _ := Chain(c, msgs[s.Cursor:end-1])
				s.Summarise(msgs[s.Cursor:end-1], next, nil, seedConfig)
				c = next
			}
		})
	})
}

// fullState returns a state at its bounds: 24 entries near the token limit.
func fullState(b *testing.B) State {
	msgs, _ := benchHistory(b, 500, 0)
	s, _, err := Fold(NewState(), msgs, seedConfig)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkRender(b *testing.B) {
	s := fullState(b)
	b.Logf("state: %d entries, %d omitted, %d content bytes", s.Buckets.Len(), s.OmittedEntries, len(Render(&s).Content))
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Render(&s)
		}
	})
	b.Run("within_500", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = RenderWithin(&s, 500)
		}
	})
	b.Run("append_body", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = AppendBody(buf[:0], &s, 0)
		}
	})
}

func BenchmarkClassify(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = benchText(r, 1+r.IntN(8))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = defaultClassifier.Classify(texts[i%len(texts)])
	}
}

func BenchmarkParseEvent(b *testing.B) {
	_, raws := benchHistory(b, 20, 32<<10)
	data := corpusEvent(corpusFile{Name: "bench", UserID: "u", ConvID: "c"}, raws)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseEvent(data, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
