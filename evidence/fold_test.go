package evidence

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// baseHistory is a short conversation with an entry for every bucket.
func baseHistory() []checkpoint.Message {
	return []checkpoint.Message{
		checkpointtest.User("m0", "We must ship by Friday."),
		checkpointtest.ToolUse("m1", "Let me check; we must look."),
		checkpointtest.ToolResult("m2", "must rows"),
		checkpointtest.Assistant("m3", "Agreed: we'll use Postgres."),
		checkpointtest.User("m4", "Now draft the schema."),
		checkpointtest.Assistant("m5", "Still need to add the index."),
		checkpointtest.User("m6", "Thanks. What now?"),
	}
}

func TestFoldRules(t *testing.T) {
	t.Parallel()
	h := baseHistory()
	changed := baseHistory()
	changed[3] = checkpointtest.Assistant("m3", "Agreed: we'll use MySQL.")
	changedAtCursor := baseHistory()
	changedAtCursor[4] = checkpointtest.User("m4", "Now draft the schema, please.")

	wantAt4 := buckets([]Entry{entry(checkpoint.RoleUser, "m0", 0, "We must ship by Friday.")}, []Entry{entry(checkpoint.RoleAssistant, "m3", 3, "Agreed: we'll use Postgres.")}, nil, nil)
	wantAt6 := buckets(wantAt4.Constraints, wantAt4.Decisions,
		[]Entry{entry(checkpoint.RoleAssistant, "m5", 5, "Still need to add the index.")},
		[]Entry{entry(checkpoint.RoleUser, "m4", 4, "Now draft the schema.")})

	tests := []struct {
		name        string
		prior       []checkpoint.Message // folded into a new state first, nil for none
		corrupt     bool                 // corrupt the prior state's prefix digest
		history     []checkpoint.Message
		wantOutcome checkpoint.Outcome
		// wantCursor, wantCount, wantVersion and wantBuckets describe the
		// state after the fold; PrefixDigest must be the chain of
		// history[:wantCursor] (or the prior state's, when it is unchanged).
		wantCursor  int
		wantCount   int
		wantVersion int64
		wantBuckets Buckets
		wantSame    bool // the state must equal the prior state
	}{
		{name: "empty history", history: nil, wantOutcome: checkpoint.NothingToSummarise, wantBuckets: buckets(nil, nil, nil, nil)},
		{name: "one request", history: h[:1], wantOutcome: checkpoint.NothingToSummarise, wantCount: 1, wantBuckets: buckets(nil, nil, nil, nil)},
		{name: "no user message", history: []checkpoint.Message{checkpointtest.Assistant("a0", "We must."), checkpointtest.Assistant("a1", "Agreed.")}, wantOutcome: checkpoint.NothingToSummarise, wantCount: 2, wantBuckets: buckets(nil, nil, nil, nil)},
		{name: "summarise up to the newest request", history: h[:5], wantOutcome: checkpoint.Applied, wantCursor: 4, wantCount: 5, wantVersion: 1, wantBuckets: wantAt4},
		{name: "newest request never summarised", history: h, wantOutcome: checkpoint.Applied, wantCursor: 6, wantCount: 7, wantVersion: 1, wantBuckets: wantAt6},
		{name: "assistant messages after the request", history: h[:6], wantOutcome: checkpoint.Applied, wantCursor: 4, wantCount: 6, wantVersion: 1, wantBuckets: wantAt4},
		{name: "stale: history shorter than cursor", prior: h, history: h[:4], wantOutcome: checkpoint.Stale, wantSame: true},
		{name: "stale: empty history", prior: h, history: nil, wantOutcome: checkpoint.Stale, wantSame: true},
		{name: "prefix mismatch", prior: h[:5], history: changed, wantOutcome: checkpoint.PrefixMismatch, wantSame: true},
		{name: "prefix mismatch with a corrupt stored digest", prior: h[:5], corrupt: true, history: h, wantOutcome: checkpoint.PrefixMismatch, wantSame: true},
		{name: "k equals cursor", prior: h[:5], history: h[:5], wantOutcome: checkpoint.NothingToSummarise, wantSame: true},
		{name: "k below cursor", prior: h[:5], history: h[:6], wantOutcome: checkpoint.NothingToSummarise, wantCursor: 4, wantCount: 6, wantVersion: 1, wantBuckets: wantAt4},
		{name: "history equal to cursor", prior: h[:5], history: h[:4], wantOutcome: checkpoint.NothingToSummarise, wantSame: true},
		{name: "append continues", prior: h[:5], history: h, wantOutcome: checkpoint.Applied, wantCursor: 6, wantCount: 7, wantVersion: 2, wantBuckets: wantAt6},
		{name: "only [0, cursor) is checked", prior: h[:5], history: changedAtCursor, wantOutcome: checkpoint.Applied, wantCursor: 6, wantCount: 7, wantVersion: 2,
			wantBuckets: buckets(wantAt6.Constraints, wantAt6.Decisions, wantAt6.OpenWork, []Entry{entry(checkpoint.RoleUser, "m4", 4, "Now draft the schema, please.")})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			prior := NewState()
			if tt.prior != nil {
				prior = foldAll(t, tt.prior)
			}
			if tt.corrupt {
				prior.PrefixDigest[0] ^= 1
			}
			before := prior.Clone()
			got, outcome, err := Fold(prior, tt.history, seedConfig)
			if err != nil {
				t.Fatalf("Fold: %v", err)
			}
			if outcome != tt.wantOutcome {
				t.Errorf("outcome = %v, want %v", outcome, tt.wantOutcome)
			}
			if diff := cmp.Diff(before, prior); diff != "" {
				t.Errorf("Fold changed its input state (-before +after):\n%s", diff)
			}
			want := before
			if !tt.wantSame {
				want = State{
					Version: tt.wantVersion, Cursor: tt.wantCursor, MessageCount: tt.wantCount,
					PrefixDigest: checkpointtest.ChainOf(t, tt.history, tt.wantCursor), Buckets: tt.wantBuckets,
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("state mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFoldZeroState(t *testing.T) {
	t.Parallel()
	h := baseHistory()
	got, outcome, err := Fold(State{}, h, seedConfig)
	if err != nil || outcome != checkpoint.Applied {
		t.Fatalf("Fold(State{}) = %v, %v; want applied", outcome, err)
	}
	if diff := cmp.Diff(foldAll(t, h), got); diff != "" {
		t.Errorf("Fold(State{}) differs from Fold(NewState()) (-want +got):\n%s", diff)
	}
	got, outcome, _ = Fold(State{}, h[:1], seedConfig)
	if outcome != checkpoint.NothingToSummarise || got.PrefixDigest != checkpoint.ChainStart() {
		t.Errorf("Fold(State{}, one request) = %v with prefix %s, want nothing_to_summarise with ChainStart()", outcome, got.PrefixDigest)
	}
}

// TestFoldEvidentialOnly checks §4.5: each message is followed by a request,
// so it is summarised; only user text and assistant text without tool calls
// on the conversation channel become entries.
func TestFoldEvidentialOnly(t *testing.T) {
	t.Parallel()
	const text = "We must keep this."
	toolCalls := []any{map[string]any{"id": "t", "name": "f", "args": map[string]any{}}}
	tests := []struct {
		name      string
		in        string
		wantEntry *Entry // in Constraints
	}{
		{name: "user", in: checkpointtest.Flat("user", "x", text), wantEntry: &Entry{Role: checkpoint.RoleUser, MessageID: "x", Excerpt: text}},
		{name: "human alias", in: checkpointtest.Flat("human", "x", text), wantEntry: &Entry{Role: checkpoint.RoleUser, MessageID: "x", Excerpt: text}},
		{name: "assistant", in: checkpointtest.Flat("assistant", "x", text), wantEntry: &Entry{Role: checkpoint.RoleAssistant, MessageID: "x", Excerpt: text}},
		{name: "ai alias", in: checkpointtest.Flat("ai", "x", text), wantEntry: &Entry{Role: checkpoint.RoleAssistant, MessageID: "x", Excerpt: text}},
		{name: "no id", in: `{"role":"user","content":"` + text + `"}`, wantEntry: &Entry{Role: checkpoint.RoleUser, Excerpt: text}},
		{name: "explicit chat type", in: checkpointtest.Flat("assistant", "x", text, "type", "chat"), wantEntry: &Entry{Role: checkpoint.RoleAssistant, MessageID: "x", Excerpt: text}},
		{name: "empty tool calls", in: checkpointtest.Flat("assistant", "x", text, "tool_calls", []any{}, "invalid_tool_calls", []any{}), wantEntry: &Entry{Role: checkpoint.RoleAssistant, MessageID: "x", Excerpt: text}},
		{name: "stored ai", in: `{"type":"ai","data":{"id":"x","content":"` + text + `","response_metadata":{}}}`, wantEntry: &Entry{Role: checkpoint.RoleAssistant, MessageID: "x", Excerpt: text}},
		{name: "constructor human", in: `{"lc":1,"type":"constructor","id":["HumanMessage"],"kwargs":{"id":"x","content":"` + text + `"}}`, wantEntry: &Entry{Role: checkpoint.RoleUser, MessageID: "x", Excerpt: text}},
		{name: "assistant with tool calls", in: checkpointtest.Flat("assistant", "x", text, "tool_calls", toolCalls)},
		{name: "assistant with openai tool calls", in: checkpointtest.Flat("assistant", "x", text, "tool_calls", []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}})},
		{name: "assistant with invalid tool calls", in: checkpointtest.Flat("assistant", "x", text, "invalid_tool_calls", toolCalls)},
		{name: "assistant with additional_kwargs tool calls", in: checkpointtest.Flat("assistant", "x", text, "additional_kwargs", map[string]any{"tool_calls": toolCalls})},
		{name: "stored ai with tool calls", in: `{"type":"ai","data":{"id":"x","content":"` + text + `","tool_calls":[{"id":"t","name":"f","args":{}}]}}`},
		{name: "tool", in: checkpointtest.Flat("tool", "x", text, "tool_call_id", "t", "artifact", map[string]any{"note": text})},
		{name: "system", in: checkpointtest.Flat("system", "x", text)},
		{name: "stored system", in: `{"type":"system","data":{"content":"` + text + `"}}`},
		{name: "thinking", in: checkpointtest.Flat("assistant", "x", text, "type", "thinking")},
		{name: "status", in: checkpointtest.Flat("assistant", "x", text, "type", "status")},
		{name: "todos", in: checkpointtest.Flat("assistant", "x", text, "type", "todos")},
		{name: "error", in: checkpointtest.Flat("assistant", "x", text, "type", "error")},
		{name: "queue_cancel", in: checkpointtest.Flat("assistant", "x", text, "type", "queue_cancel")},
		{name: "other type", in: checkpointtest.Flat("assistant", "x", text, "type", "reflection")},
		{name: "user thinking", in: checkpointtest.Flat("user", "x", text, "type", "thinking")},
		{name: "blank text", in: checkpointtest.Flat("user", "x", " \n\t\u00a0 ")},
		{name: "empty text", in: checkpointtest.Flat("user", "x", "")},
		{name: "null content", in: `{"role":"user","id":"x","content":null}`},
		{name: "image only", in: checkpointtest.Flat("user", "x", []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:"}}})},
		{name: "blank text parts", in: checkpointtest.Flat("user", "x", []any{map[string]any{"type": "text", "text": " "}, map[string]any{"type": "text", "text": ""}})},
		{name: "text parts joined", in: checkpointtest.Flat("user", "x", []any{
			map[string]any{"type": "text", "text": "  We must"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:"}},
			map[string]any{"type": "text", "text": "keep this.  "},
		}), wantEntry: &Entry{Role: checkpoint.RoleUser, MessageID: "x", Excerpt: "We must\nkeep this."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			history := []checkpoint.Message{checkpointtest.Decode(t, tt.in), checkpointtest.User("req", "and now?")}
			got, outcome := fold(t, NewState(), history)
			if outcome != checkpoint.Applied || got.Cursor != 1 || got.Version != 1 {
				t.Fatalf("Fold = %v, cursor %d, version %d; want applied, cursor 1, version 1", outcome, got.Cursor, got.Version)
			}
			want := buckets(nil, nil, nil, nil)
			if tt.wantEntry != nil {
				want.Constraints = []Entry{*tt.wantEntry}
			}
			if diff := cmp.Diff(want, got.Buckets); diff != "" {
				t.Errorf("buckets mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name          string
		text          string
		want          string
		wantTruncated bool
	}{
		{name: "short", text: "hi", want: "hi"},
		{name: "trimmed", text: " \n\thi there \r\n", want: "hi there"},
		{name: "unicode space trimmed", text: "\u00a0\u2003hi\u3000", want: "hi"},
		{name: "blank", text: " \t\n ", want: ""},
		{name: "exactly 900", text: a(900), want: a(900)},
		{name: "901 cut", text: a(901), want: a(900), wantTruncated: true},
		{name: "900 after trimming", text: "   " + a(900) + "\n\n", want: a(900)},
		{name: "2-byte char ends at 900", text: a(898) + "é", want: a(898) + "é"},
		{name: "2-byte char across 900", text: a(899) + "é", want: a(899), wantTruncated: true},
		{name: "2-byte char after 900", text: a(900) + "é", want: a(900), wantTruncated: true},
		{name: "3-byte char ends at 900", text: a(897) + "中", want: a(897) + "中"},
		{name: "3-byte char across 900, 1 byte in", text: a(899) + "中", want: a(899), wantTruncated: true},
		{name: "3-byte char across 900, 2 bytes in", text: a(898) + "中", want: a(898), wantTruncated: true},
		{name: "4-byte char ends at 900", text: a(896) + "😀", want: a(896) + "😀"},
		{name: "4-byte char across 900, 1 byte in", text: a(899) + "😀", want: a(899), wantTruncated: true},
		{name: "4-byte char across 900, 2 bytes in", text: a(898) + "😀", want: a(898), wantTruncated: true},
		{name: "4-byte char across 900, 3 bytes in", text: a(897) + "😀", want: a(897), wantTruncated: true},
		{name: "all 4-byte", text: strings.Repeat("😀", 300), want: strings.Repeat("😀", 225), wantTruncated: true},
		{name: "all 3-byte", text: strings.Repeat("中", 301), want: strings.Repeat("中", 300), wantTruncated: true},
		{name: "all 2-byte odd cut", text: "a" + strings.Repeat("é", 500), want: "a" + strings.Repeat("é", 449), wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, truncated := Excerpt(tt.text, DefaultMaxExcerptBytes)
			if got != tt.want || truncated != tt.wantTruncated {
				t.Errorf("Excerpt = %d bytes %q…, truncated %v; want %d bytes, truncated %v", len(got), got[max(0, len(got)-8):], truncated, len(tt.want), tt.wantTruncated)
			}
			if !utf8.ValidString(got) || len(got) > DefaultMaxExcerptBytes {
				t.Errorf("Excerpt is %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
			}
			// The same through the fold.
			s := foldAll(t, []checkpoint.Message{checkpointtest.User("x", tt.text), checkpointtest.User("req", "?")})
			var want []Entry
			if tt.want != "" {
				want = []Entry{{Role: checkpoint.RoleUser, MessageID: "x", Excerpt: tt.want, Truncated: tt.wantTruncated}}
			}
			all := append(append(append(s.Buckets.Constraints, s.Buckets.Decisions...), s.Buckets.OpenWork...), s.Buckets.RecentContext...)
			if diff := cmp.Diff(want, all, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("fold entries mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFoldBucketCap(t *testing.T) {
	t.Parallel()
	var history []checkpoint.Message
	for i := range 8 {
		history = append(history, checkpointtest.User(fmt.Sprintf("m%d", i), fmt.Sprintf("We must do %d.", i)))
	}
	history = append(history, checkpointtest.Assistant("a8", "Agreed."), checkpointtest.User("req", "go"))
	got := foldAll(t, history)
	var want []Entry
	for i := 2; i < 8; i++ {
		want = append(want, entry(checkpoint.RoleUser, fmt.Sprintf("m%d", i), i, fmt.Sprintf("We must do %d.", i)))
	}
	if diff := cmp.Diff(buckets(want, []Entry{entry(checkpoint.RoleAssistant, "a8", 8, "Agreed.")}, nil, nil), got.Buckets); diff != "" {
		t.Errorf("buckets mismatch (-want +got):\n%s", diff)
	}
	if got.OmittedEntries != 2 {
		t.Errorf("OmittedEntries = %d, want 2", got.OmittedEntries)
	}
	// A custom cap.
	got, _, _ = Fold(NewState(), history, &Config{Profile: ProfileSeed, MaxEntriesPerBucket: 3})
	if n := len(got.Buckets.Constraints); n != 3 || got.Buckets.Constraints[0].Index != 5 || got.OmittedEntries != 5 {
		t.Errorf("with cap 3: %d constraints starting at %d, omitted %d; want 3 from index 5, omitted 5", n, got.Buckets.Constraints[0].Index, got.OmittedEntries)
	}
}

// fullText returns a text of exactly DefaultMaxExcerptBytes bytes led by a
// keyword of bucket b.
func fullText(b Bucket) string {
	lead := map[Bucket]string{Constraints: "must", Decisions: "agreed", OpenWork: "todo", RecentContext: "note"}[b]
	return lead + " " + strings.Repeat("z", DefaultMaxExcerptBytes-len(lead)-1)
}

// TestFoldTokenBound checks §4.8's second bound with entries of 900 bytes,
// of which five fit in 1,800 tokens and six do not: each sixth entry evicts
// the oldest entry of the largest bucket, ties broken in the order
// recent_context, open_work, decisions, constraints.
func TestFoldTokenBound(t *testing.T) {
	t.Parallel()
	// Precondition, from the rendered message itself: five full entries fit
	// and six do not.
	probe := func(n int) int {
		s := NewState()
		s.Cursor = n
		for i := range n {
			s.Buckets.RecentContext = append(s.Buckets.RecentContext, entry(checkpoint.RoleUser, fmt.Sprintf("m%d", i), i, fullText(RecentContext)))
		}
		s.OmittedEntries = 9
		return EstimateTokens(len(Render(&s).Content))
	}
	if probe(5) > DefaultMaxTokens || probe(6) <= DefaultMaxTokens {
		t.Fatalf("precondition: 5 entries are %d tokens, 6 are %d; want ≤ and > %d", probe(5), probe(6), DefaultMaxTokens)
	}
	const C, D, O, R = Constraints, Decisions, OpenWork, RecentContext
	tests := []struct {
		name string
		seq  []Bucket
		// want lists the indexes left in each bucket.
		want        [numBuckets][]int
		wantOmitted int
	}{
		{name: "five fit", seq: []Bucket{C, D, O, R, R}, want: [numBuckets][]int{{0}, {1}, {2}, {3, 4}}},
		{name: "tie recent_context before open_work", seq: []Bucket{R, O, D, C, R, O}, want: [numBuckets][]int{{3}, {2}, {1, 5}, {4}}, wantOmitted: 1},
		{name: "tie open_work before decisions", seq: []Bucket{D, O, D, O, C, R}, want: [numBuckets][]int{{4}, {0, 2}, {3}, {5}}, wantOmitted: 1},
		{name: "tie decisions before constraints", seq: []Bucket{C, D, O, R, C, D}, want: [numBuckets][]int{{0, 4}, {5}, {2}, {3}}, wantOmitted: 1},
		{name: "three-way tie", seq: []Bucket{C, O, C, O, D, D}, want: [numBuckets][]int{{0, 2}, {4, 5}, {3}, nil}, wantOmitted: 1},
		{name: "largest beats tie order", seq: []Bucket{C, C, C, D, D, R}, want: [numBuckets][]int{{1, 2}, {3, 4}, nil, {5}}, wantOmitted: 1},
		{name: "tie after an eviction", seq: []Bucket{C, C, C, D, D, R, O}, want: [numBuckets][]int{{1, 2}, {4}, {6}, {5}}, wantOmitted: 2},
		{name: "constraints go when largest", seq: []Bucket{C, C, C, C, D, R}, want: [numBuckets][]int{{1, 2, 3}, {4}, nil, {5}}, wantOmitted: 1},
		{name: "one bucket", seq: []Bucket{O, O, O, O, O, O, O, O}, want: [numBuckets][]int{nil, nil, {3, 4, 5, 6, 7}, nil}, wantOmitted: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var history []checkpoint.Message
			for i, b := range tt.seq {
				history = append(history, checkpointtest.User(fmt.Sprintf("m%d", i), fullText(b)))
			}
			history = append(history, checkpointtest.User("req", "?"))
			s := foldAll(t, history)
			var got [numBuckets][]int
			for b := range numBuckets {
				for _, e := range *s.Buckets.Get(b) {
					got[b] = append(got[b], e.Index)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("indexes per bucket mismatch (-want +got):\n%s", diff)
			}
			if s.OmittedEntries != tt.wantOmitted {
				t.Errorf("OmittedEntries = %d, want %d", s.OmittedEntries, tt.wantOmitted)
			}
			if n := EstimateTokens(len(Render(&s).Content)); n > DefaultMaxTokens {
				t.Errorf("rendered message is %d tokens, more than %d", n, DefaultMaxTokens)
			}
		})
	}
}

// TestFoldTokenBoundSeveralEvictions adds one large entry to many small ones:
// it evicts small entries of the largest bucket until the message fits.
func TestFoldTokenBoundSeveralEvictions(t *testing.T) {
	t.Parallel()
	var history []checkpoint.Message
	// Four full entries, then five small recent ones, then a full one.
	for i, b := range []Bucket{Constraints, Decisions, OpenWork, Constraints} {
		history = append(history, checkpointtest.User(fmt.Sprintf("m%d", i), fullText(b)))
	}
	for i := 4; i < 9; i++ {
		history = append(history, checkpointtest.Assistant(fmt.Sprintf("m%d", i), fmt.Sprintf("small note %d", i)))
	}
	history = append(history, checkpointtest.User("m9", fullText(Decisions)), checkpointtest.User("req", "?"))
	s := foldAll(t, history)
	tokens := EstimateTokens(len(Render(&s).Content))
	if tokens > DefaultMaxTokens {
		t.Fatalf("rendered message is %d tokens, more than %d", tokens, DefaultMaxTokens)
	}
	// Recent context was largest (5): its oldest entries go first, until it
	// ties with the others at 2 and... whatever remains must be the newest
	// of each bucket, and everything evicted is counted.
	total := s.Buckets.Len() + s.OmittedEntries
	if total != 10 {
		t.Errorf("entries %d + omitted %d = %d, want 10", s.Buckets.Len(), s.OmittedEntries, total)
	}
	if s.OmittedEntries < 2 {
		t.Errorf("OmittedEntries = %d, want at least 2", s.OmittedEntries)
	}
	for b := range numBuckets {
		list := *s.Buckets.Get(b)
		for i := 1; i < len(list); i++ {
			if list[i-1].Index >= list[i].Index {
				t.Errorf("bucket %v not oldest first: %d then %d", b, list[i-1].Index, list[i].Index)
			}
		}
	}
	if got := s.Buckets.Decisions; len(got) == 0 || got[len(got)-1].Index != 9 {
		t.Errorf("the newest entry was evicted: decisions = %v", got)
	}
	// Adding the last message to the state with one more entry than fits
	// must evict only the oldest entries of the largest bucket: the
	// reference model says which.
	if diff := cmp.Diff(referenceFold(history, 10), s, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Version" }, cmp.Ignore())); diff != "" {
		t.Errorf("fold differs from the reference model (-want +got):\n%s", diff)
	}
}

func TestFoldVersion(t *testing.T) {
	t.Parallel()
	h := baseHistory()
	changed := baseHistory()
	changed[0] = checkpointtest.User("m0", "We must ship by Monday.")
	more := append(baseHistory(), checkpointtest.Assistant("m7", "Done."), checkpointtest.User("m8", "Next?"))
	onlyTools := append(append([]checkpoint.Message(nil), more...), checkpointtest.ToolUse("m9", "x"), checkpointtest.ToolResult("m10", "y"), checkpointtest.User("m11", "ok"))
	steps := []struct {
		history     []checkpoint.Message
		wantOutcome checkpoint.Outcome
		wantVersion int64
	}{
		{h[:1], checkpoint.NothingToSummarise, 0},
		{h[:3], checkpoint.NothingToSummarise, 0},
		{h[:5], checkpoint.Applied, 1},
		{h[:5], checkpoint.NothingToSummarise, 1},
		{h[:6], checkpoint.NothingToSummarise, 1},
		{h[:2], checkpoint.Stale, 1},
		{changed, checkpoint.PrefixMismatch, 1},
		{h, checkpoint.Applied, 2},
		{h, checkpoint.NothingToSummarise, 2},
		{more, checkpoint.Applied, 3},
		{onlyTools, checkpoint.Applied, 4}, // the cursor moves although no entry is added
		{more, checkpoint.Stale, 4},
		{h, checkpoint.Stale, 4},
		{append(onlyTools, checkpointtest.Assistant("m12", "ok")), checkpoint.NothingToSummarise, 4},
	}
	s := NewState()
	for i, st := range steps {
		next, outcome, err := Fold(s, st.history, seedConfig)
		if err != nil {
			t.Fatal(err)
		}
		if outcome != st.wantOutcome || next.Version != st.wantVersion {
			t.Errorf("step %d: outcome %v, version %d; want %v, %d", i, outcome, next.Version, st.wantOutcome, st.wantVersion)
		}
		s = next
	}
	before := s.Clone()
	s.Summarise(nil, checkpoint.ChainStart(), nil, seedConfig)
	if diff := cmp.Diff(before, s); diff != "" {
		t.Errorf("Summarise(nil) changed the state (-want +got):\n%s", diff)
	}
}

func TestNewestRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		history []checkpoint.Message
		want    int
	}{
		{name: "empty", want: -1},
		{name: "no user", history: []checkpoint.Message{checkpointtest.Assistant("a", "x"), checkpointtest.Msg("system", "s", "x")}, want: -1},
		{name: "last", history: []checkpoint.Message{checkpointtest.User("a", "x"), checkpointtest.Assistant("b", "y"), checkpointtest.User("c", "z")}, want: 2},
		{name: "before assistant", history: []checkpoint.Message{checkpointtest.User("a", "x"), checkpointtest.Assistant("b", "y")}, want: 0},
		{name: "stored human", history: []checkpoint.Message{checkpointtest.Decode(t, `{"type":"human","data":{"content":"x"}}`), checkpointtest.Assistant("b", "y")}, want: 0},
	}
	for _, tt := range tests {
		if got := NewestRequest(tt.history); got != tt.want {
			t.Errorf("%s: NewestRequest = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	var nilConfig *Config
	got := nilConfig.withDefaults()
	if got.MaxEntriesPerBucket != 6 || got.MaxTokens != 1800 || got.MaxExcerptBytes != 900 || got.Classifier == nil {
		t.Errorf("defaults = %+v, want 6, 1800, 900 and a classifier", got)
	}
	h := baseHistory()
	a, _, _ := Fold(NewState(), h, seedConfig)
	b, _, _ := Fold(NewState(), h, &Config{Profile: ProfileSeed})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("zero Config differs from nil (-nil +zero):\n%s", diff)
	}
	c, _, _ := Fold(NewState(), h, &Config{Profile: ProfileSeed, MaxExcerptBytes: 4})
	if e := c.Buckets.Constraints[0]; e.Excerpt != "We m" || !e.Truncated {
		t.Errorf("with MaxExcerptBytes 4: excerpt %q truncated %v, want \"We m\" true", e.Excerpt, e.Truncated)
	}
}

// TestConfigOutOfRange checks that bounds below 1 mean the defaults rather
// than a panic.
func TestConfigOutOfRange(t *testing.T) {
	t.Parallel()
	h := baseHistory()
	want := foldAll(t, h)
	for _, cfg := range []*Config{
		{Profile: ProfileSeed, MaxEntriesPerBucket: -1},
		{Profile: ProfileSeed, MaxTokens: -100},
		{Profile: ProfileSeed, MaxExcerptBytes: -5},
		{Profile: ProfileSeed, MaxEntriesPerBucket: -1, MaxTokens: -1, MaxExcerptBytes: -1},
	} {
		got, _, err := Fold(NewState(), h, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Fold with %+v differs from the defaults (-want +got):\n%s", *cfg, diff)
		}
	}
	if got, cut := Excerpt("  text ", -1); got != "" || !cut {
		t.Errorf("Excerpt(text, -1) = %q, %v; want \"\", true", got, cut)
	}
}
