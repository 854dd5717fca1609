package evidence

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// ignoreVersion compares states on everything but Version (§4.9).
var ignoreVersion = cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Version" }, cmp.Ignore())

var refWord = regexp.MustCompile(`[\p{L}\p{Nd}\p{Mn}']+`)

// refWords lower-cases text and returns its words joined by single spaces.
func refWords(text string) string {
	var words []string
	for _, w := range refWord.FindAllString(strings.ReplaceAll(strings.ToLower(text), "’", "'"), -1) {
		if w = strings.Trim(w, "'"); w != "" {
			words = append(words, w)
		}
	}
	return strings.Join(words, " ")
}

// refKeywords are DefaultKeywords (the contract's words and more, §4.6) as
// refWords writes them.
var refKeywords = sync.OnceValue(func() (kws [3][]string) {
	for b, list := range DefaultKeywords {
		for _, k := range list {
			if w := refWords(k); w != "" {
				kws[b] = append(kws[b], w)
			}
		}
	}
	return kws
})

// refClassify is a naive classifier written from §4.6: lower-case the text,
// split it into words, and try the buckets in order.
func refClassify(text string) Bucket {
	joined := " " + refWords(text) + " "
	for b, list := range refKeywords() {
		for _, k := range list {
			if strings.Contains(joined, " "+k+" ") {
				return Bucket(b)
			}
		}
	}
	return RecentContext
}

// refExcerpt cuts rune by rune.
func refExcerpt(text string) (string, bool) {
	s := strings.TrimSpace(text)
	var b strings.Builder
	for _, r := range s {
		if b.Len()+utf8.RuneLen(r) > DefaultMaxExcerptBytes {
			return b.String(), true
		}
		b.WriteRune(r)
	}
	return b.String(), false
}

// referenceFold is a naive model of §4 with the default Config: it folds
// history[:k] into a new state one message at a time and measures the
// rendered message (Render) after each entry.
func referenceFold(history []checkpoint.Message, k int) State {
	s := NewState()
	s.Cursor = k
	for i := range k {
		m := history[i]
		if m.Type != "chat" || !(m.Role == checkpoint.RoleUser || m.Role == checkpoint.RoleAssistant && !m.HasToolCalls) {
			continue
		}
		excerpt, truncated := refExcerpt(m.Text)
		if excerpt == "" {
			continue
		}
		list := s.Buckets.Get(refClassify(m.Text))
		*list = append(*list, Entry{Role: m.Role, MessageID: m.ID, Index: i, Excerpt: excerpt, Truncated: truncated})
		if len(*list) > DefaultMaxEntriesPerBucket {
			*list = slices.Delete(*list, 0, 1)
			s.OmittedEntries++
		}
		for s.Buckets.Len() > 0 && EstimateTokens(len(Render(&s).Content)) > DefaultMaxTokens {
			var largest *[]Entry
			for _, b := range []Bucket{RecentContext, OpenWork, Decisions, Constraints} {
				if l := s.Buckets.Get(b); largest == nil || len(*l) > len(*largest) {
					largest = l
				}
			}
			*largest = slices.Delete(*largest, 0, 1)
			s.OmittedEntries++
		}
	}
	s.MessageCount = len(history)
	s.PrefixDigest, _ = checkpoint.PrefixDigest(history, k)
	if k > 0 {
		s.Version = 1
	}
	return s
}

// checkBounds checks what must hold of every state.
func checkBounds(tb testing.TB, s *State) {
	tb.Helper()
	if s.Buckets.Len() > 4*DefaultMaxEntriesPerBucket {
		tb.Errorf("%d entries", s.Buckets.Len())
	}
	for b := range numBuckets {
		list := *s.Buckets.Get(b)
		if len(list) > DefaultMaxEntriesPerBucket {
			tb.Errorf("bucket %v has %d entries", b, len(list))
		}
		for i, e := range list {
			if e.Excerpt == "" || len(e.Excerpt) > DefaultMaxExcerptBytes || !utf8.ValidString(e.Excerpt) {
				tb.Errorf("bucket %v entry %d: bad excerpt of %d bytes", b, i, len(e.Excerpt))
			}
			if e.Index < 0 || e.Index >= s.Cursor {
				tb.Errorf("bucket %v entry %d: index %d outside [0, %d)", b, i, e.Index, s.Cursor)
			}
			if e.Role != checkpoint.RoleUser && e.Role != checkpoint.RoleAssistant {
				tb.Errorf("bucket %v entry %d: role %q", b, i, e.Role)
			}
			if i > 0 && list[i-1].Index >= e.Index {
				tb.Errorf("bucket %v not oldest first", b)
			}
		}
	}
	if s.Cursor > s.MessageCount {
		tb.Errorf("cursor %d > message_count %d", s.Cursor, s.MessageCount)
	}
	if got, want := renderedLen(s.OmittedEntries, &s.Buckets), len(appendEnvelope(nil, s.OmittedEntries, &s.Buckets)); got != want {
		tb.Errorf("renderedLen = %d, len(appendEnvelope) = %d", got, want)
	}
	m := Render(s)
	switch {
	case s.Buckets.Len() == 0 && s.Cursor == 0:
		if m != nil {
			tb.Errorf("Render = %+v, want nil", m)
		}
	case s.Buckets.Len() == 0:
		if m == nil || m.Content != Sentinel {
			tb.Errorf("Render = %+v, want the sentinel", m)
		}
	default:
		if m == nil || m.Role != checkpoint.RoleAssistant {
			tb.Fatalf("Render = %+v, want an assistant message", m)
		}
		if n := EstimateTokens(len(m.Content)); n > DefaultMaxTokens {
			tb.Errorf("rendered message is %d tokens, more than %d", n, DefaultMaxTokens)
		}
		var env envelope
		if err := json.Unmarshal([]byte(m.Content), &env); err != nil {
			tb.Fatalf("envelope is not valid JSON: %v", err)
		}
		if env.OmittedEntries != s.OmittedEntries {
			tb.Errorf("envelope omitted_entries = %d, want %d", env.OmittedEntries, s.OmittedEntries)
		}
		if !bucketsEqual(&s.Buckets, &env.Buckets) {
			tb.Errorf("envelope buckets differ (-state +envelope):\n%s", cmp.Diff(s.Buckets, env.Buckets.clone()))
		}
	}
}

func bucketsEqual(a, b *Buckets) bool {
	for i := range numBuckets {
		if !slices.Equal(*a.Get(i), *b.Get(i)) {
			return false
		}
	}
	return true
}

// statesEqual compares all but Version, cheaply; cmp.Diff explains.
func statesEqual(a, b *State) bool {
	return a.Cursor == b.Cursor && a.MessageCount == b.MessageCount && a.PrefixDigest == b.PrefixDigest &&
		a.OmittedEntries == b.OmittedEntries && bucketsEqual(&a.Buckets, &b.Buckets)
}

// evidentialCount counts the messages of history[:k] that make an entry.
func evidentialCount(history []checkpoint.Message, k int) int {
	n := 0
	for i := range k {
		if history[i].Evidential() && strings.TrimSpace(history[i].Text) != "" {
			n++
		}
	}
	return n
}

const propertySeeds = 300

// TestPropertyCoalescing checks §4.9: however a history arrives — in one
// snapshot, in growing snapshots, with stale and repeated ones between — the
// state (all but version) equals one fold over it, and equals the reference
// model. Bounds hold after every step.
func TestPropertyCoalescing(t *testing.T) {
	t.Parallel()
	for seed := range uint64(propertySeeds) {
		r := rand.New(rand.NewPCG(seed, 0xc0a1e5ce))
		history, _ := checkpointtest.RandomHistory(t, r, 1+r.IntN(80))
		one, _ := fold(t, NewState(), history)
		checkBounds(t, &one)
		k := max(0, NewestRequest(history))
		if ref := referenceFold(history, k); !statesEqual(&ref, &one) {
			t.Fatalf("seed %d: one fold differs from the reference model (-want +got):\n%s", seed, cmp.Diff(ref, one, ignoreVersion))
		}
		if got, want := one.Buckets.Len()+one.OmittedEntries, evidentialCount(history, k); got != want {
			t.Fatalf("seed %d: entries + omitted = %d, want %d evidential messages", seed, got, want)
		}

		s := NewState()
		var applied int64
		cuts := []int{}
		for range r.IntN(8) {
			cuts = append(cuts, r.IntN(len(history)+1))
		}
		slices.Sort(cuts)
		cuts = append(cuts, len(history))
		for i, c := range cuts {
			snapshot := history[:c]
			if i > 0 && i < len(cuts)-1 && r.IntN(3) == 0 {
				// A stale or repeated snapshot arrives late.
				snapshot = history[:cuts[r.IntN(i)]]
			}
			before := s.Clone()
			next, outcome := fold(t, s, snapshot)
			switch outcome {
			case checkpoint.Applied:
				applied++
				if next.Cursor <= before.Cursor {
					t.Fatalf("seed %d: applied without moving the cursor", seed)
				}
			case checkpoint.Stale, checkpoint.PrefixMismatch:
				if !statesEqual(&before, &next) || before.Version != next.Version {
					t.Fatalf("seed %d: %v changed the state:\n%s", seed, outcome, cmp.Diff(before, next))
				}
			}
			if next.Version != applied {
				t.Fatalf("seed %d: version %d after %d applied folds", seed, next.Version, applied)
			}
			if next.Cursor < before.Cursor {
				t.Fatalf("seed %d: cursor moved back from %d to %d", seed, before.Cursor, next.Cursor)
			}
			checkBounds(t, &next)
			s = next
		}
		if !statesEqual(&one, &s) {
			t.Fatalf("seed %d: growing snapshots %v differ from one fold (-one +growing):\n%s", seed, cuts, cmp.Diff(one, s, ignoreVersion))
		}
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
}

// TestPropertySummarisePieces checks that Summarise over [cursor, k) in
// pieces equals one Fold.
func TestPropertySummarisePieces(t *testing.T) {
	t.Parallel()
	for seed := range uint64(propertySeeds) {
		r := rand.New(rand.NewPCG(seed, 0x5a3))
		history, _ := checkpointtest.RandomHistory(t, r, 1+r.IntN(80))
		want, _ := fold(t, NewState(), history)
		k := NewestRequest(history)
		s := NewState()
		c := checkpoint.ChainStart()
		for a := 0; a < k; {
			b := min(k, a+1+r.IntN(10))
			var err error
			if c, err = checkpoint.Chain(c, history[a:b]); err != nil {
				t.Fatal(err)
			}
			s.Summarise(history[a:b], c, nil, seedConfig)
			checkBounds(t, &s)
			a = b
		}
		s.MessageCount = len(history)
		if !statesEqual(&want, &s) {
			t.Fatalf("seed %d: Summarise in pieces differs from one Fold (-fold +pieces):\n%s", seed, cmp.Diff(want, s, ignoreVersion))
		}
	}
}

// TestPropertyRenderWithin checks RenderWithin over random states and
// budgets: the message fits, is valid JSON, drops entries in eviction order
// and counts them.
func TestPropertyRenderWithin(t *testing.T) {
	t.Parallel()
	for seed := range uint64(propertySeeds) {
		r := rand.New(rand.NewPCG(seed, 0x7e))
		history, _ := checkpointtest.RandomHistory(t, r, 1+r.IntN(60))
		s, _ := fold(t, NewState(), history)
		budget := r.IntN(DefaultMaxTokens + 200)
		full := Render(&s)
		m := RenderWithin(&s, budget)
		if m == nil {
			if full != nil && s.Buckets.Len() > 0 && EstimateTokens(len(appendEnvelope(nil, s.OmittedEntries+s.Buckets.Len(), &Buckets{}))) <= budget {
				t.Fatalf("seed %d: RenderWithin(%d) = nil although an empty envelope fits", seed, budget)
			}
			continue
		}
		if n := EstimateTokens(len(m.Content)); n > budget {
			t.Fatalf("seed %d: RenderWithin(%d) is %d tokens", seed, budget, n)
		}
		if full != nil && EstimateTokens(len(full.Content)) <= budget && m.Content != full.Content {
			t.Fatalf("seed %d: RenderWithin(%d) differs from Render although it fits", seed, budget)
		}
		if m.Content == Sentinel {
			continue
		}
		var env envelope
		if err := json.Unmarshal([]byte(m.Content), &env); err != nil {
			t.Fatalf("seed %d: not JSON: %v", seed, err)
		}
		if got, want := env.Buckets.Len()+env.OmittedEntries, s.Buckets.Len()+s.OmittedEntries; got != want {
			t.Fatalf("seed %d: entries + omitted = %d, want %d", seed, got, want)
		}
		// What is kept is the newest of each bucket.
		for b := range numBuckets {
			kept, all := *env.Buckets.Get(b), *s.Buckets.Get(b)
			if diff := cmp.Diff(all[len(all)-len(kept):], kept, cmp.Comparer(func(a, b []Entry) bool { return slices.Equal(a, b) })); diff != "" {
				t.Fatalf("seed %d: bucket %v keeps other than its newest entries:\n%s", seed, b, diff)
			}
		}
	}
}
