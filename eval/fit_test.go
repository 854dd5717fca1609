package eval

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/recallhq/recall/evidence"
)

// fitFixture returns a fixture of a long chat in which the speaker states
// a lasting fact early, between chatter and narration, and a later message
// depends on it: the kind of data the scorer is fitted on. Seed varies the
// words so that two sets differ.
func fitFixture(t *testing.T, name string, seed int) Fixture {
	t.Helper()
	var msgs []string
	add := func(role, text string) {
		b, _ := json.Marshal(map[string]string{"id": fmt.Sprint(len(msgs)), "role": role, "content": text})
		msgs = append(msgs, string(b))
	}
	fact := fmt.Sprintf("Ever since my back surgery I avoid lifting anything heavier than %d kilos.", 5+seed)
	add("user", "Hey! Good to see you.")
	add("assistant", "Hi! How can I help today?")
	add("user", fact)
	for i := range 70 {
		add("assistant", "Thanks, noted.")
		switch i % 3 {
		case 0:
			add("user", fmt.Sprintf("Yesterday we walked to the harbour number %d and had lunch.", i+seed))
		case 1:
			add("user", "Wow, that's great!")
		default:
			add("user", fmt.Sprintf("Last week I painted fence post %d in the garden.", i))
		}
	}
	add("assistant", "Sounds lovely.")
	add("user", "Should I help my neighbour carry her new sofa up the stairs this weekend?")
	data := `{"user_id":"u","conversation_id":"c","messages":[` + strings.Join(msgs, ",") + `],
	  "probes":[{"request":"Should I help my neighbour carry","facts":[` + fmt.Sprintf("%q", fact) + `]}]}`
	f, err := Parse(name, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFit checks the fit: it refuses what it cannot fit on, it is
// reproducible, it weighs a standing fact above narration and chatter on
// data that says so, and it reports the cross-validated figures beside the
// fitted ones.
func TestFit(t *testing.T) {
	if _, err := Fit(nil, nil, 0); err == nil {
		t.Error("a fit over no sets succeeded")
	}
	noProbes, err := Parse("no-probes", []byte(`{"user_id":"u","conversation_id":"c","messages":[{"id":"m0","role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Fit([]FitSet{{Name: "quiet", Fixtures: []Fixture{noProbes}}}, nil, 1); err == nil || !strings.Contains(err.Error(), "quiet") || !strings.Contains(err.Error(), "no probes") {
		t.Errorf("a set without probes: %v, want an error naming the set and saying why", err)
	}
	if _, err := Fit([]FitSet{{Name: "empty"}}, nil, 0); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("a set without fixtures: %v, want an error naming it", err)
	}

	small := []FitSet{{Name: "pair", Fixtures: []Fixture{fitFixture(t, "p1", 1), fitFixture(t, "p2", 2)}}}
	if _, err := Fit(small, nil, 3); err == nil || !strings.Contains(err.Error(), "pair") || !strings.Contains(err.Error(), "3 folds") {
		t.Errorf("3 folds of a set of 2 conversations: %v, want an error naming the set and saying why", err)
	}

	sets := []FitSet{
		{Name: "a", Fixtures: []Fixture{fitFixture(t, "a1", 1), fitFixture(t, "a2", 2)}},
		{Name: "b", Fixtures: []Fixture{fitFixture(t, "b1", 3), fitFixture(t, "b2", 4)}},
	}
	r, err := Fit(sets, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Fit(sets, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	if *r.Weights != *again.Weights {
		t.Error("two fits of the same data differ")
	}
	if len(r.Fitted) != 2 || len(r.KFold) != 2 || len(r.SetOut) != 2 || r.Positives == 0 {
		t.Fatalf("report %+v: want two sets fitted and cross-validated", r)
	}
	w := &r.Weights.Features
	if w[evidence.FeatChatter] >= 0 {
		t.Errorf("chatter weighs %+.2f on data where it never matters", w[evidence.FeatChatter])
	}
	for _, f := range r.Fitted {
		if f.ProbeRecall != 1 {
			t.Errorf("set %s: fitted probe recall %.2f, want 1 on data this plain", f.Set, f.ProbeRecall)
		}
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fold by conversation", "set left out", "chatter", "question balance", "correction weights"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
	table, err := evidence.MarshalWeights(r.Weights, r)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := evidence.ParseWeights(table); err != nil || *back != *r.Weights {
		t.Errorf("the fitted table does not read back: %v", err)
	}
}

// TestChatterServed checks that the eval counts the served entries that
// are chatter: where nothing else is left out, a greeting is shown, and
// counted as chatter; a rule is not.
func TestChatterServed(t *testing.T) {
	f, err := Parse("chatter", []byte(`{"user_id":"u","conversation_id":"c","messages":[
	  {"id":"m0","role":"user","content":"Hey there!"},
	  {"id":"m1","role":"assistant","content":"Hi!"},
	  {"id":"m2","role":"user","content":"We must ship by Friday."},
	  {"id":"m3","role":"assistant","content":"Understood."},
	  {"id":"m4","role":"user","content":"What is left to do?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run([]Fixture{f}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Total; got.Served != 4 || got.ChatterServed != 3 || got.ChatterShare != 0.75 {
		t.Errorf("served %d, chatter %d (%.2f); want 4, 3 (0.75)", got.Served, got.ChatterServed, got.ChatterShare)
	}
}
