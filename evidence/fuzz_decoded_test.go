package evidence

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// The fold's halves of the wire format's fuzz tests (FuzzDecodeMessage and
// FuzzParseEvent in package checkpoint): what the fold makes of any message
// or event the decoders accept.

// FuzzDecodedText excerpts and classifies the text of any message that
// DecodeMessage accepts.
func FuzzDecodedText(f *testing.F) {
	for _, c := range checkpointtest.LoadCorpus(f) {
		for _, m := range c.Messages {
			f.Add([]byte(m))
		}
	}
	for _, v := range checkpointtest.LoadDigestVectors(f).Vectors {
		for _, m := range v.Messages {
			f.Add([]byte(m))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 16 {
		f.Add(checkpointtest.RandomMessage(r, i))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := checkpoint.DecodeMessage(data)
		if err != nil {
			return
		}
		excerpt, _ := Excerpt(m.Text, DefaultMaxExcerptBytes)
		if len(excerpt) > DefaultMaxExcerptBytes || !utf8.ValidString(excerpt) {
			t.Fatalf("bad excerpt of %d bytes", len(excerpt))
		}
		_ = defaultClassifier.Classify(m.Text)
	})
}

// FuzzFoldParsedEvent folds the messages of any event at offset 0 that
// ParseEvent accepts, and checks the state's bounds.
func FuzzFoldParsedEvent(f *testing.F) {
	for _, c := range checkpointtest.LoadCorpus(f) {
		f.Add(checkpointtest.CorpusEvent(c, c.Messages))
	}
	for seed := range uint64(4) {
		_, raws := checkpointtest.RandomHistory(f, rand.New(rand.NewPCG(seed, 3)), 5+int(seed)*5)
		f.Add(checkpointtest.CorpusEvent(checkpointtest.CorpusFile{Name: "random", UserID: "u", ConvID: "c"}, raws))
	}
	limits := checkpoint.Limits{MaxEventBytes: 1 << 20, MaxMessages: 1000}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := checkpoint.ParseEvent(data, limits)
		if err != nil || ev.Offset != 0 {
			return
		}
		s, _, err := Fold(NewState(), ev.Messages, seedConfig)
		if err != nil {
			t.Fatalf("Fold of a parsed event: %v", err)
		}
		checkBounds(t, &s)
	})
}
