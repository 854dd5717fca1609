package checkpoint_test

import (
	"testing"

	"github.com/recallhq/recall/checkpoint"
)

// TestHeaderCarrier: keys are written as given and read in any case.
func TestHeaderCarrier(t *testing.T) {
	t.Parallel()
	h := map[string][]string{}
	c := checkpoint.HeaderCarrier(h)
	c.Set("traceparent", "00-a-b-01")
	if got := h["traceparent"]; len(got) != 1 || got[0] != "00-a-b-01" {
		t.Errorf("Set wrote %v", h)
	}
	h2 := checkpoint.HeaderCarrier{"Traceparent": {"x"}}
	if got := h2.Get("traceparent"); got != "x" {
		t.Errorf("Get(traceparent) on Traceparent = %q, want x", got)
	}
	if got := h2.Get("tracestate"); got != "" {
		t.Errorf("Get(tracestate) = %q, want none", got)
	}
	if keys := h2.Keys(); len(keys) != 1 || keys[0] != "Traceparent" {
		t.Errorf("Keys() = %v", keys)
	}
}
