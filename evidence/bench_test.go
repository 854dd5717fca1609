package evidence

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// BenchmarkFold reports the cost per summarised message: summarise is the
// fold alone (the caller streams the chain), fold is Fold with its lineage
// check and digests.
func BenchmarkFold(b *testing.B) {
	msgs, _ := checkpointtest.BenchHistory(b, 500, 0) // 1,501 messages, 1,500 summarised
	k := NewestRequest(msgs)
	prefix, err := checkpoint.PrefixDigest(msgs, k)
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
		cpu := checkpointtest.ThreadCPU()
		for b.Loop() {
			run()
		}
		cpu = checkpointtest.ThreadCPU() - cpu
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
			c := checkpoint.ChainStart()
			for end := 1; end <= len(msgs); end++ {
				if !msgs[end-1].IsRequest() || end-1 <= s.Cursor {
					continue
				}
				next, _ := checkpoint.Chain(c, msgs[s.Cursor:end-1])
				s.Summarise(msgs[s.Cursor:end-1], next, nil, seedConfig)
				c = next
			}
		})
	})
}

// fullState returns a state at its bounds: 24 entries near the token limit.
func fullState(b *testing.B) State {
	msgs, _ := checkpointtest.BenchHistory(b, 500, 0)
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
		texts[i] = checkpointtest.BenchText(r, 1+r.IntN(8))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = defaultClassifier.Classify(texts[i%len(texts)])
	}
}
