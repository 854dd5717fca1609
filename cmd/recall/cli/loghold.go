package cli

import (
	"context"
	"log/slog"
	"sync"
)

// logHold keeps a logger's routine records (below warn) until release, so
// that what a person waits for, recall dev's banner, is printed before
// them. Warnings and errors are not held.
type logHold struct {
	mu       sync.Mutex
	released bool
	held     []heldRecord
}

// heldRecord is a held record with the handler (and so the attributes and
// groups) it was logged through.
type heldRecord struct {
	h slog.Handler
	r slog.Record
}

// logger returns a logger over h whose routine records hold holds.
func (hold *logHold) logger(h slog.Handler) *slog.Logger {
	return slog.New(&holdHandler{inner: h, hold: hold})
}

// release writes the held records in the order they were logged; records
// logged from then on are written at once. It may be called more than once.
func (hold *logHold) release(ctx context.Context) {
	hold.mu.Lock()
	defer hold.mu.Unlock()
	if hold.released {
		return
	}
	hold.released = true
	// Under the lock: a record logged meanwhile waits, and comes after.
	for _, hr := range hold.held {
		_ = hr.h.Handle(ctx, hr.r)
	}
	hold.held = nil
}

// hold keeps r and reports true while the hold is on.
func (hold *logHold) hold(h slog.Handler, r slog.Record) bool {
	hold.mu.Lock()
	defer hold.mu.Unlock()
	if hold.released {
		return false
	}
	hold.held = append(hold.held, heldRecord{h: h, r: r.Clone()})
	return true
}

// holdHandler passes records below warn to its hold until it is released.
type holdHandler struct {
	inner slog.Handler
	hold  *logHold
}

func (h *holdHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *holdHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn && h.hold.hold(h.inner, r) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h *holdHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &holdHandler{inner: h.inner.WithAttrs(attrs), hold: h.hold}
}

func (h *holdHandler) WithGroup(name string) slog.Handler {
	return &holdHandler{inner: h.inner.WithGroup(name), hold: h.hold}
}
