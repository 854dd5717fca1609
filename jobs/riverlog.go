package jobs

import (
	"context"
	"log/slog"
)

// riverLogHandler passes River's own log lines on with info lowered to
// debug. River logs routine events at info (producer job counts, leader
// elections, maintenance runs): at recall's default level they were half of
// the log. River's warnings and errors keep their level.
type riverLogHandler struct{ h slog.Handler }

// RiverLogger returns the logger River is given: l with River's info lines
// at debug.
func RiverLogger(l *slog.Logger) *slog.Logger {
	return slog.New(riverLogHandler{l.Handler()})
}

func lower(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (r riverLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, lower(l))
}

func (r riverLogHandler) Handle(ctx context.Context, rec slog.Record) error {
	rec.Level = lower(rec.Level)
	return r.h.Handle(ctx, rec)
}

func (r riverLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return riverLogHandler{r.h.WithAttrs(attrs)}
}

func (r riverLogHandler) WithGroup(name string) slog.Handler {
	return riverLogHandler{r.h.WithGroup(name)}
}
