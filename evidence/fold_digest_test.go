package evidence

import (
	"errors"
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// TestFoldDigestErrors holds Fold to the digest errors of the wire format:
// a message that cannot be canonicalised fails the fold with a *DecodeError
// that names the field and the message's index, not its text.
func TestFoldDigestErrors(t *testing.T) {
	t.Parallel()
	const marker = "SECRET-MARKER-7f3a"
	tests := []struct {
		name      string
		in        string
		wantField string
	}{
		{name: "duplicate keys in artifact", in: `{"role":"tool","artifact":{"a":"` + marker + `","a":2}}`, wantField: "artifact"},
		{name: "number out of range", in: `{"role":"tool","artifact":[1e400],"content":"` + marker + `"}`, wantField: "artifact"},
		{name: "lone surrogate in content", in: `{"role":"user","content":[{"type":"text","text":"\ud800` + marker + `"}]}`, wantField: "content"},
		{name: "duplicate keys in args", in: `{"role":"assistant","tool_calls":[{"id":"x","args":{"` + marker + `":1,"` + marker + `":1}}]}`, wantField: "tool_calls.args"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := checkpointtest.Decode(t, tt.in)
			_, _, err := Fold(NewState(), []checkpoint.Message{checkpointtest.User("u", "x"), m, checkpointtest.User("v", "y")}, seedConfig)
			var de *checkpoint.DecodeError
			if !errors.As(err, &de) || de.Field != tt.wantField || de.Index != 1 {
				t.Fatalf("Fold error = %v, want *DecodeError for field %q at index 1", err, tt.wantField)
			}
			if strings.Contains(err.Error(), marker) {
				t.Errorf("error %q quotes message text", err)
			}
		})
	}
}
