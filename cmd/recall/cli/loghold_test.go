package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLogHold: records below warn wait for release and then come in the
// order they were logged, with their attributes; warnings pass at once;
// after release nothing waits.
func TestLogHold(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var hold logHold
	logger := hold.logger(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		// The time differs from run to run.
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	logger.Info("one")
	logger.With(slog.String("part", "worker")).Debug("two")
	logger.Warn("three")
	if got, want := buf.String(), "level=WARN msg=three\n"; got != want {
		t.Fatalf("before release: %q, want only the warning %q", got, want)
	}
	hold.release(t.Context())
	logger.Info("four")
	hold.release(t.Context())
	want := []string{"level=WARN msg=three", "level=INFO msg=one", "level=DEBUG msg=two part=worker", "level=INFO msg=four"}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(buf.String()), "\n")); diff != "" {
		t.Errorf("after release (-want +got):\n%s", diff)
	}
}
