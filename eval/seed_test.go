package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// seedGolden holds, for every conversation of every fixture, the number of
// steps and the SHA-256 over the evidence messages the seed profile renders
// after each user request. It was recorded with the fold as it was before
// the focus profile existed, so that the seed profile is shown to keep its
// rules byte for byte. Never update it to make a change pass: the seed
// profile must not change.
const seedGolden = "testdata/seed-golden.json"

func TestSeedGolden(t *testing.T) {
	t.Parallel()
	got := map[string]map[string]string{}
	for _, set := range fixtureSets {
		fixtures, err := Load(set.fsys())
		if err != nil {
			t.Fatal(err)
		}
		for i := range fixtures {
			f := &fixtures[i]
			got[f.Name] = map[string]string{}
			for _, c := range f.convs {
				got[f.Name][c.key] = seedDigest(t, c.messages)
			}
		}
	}
	data, err := os.ReadFile(seedGolden)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]map[string]string
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the seed profile's messages changed (-want +got):\n%s", diff)
	}
}

func seedDigest(t *testing.T, msgs []checkpoint.Message) string {
	t.Helper()
	h := sha256.New()
	st := evidence.NewState()
	steps := 0
	for i := range msgs {
		if !msgs[i].IsRequest() {
			continue
		}
		var err error
		if st, _, err = evidence.Fold(st, msgs[:i+1], &evidence.Config{Profile: evidence.ProfileSeed}); err != nil {
			t.Fatal(err)
		}
		if m := evidence.Render(&st); m == nil {
			h.Write([]byte("null\n"))
		} else {
			h.Write([]byte(m.Content + "\n"))
		}
		steps++
	}
	return fmt.Sprintf("%d steps %s", steps, hex.EncodeToString(h.Sum(nil)))
}
