package store_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/store"
)

// TestInspect checks that an inspection pages through the whole archive and
// that its decisions are those of the core's ExplainView over the same
// history: the store chooses the view again for the held request, from the
// candidates its index finds, as extraction did.
func TestInspect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		messages int // a small archive is read whole, a large one through the index
		pageSize int
	}{
		{"small archive", 40, 7},
		{"large archive", 700, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, time.Minute)
			st := newFocusStore(t, tb, nil)
			h := longConversation(tt.messages, 5)
			if _, err := st.Ingest(t.Context(), snapshot(t, "e", h), store.Meta{}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Extract(t.Context(), "u", "c"); err != nil {
				t.Fatal(err)
			}

			want := foldWith(t, h, nil)
			raw, _ := json.Marshal(h)
			msgs, err := checkpoint.DecodeMessages(raw)
			if err != nil {
				t.Fatal(err)
			}
			k := evidence.NewestRequest(msgs)
			c, q := want.Candidates(evidence.RequestText(&msgs[k]))
			x := evidence.ExplainView(c, q, evidence.DefaultMaxTokens)

			var got []evidence.InspectedEntry
			var after *evidence.ArchivePosition
			for pages := 0; ; pages++ {
				in, err := st.Inspect(t.Context(), "u", "c", after, tt.pageSize)
				if err != nil {
					t.Fatal(err)
				}
				if !in.Matches || in.RequestIndex != k || in.ArchiveCount != want.Archive.Len() {
					t.Fatalf("page %d: matches %v, request %d, archive %d; want true, %d, %d",
						pages, in.Matches, in.RequestIndex, in.ArchiveCount, k, want.Archive.Len())
				}
				if len(in.Entries) > tt.pageSize {
					t.Fatalf("page %d holds %d entries, more than %d", pages, len(in.Entries), tt.pageSize)
				}
				got = append(got, in.Entries...)
				if in.Next == nil {
					break
				}
				after = in.Next
			}
			if len(got) != want.Archive.Len() {
				t.Fatalf("the pages hold %d entries, the archive %d", len(got), want.Archive.Len())
			}
			shown := 0
			for i, it := range want.Archive.Items() {
				e := got[i]
				if e.Item.Index != it.Index || e.Item.Span != it.Span || e.Item.Excerpt != it.Excerpt {
					t.Fatalf("entry %d is %d/%v, want %d/%v", i, e.Item.Index, e.Item.Span, it.Index, it.Span)
				}
				if diff := cmp.Diff(x.Decision(&it), e.Decision); diff != "" {
					t.Fatalf("entry %d/%v: decision (-core +store):\n%s", it.Index, it.Span, diff)
				}
				if e.Decision.Why == evidence.WhyShown {
					shown++
				}
			}
			if shown != len(want.Shown) {
				t.Errorf("%d entries are shown, the view holds %d", shown, len(want.Shown))
			}
		})
	}
}

// TestInspectUnknown checks that an unknown conversation is an empty
// inspection, not an error.
func TestInspectUnknown(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	in, err := tb.store.Inspect(t.Context(), "u", "nobody", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if in.Record.Version != 0 || len(in.Entries) != 0 || in.Next != nil || in.RequestIndex != -1 {
		t.Errorf("inspection of an unknown conversation: %s", fmt.Sprint(in.Record.Version, len(in.Entries), in.Next, in.RequestIndex))
	}
}
