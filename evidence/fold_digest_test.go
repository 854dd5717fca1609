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
	for _, tt := range checkpointtest.DigestErrors() {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			m := checkpointtest.Decode(t, tt.In)
			_, _, err := Fold(NewState(), []checkpoint.Message{checkpointtest.User("u", "x"), m, checkpointtest.User("v", "y")}, seedConfig)
			var de *checkpoint.DecodeError
			if !errors.As(err, &de) || de.Field != tt.WantField || de.Index != 1 {
				t.Fatalf("Fold error = %v, want *DecodeError for field %q at index 1", err, tt.WantField)
			}
			if strings.Contains(err.Error(), checkpointtest.Marker) {
				t.Errorf("error %q quotes message text", err)
			}
		})
	}
}
