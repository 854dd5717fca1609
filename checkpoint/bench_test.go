package checkpoint_test

import (
	"crypto/sha256"
	"runtime"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

func BenchmarkDecode(b *testing.B) {
	_, raws := checkpointtest.BenchHistory(b, 20, 32<<10)
	n := 0
	for _, r := range raws {
		n += len(r)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range raws {
			if _, err := checkpoint.DecodeMessage(r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(raws)), "ns/msg")
}

// canonicalBytes returns the canonical form of each message and their total.
func canonicalBytes(b *testing.B, msgs []checkpoint.Message) ([][]byte, int) {
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
}{{"mixed", checkpointtest.BenchMixed}, {"rows", checkpointtest.BenchRows}, {"files", checkpointtest.BenchFiles}}

// BenchmarkDigestChain and BenchmarkSHA256SameBytes hash the same canonical
// bytes (SetBytes is their total in both): the ratio of their MB/s is the
// chain's throughput relative to plain SHA-256. BenchmarkDigestRatio
// measures that ratio directly, alternating the two, which is steadier on a
// busy machine.
func BenchmarkDigestChain(b *testing.B) {
	for _, k := range digestKinds {
		b.Run(k.name, func(b *testing.B) {
			msgs, _ := checkpointtest.BenchHistory(b, 20, 32<<10, k.kind)
			_, n := canonicalBytes(b, msgs)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := checkpoint.Chain(checkpoint.ChainStart(), msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSHA256SameBytes(b *testing.B) {
	for _, k := range digestKinds {
		b.Run(k.name, func(b *testing.B) {
			msgs, _ := checkpointtest.BenchHistory(b, 20, 32<<10, k.kind)
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
func sha256Chain(canon [][]byte) checkpoint.Digest {
	c := checkpoint.ChainStart()
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
			msgs, _ := checkpointtest.BenchHistory(b, 20, 32<<10, k.kind)
			canon, n := canonicalBytes(b, msgs)
			var chain, plain time.Duration
			for b.Loop() {
				t0 := checkpointtest.ThreadCPU()
				if _, err := checkpoint.Chain(checkpoint.ChainStart(), msgs); err != nil {
					b.Fatal(err)
				}
				t1 := checkpointtest.ThreadCPU()
				sha256Chain(canon)
				chain += t1 - t0
				plain += checkpointtest.ThreadCPU() - t1
			}
			b.ReportMetric(float64(plain)/float64(chain), "chain/sha256")
			b.ReportMetric(float64(n)*float64(b.N)/chain.Seconds()/1e6, "chain-cpu-MB/s")
			b.ReportMetric(float64(n)*float64(b.N)/plain.Seconds()/1e6, "sha256-cpu-MB/s")
		})
	}
}

func BenchmarkParseEvent(b *testing.B) {
	_, raws := checkpointtest.BenchHistory(b, 20, 32<<10)
	data := checkpointtest.CorpusEvent(checkpointtest.CorpusFile{Name: "bench", UserID: "u", ConvID: "c"}, raws)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkpoint.ParseEvent(data, checkpoint.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
