package evidence

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// longHistory returns n messages, every tenth a request, with texts of
// textBytes bytes; the last tail messages have texts of tailBytes.
func longHistory(n, textBytes, tail, tailBytes int) []checkpoint.Message {
	h := make([]checkpoint.Message, n)
	words := []string{"We must keep", "Agreed to use", "Still need to", "Noted that"}
	for i := range h {
		size := textBytes
		if i >= n-tail {
			size = tailBytes
		}
		lead := fmt.Sprintf("%s %d ", words[i%len(words)], i)
		text := lead + strings.Repeat("x", max(0, size-len(lead)))
		m := checkpoint.Message{ID: fmt.Sprintf("m%d", i), Type: checkpoint.TypeChat, Text: text, Content: checkpointtest.TextContent(text), Artifact: json.RawMessage("null"), Role: checkpoint.RoleAssistant}
		if i%10 == 9 || i == n-1 {
			m.Role = checkpoint.RoleUser
		}
		h[i] = m
	}
	return h
}

// foldStream folds history as a worker would, one growing snapshot at a
// time, streaming the chain instead of re-digesting the prefix.
func foldStream(tb testing.TB, history []checkpoint.Message, step int) State {
	tb.Helper()
	s := NewState()
	c := checkpoint.ChainStart()
	for end := step; ; end += step {
		end = min(end, len(history))
		k := NewestRequest(history[:end])
		if k > s.Cursor {
			next, err := checkpoint.Chain(c, history[s.Cursor:k])
			if err != nil {
				tb.Fatal(err)
			}
			s.Summarise(history[s.Cursor:k], next, nil, seedConfig)
			c = next
		}
		if end == len(history) {
			return s
		}
	}
}

// TestFoldHoldsNoReferenceToHistory checks that no entry shares memory with
// a message: a 900-byte excerpt must not keep a megabyte of text alive.
func TestFoldHoldsNoReferenceToHistory(t *testing.T) {
	t.Parallel()
	history := longHistory(200, 5000, 0, 0)
	s := foldStream(t, history, 7)
	if n := s.Buckets.Len(); n == 0 || n > 4*DefaultMaxEntriesPerBucket {
		t.Fatalf("%d entries", n)
	}
	inside := func(p, q string) bool {
		if len(p) == 0 || len(q) == 0 {
			return false
		}
		a, b := uintptr(unsafe.Pointer(unsafe.StringData(p))), uintptr(unsafe.Pointer(unsafe.StringData(q)))
		return a >= b && a < b+uintptr(len(q))
	}
	for bkt := range numBuckets {
		for _, e := range *s.Buckets.Get(bkt) {
			m := &history[e.Index]
			if inside(e.Excerpt, m.Text) {
				t.Errorf("entry %d: the excerpt points into the message's text", e.Index)
			}
			if inside(e.MessageID, m.ID) {
				t.Errorf("entry %d: the message id points into the message", e.Index)
			}
		}
	}
}

// TestFoldMemoryBounded folds 10,000 messages and checks that what the state
// keeps alive is proportional to its bounded size (at most 24 entries of at
// most 900 bytes), not to the history. Not parallel: it measures the heap.
func TestFoldMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)

	// 10,000 messages of 1 KB, the last 100 of 256 KB: the newest entries
	// come from the large ones.
	history := longHistory(10_000, 1<<10, 100, 256<<10)
	s := foldStream(t, history, 10)
	if s.Cursor != len(history)-1 {
		t.Fatalf("cursor %d, want %d", s.Cursor, len(history)-1)
	}
	if n := s.Buckets.Len(); n > 4*DefaultMaxEntriesPerBucket {
		t.Fatalf("%d entries, want at most 24", n)
	}
	history = nil
	// Twice: sync.Pool (the digest buffers) keeps its victims for one cycle.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	// 24 entries × 900 bytes is about 22 KB; allow for the runtime's noise.
	const limit = 256 << 10
	t.Logf("heap grew by %d bytes for a state of %d entries", grown, s.Buckets.Len())
	if grown > limit {
		t.Errorf("heap grew by %d bytes after the fold, more than %d: the state keeps the history alive", grown, limit)
	}
	runtime.KeepAlive(s)
	runtime.KeepAlive(history)
}
