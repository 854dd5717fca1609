package jobs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestRiverLogger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level     slog.Level
		wantLines []string
	}{
		{slog.LevelInfo, []string{"level=WARN msg=warning", "level=ERROR msg=failure"}},
		{slog.LevelDebug, []string{"level=DEBUG msg=\"producer job counts\" queue=default", "level=WARN msg=warning", "level=ERROR msg=failure"}},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
				Level:       tt.level,
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
			}))
			l := RiverLogger(base).With(slog.String("queue", "default"))
			l.Info("producer job counts")
			l.Warn("warning")
			l.Error("failure")
			got := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(got) != len(tt.wantLines) {
				t.Fatalf("lines:\n%s\nwant %d", buf.String(), len(tt.wantLines))
			}
			for i, want := range tt.wantLines {
				if !strings.HasPrefix(got[i], want) {
					t.Errorf("line %d = %q, want it to start with %q", i, got[i], want)
				}
			}
		})
	}
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
