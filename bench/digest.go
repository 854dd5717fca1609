package bench

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/recallhq/recall/checkpoint"
)

// digestKind is a kind of content whose message digests scenario 3 times
// beside plain SHA-256 over the same canonical bytes.
type digestKind struct {
	name string
	msgs []json.RawMessage
}

// digestKinds are the benchmark's kinds of content: its own chat history,
// tool results with structured rows (many short tokens: the
// canonicaliser's worst case) and tool results with file contents (long
// strings).
func digestKinds() []digestKind {
	r := rand.New(rand.NewPCG(7, 7))
	rows := make([]json.RawMessage, 0, 40)
	files := make([]json.RawMessage, 0, 40)
	var src strings.Builder
	for i := range 800 {
		fmt.Fprintf(&src, "func handler%d(w http.ResponseWriter, r *http.Request) { writeJSON(w, lookup(%q)) }\n", i, fmt.Sprint(i*31))
	}
	for t := range 20 {
		var table []map[string]any
		for i := range 300 {
			table = append(table, map[string]any{"id": t*1000 + i, "sku": fmt.Sprintf("SKU-%05d", r.IntN(100000)), "qty": r.IntN(50), "price": float64(r.IntN(100000)) / 100, "ok": i%3 == 0})
		}
		row, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("t%d", t), "role": "tool", "tool_call_id": fmt.Sprintf("c%d", t), "content": "300 rows", "artifact": map[string]any{"rows": table}})
		file, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("f%d", t), "role": "tool", "tool_call_id": fmt.Sprintf("c%d", t), "content": src.String()})
		user, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("u%d", t), "role": "user", "content": "And the next one?"})
		rows, files = append(rows, user, row), append(files, user, file)
	}
	return []digestKind{{"chat", history(400)}, {"rows", rows}, {"files", files}}
}

// digestRatio returns, for each kind, plain SHA-256's time over the
// messages' canonical bytes divided by the time of their message digests
// and chain (1 means as fast as SHA-256), the median of rounds that
// alternate the two.
func digestRatio(rounds int) (map[string]float64, error) {
	out := make(map[string]float64)
	for _, k := range digestKinds() {
		msgs := make([]checkpoint.Message, len(k.msgs))
		canon := make([][]byte, len(k.msgs))
		for i, raw := range k.msgs {
			m, err := checkpoint.DecodeMessage(raw)
			if err != nil {
				return nil, fmt.Errorf("digest %s: %w", k.name, err)
			}
			if canon[i], err = m.Canonical(); err != nil {
				return nil, fmt.Errorf("digest %s: %w", k.name, err)
			}
			msgs[i] = m
		}
		ratios := make([]float64, 0, rounds)
		for range rounds {
			t0 := time.Now()
			if _, err := checkpoint.Chain(checkpoint.ChainStart(), msgs); err != nil {
				return nil, fmt.Errorf("digest %s: %w", k.name, err)
			}
			t1 := time.Now()
			c := checkpoint.ChainStart()
			for _, b := range canon {
				c = c.Next(sha256.Sum256(b))
			}
			plain := time.Since(t1)
			ratios = append(ratios, plain.Seconds()/t1.Sub(t0).Seconds())
		}
		out[k.name] = median(ratios)
	}
	return out, nil
}
