package eval

import "testing"

func TestProbeKind(t *testing.T) {
	t.Parallel()
	for why, want := range map[string]string{
		"LoCoMo multi-hop question; answer: 7 May 2023": "multi-hop",
		"LoCoMo temporal question":                      "temporal",
		"crane question depends on floor and no lift":   "",
		"the budget, corrected":                         "",
		"question":                                      "",
	} {
		if got := probeKind(why); got != want {
			t.Errorf("probeKind(%q) = %q, want %q", why, got, want)
		}
	}
}

func TestClauseOfLonger(t *testing.T) {
	t.Parallel()
	long := "the pharmacy rang while I was on lunch duty, and then afterwards I thought, we eat halal and I apply that to medicines as well, so I want a version that isn't from pigs."
	tests := []struct {
		text, fact string
		want       bool
	}{
		{long, "we eat halal and I apply that to medicines as well", true},
		// Most of its sentence: said in a sentence of its own size.
		{long, "the pharmacy rang while I was on lunch duty, and then afterwards I thought, we eat halal and I apply that to medicines as well", false},
		{"We eat halal. The pharmacy rang while I was on lunch duty, so I'll call them back tomorrow.", "We eat halal", false},
		// A short sentence is never a long one, however small the fact.
		{"Her knee hurts when she runs downhill.", "knee hurts", false},
		{long, "not in the text", false},
	}
	for _, tt := range tests {
		if got := ClauseOfLonger(tt.text, tt.fact); got != tt.want {
			t.Errorf("ClauseOfLonger(…, %q) = %v, want %v", tt.fact, got, tt.want)
		}
	}
}
