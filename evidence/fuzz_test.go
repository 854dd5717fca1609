package evidence

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// Seeds come from the table tests, the digest vectors and the sample
// conversations. Crashers the fuzzer found are kept under
// testdata/fuzz/<FuzzName> and run as regression cases by `go test`.

// FuzzFold folds a history in one step and in growing snapshots cut where
// cuts says, and checks the bounds, coalescing invariance and the reference
// model.
func FuzzFold(f *testing.F) {
	add := func(msgs []json.RawMessage) {
		b, err := json.Marshal(msgs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint64(0x9e3779b97f4a7c15))
	}
	for _, c := range checkpointtest.LoadCorpus(f) {
		add(c.Messages)
	}
	for _, v := range checkpointtest.LoadDigestVectors(f).Vectors[:2] {
		add(v.Messages)
	}
	for seed := range uint64(8) {
		_, raws := checkpointtest.RandomHistory(f, rand.New(rand.NewPCG(seed, 1)), 5+int(seed)*5)
		add(raws)
	}
	var table []json.RawMessage
	for _, tt := range classifyTests {
		table = append(table, json.RawMessage(checkpointtest.Flat("user", tt.name, tt.text)))
	}
	add(table)
	f.Fuzz(func(t *testing.T, data []byte, cuts uint64) {
		history, err := checkpoint.DecodeMessages(data)
		if err != nil || len(history) > 300 {
			return
		}
		one, _, err := Fold(NewState(), history, seedConfig)
		if err != nil {
			var de *checkpoint.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Fold error %v is %T, want *DecodeError", err, err)
			}
			return
		}
		checkBounds(t, &one)
		k := max(0, NewestRequest(history))
		if diff := cmp.Diff(referenceFold(history, k), one, ignoreVersion); diff != "" {
			t.Fatalf("fold differs from the reference model (-want +got):\n%s", diff)
		}
		var points []int
		for c := cuts; c != 0 && len(history) > 0; c >>= 8 {
			points = append(points, int(c&0xff)%(len(history)+1))
		}
		slices.Sort(points)
		s := NewState()
		for _, p := range append(points, len(history)) {
			next, _, err := Fold(s, history[:p], seedConfig)
			if err != nil {
				t.Fatalf("Fold(history[:%d]): %v", p, err)
			}
			if next.Cursor < s.Cursor || next.Version < s.Version {
				t.Fatalf("cursor or version moved back")
			}
			checkBounds(t, &next)
			s = next
		}
		if diff := cmp.Diff(one, s, ignoreVersion); diff != "" {
			t.Fatalf("growing snapshots at %v differ from one fold (-one +growing):\n%s", points, diff)
		}
	})
}

// FuzzFirstWord holds firstWord, which reads a text field by field, to the
// first of splitWords over the whole text.
func FuzzFirstWord(f *testing.F) {
	for _, s := range []string{"", " August 2024", "  — März,", "...\t'  ", "x", " 'tis", "\u00a0juni", "3. mai", "-- -- oktober"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := ""
		if words := splitWords(s, nil); len(words) > 0 {
			want = words[0]
		}
		if got := firstWord(s); got != want {
			t.Errorf("firstWord(%q) = %q, want %q", s, got, want)
		}
	})
}
