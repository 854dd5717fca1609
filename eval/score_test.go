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
