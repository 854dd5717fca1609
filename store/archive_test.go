package store_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/store"
)

// longConversation returns a conversation of about n messages that exercises
// the archive: rules and facts, restatements (the same text in other case
// and punctuation), questions, several languages, a tool call, and replies
// whose words later requests and searches refer back to.
func longConversation(n int, seed uint64) []json.RawMessage {
	rng := rand.New(rand.NewPCG(seed, 7))
	subjects := []string{"the venue", "the budget", "the billing database", "the migration", "the caterer", "the launch", "die Anreise", "le traiteur", "el presupuesto", "会場の予約"}
	userLines := []string{
		"We must never take %s offline during business hours.",
		"%s holds 120 people.",
		"Actually, %s moved to Thursday.",
		"What about %s?",
		"Thanks, sounds good!",
		"We decided to keep %s as it is. Next, check the contract.",
		"- %s: confirmed\n- the rest: pending",
		"WE MUST NEVER TAKE %s OFFLINE DURING BUSINESS HOURS!!",
		"%sは金曜日までに確認が必要です。",
		"Can you summarise where %s stands?",
		// A session's date, which the fold carries to later entries, a
		// question about when (its view shows the dates), and lines that
		// name numbers, which make numbers common (the rarity the view
		// weighs entries by).
		"[2:15 pm on 3 March, 2025] Lena: %s is booked.",
		"When is %s?",
		"Reading 4411: %s at 12.5 on 3/4, invoice 88-1 for 310 EUR.",
		// A reply that takes an option the assistant proposed (replies
		// below), which the archive weighs again as the user's.
		"ok, the second one",
	}
	replies := []string{
		"Noted: %s is settled for now.",
		"I'll follow up on %s tomorrow. The quote expires on Friday.",
		"%s looks fine; nothing else is needed.",
		"Two ways:\n1. Keep %s as it is.\n2. Move %s to Friday, after the audit.",
	}
	var h []json.RawMessage
	add := func(m map[string]any) {
		m["id"] = fmt.Sprintf("m%d", len(h))
		b, _ := json.Marshal(m)
		h = append(h, b)
	}
	for len(h) < n {
		subject := subjects[rng.IntN(len(subjects))]
		line := userLines[rng.IntN(len(userLines))]
		add(map[string]any{"role": "user", "content": strings.ReplaceAll(line, "%s", subject)})
		if rng.IntN(5) == 0 {
			add(map[string]any{"role": "assistant", "content": "Checking.", "tool_calls": []any{map[string]any{"id": "t", "name": "lookup", "args": map[string]any{}}}})
			add(map[string]any{"role": "tool", "tool_call_id": "t", "content": "You must always decide by the deadline (tool text)."})
		}
		add(map[string]any{"role": "assistant", "content": strings.ReplaceAll(replies[rng.IntN(len(replies))], "%s", subject)})
	}
	add(map[string]any{"role": "user", "content": "So how many chairs do we need for the venue?"})
	return h
}

// userEnds returns the lengths of the prefixes of h that end in a user
// message.
func userEnds(t *testing.T, h []json.RawMessage) []int {
	t.Helper()
	raw, _ := json.Marshal(h)
	msgs, err := checkpoint.DecodeMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int
	for i := range msgs {
		if msgs[i].IsRequest() {
			ends = append(ends, i+1)
		}
	}
	return ends
}

func foldWith(t *testing.T, msgs []json.RawMessage, cfg *evidence.Config) evidence.State {
	t.Helper()
	raw, _ := json.Marshal(msgs)
	decoded, err := checkpoint.DecodeMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := evidence.Fold(evidence.NewState(), decoded, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// requireView checks that the stored evidence of u/c is the oracle's: the
// message byte for byte, and the view's priority order.
func requireView(t *testing.T, st *store.Store, want evidence.State) {
	t.Helper()
	rec, err := st.Evidence(t.Context(), "u", "c")
	if err != nil {
		t.Fatal(err)
	}
	got, err := rec.State()
	if err != nil {
		t.Fatal(err)
	}
	if got.Cursor != want.Cursor || got.OmittedEntries != want.OmittedEntries {
		t.Fatalf("cursor %d, omitted %d; want %d, %d", got.Cursor, got.OmittedEntries, want.Cursor, want.OmittedEntries)
	}
	gm, wm := evidence.Render(&got), evidence.Render(&want)
	if (gm == nil) != (wm == nil) || (gm != nil && gm.Content != wm.Content) {
		t.Fatalf("message at cursor %d differs from the core's:\n got %v\nwant %v", want.Cursor, gm, wm)
	}
	gj, _ := json.Marshal(got.Shown)
	wj, _ := json.Marshal(want.Shown)
	if string(gj) != string(wj) {
		t.Fatalf("view order at cursor %d differs from the core's:\n got %s\nwant %s", want.Cursor, gj, wj)
	}
}

func newFocusStore(t *testing.T, tb *testBundle, fold *evidence.Config) *store.Store {
	t.Helper()
	return newStoreChunked(t, tb, fold, 0)
}

func newStoreChunked(t *testing.T, tb *testBundle, fold *evidence.Config, chunk int) *store.Store {
	t.Helper()
	st, err := store.New(tb.pool, &store.Config{
		Fold:         fold,
		ExtractChunk: chunk,
		Jobs:         tableInserter{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestArchiveMatchesTheCore feeds a long conversation to the store in random
// batches of turns and checks after every extraction that the stored view is
// the one the pure core chooses for the same history: the archive's rows,
// replacements, bound and candidate queries agree with evidence.Archive's,
// however the history was batched.
func TestArchiveMatchesTheCore(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		fold *evidence.Config
	}{
		{"default bounds", nil},
		{"small archive", &evidence.Config{MaxArchiveEntries: 25}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, time.Minute)
			st := newFocusStore(t, tb, tt.fold)
			h := longConversation(240, 1)
			ends := userEnds(t, h)
			rng := rand.New(rand.NewPCG(2, 3))
			for i := 0; i < len(ends); i += 1 + rng.IntN(6) {
				n := ends[i]
				if _, err := st.Ingest(t.Context(), snapshot(t, fmt.Sprintf("e%d", n), h[:n]), store.Meta{}); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Extract(t.Context(), "u", "c"); err != nil {
					t.Fatal(err)
				}
				now := foldWith(t, h[:n], tt.fold)
				requireView(t, st, now)
				// The first search after an extraction finds the standing
				// candidates it kept stale; the second uses them.
				if i%3 == 2 {
					requireSearch(t, st, now, "the caterer")
					requireSearch(t, st, now, "venue")
				}
			}
			n := ends[len(ends)-1]
			if _, err := st.Ingest(t.Context(), snapshot(t, "last", h[:n]), store.Meta{}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Extract(t.Context(), "u", "c"); err != nil {
				t.Fatal(err)
			}
			want := foldWith(t, h[:n], tt.fold)
			requireView(t, st, want)

			var rows, stored int
			if err := tb.pool.QueryRow(t.Context(), `SELECT count(*) FROM recall_archive`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if err := tb.pool.QueryRow(t.Context(), `SELECT archive_count FROM recall_conversation`).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if rows != want.Archive.Len() || stored != rows {
				t.Errorf("archive rows %d, archive_count %d; the core's archive holds %d", rows, stored, want.Archive.Len())
			}
			if tt.fold != nil && rows > tt.fold.MaxArchiveEntries {
				t.Errorf("archive rows %d over the bound %d", rows, tt.fold.MaxArchiveEntries)
			}

			// A search chooses the view the core chooses for the query, also
			// among the entries of older messages only.
			for _, query := range []string{"the caterer and the traiteur", "会場", "what is pending?", "zzz nothing matches"} {
				requireSearch(t, st, want, query)
				requireSearchBefore(t, st, want, query, n/2)
			}
		})
	}
}

// requireSearch checks that a search of u/c for query answers the view the
// core chooses for it over want's archive.
func requireSearch(t *testing.T, st *store.Store, want evidence.State, query string) {
	t.Helper()
	rec, err := st.Search(t.Context(), "u", "c", query)
	if err != nil {
		t.Fatal(err)
	}
	c, q := want.Candidates(query)
	s := evidence.State{Cursor: want.Cursor}
	s.SetView(evidence.SelectView(c, q, evidence.DefaultMaxTokens))
	if got, wantBody := string(rec.Body), string(evidence.AppendBody(nil, &s, 0)); got != wantBody {
		t.Errorf("search %q (version %d):\n got %s\nwant %s", query, rec.Version, got, wantBody)
	}
}

// requireSearchBefore checks that a search of u/c for query among the
// entries of messages before index before answers the core's view for it,
// and shows none of a later message.
func requireSearchBefore(t *testing.T, st *store.Store, want evidence.State, query string, before int) {
	t.Helper()
	rec, err := st.SearchBefore(t.Context(), "u", "c", query, before)
	if err != nil {
		t.Fatal(err)
	}
	c, q := want.Candidates(query)
	s := evidence.State{Cursor: want.Cursor}
	s.SetView(evidence.SelectView(c.Before(before), q, evidence.DefaultMaxTokens))
	if got, wantBody := string(rec.Body), string(evidence.AppendBody(nil, &s, 0)); got != wantBody {
		t.Errorf("search %q before %d:\n got %s\nwant %s", query, before, got, wantBody)
	}
	older := slices.IndexFunc(want.Archive.Items(), func(it evidence.Item) bool { return it.Index < before }) >= 0
	if older && s.Buckets.Len() == 0 {
		t.Errorf("search %q before %d shows nothing", query, before)
	}
	for _, sh := range s.Shown {
		if sh.Index >= before {
			t.Errorf("search %q before %d shows an entry of message %d", query, before, sh.Index)
		}
	}
}

// TestSearchReachesOldEntries checks, on an archive of 1,500 entries, that
// a search finds the same relevant entries as the core whether the query's
// terms are dense or sparse, new or old: a term only the oldest entries
// hold, a term spread too thinly over the archive to fill the relevant list,
// a term half the entries hold, and a term no entry holds. The newest
// entries hold no shared term, so that the request's window does not widen
// the queries.
func TestSearchReachesOldEntries(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	st := newFocusStore(t, tb, nil)
	const entries = 1500
	var h []json.RawMessage
	var text []string
	flush := func() {
		role := "user"
		if len(h)%2 == 1 {
			role = "assistant"
		}
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("m%d", len(h)), "role": role, "content": strings.Join(text, " ")})
		h = append(h, b)
		text = text[:0]
	}
	for i := range entries {
		s := fmt.Sprintf("Sku%d", i)
		if i < 5 {
			s += " zeppelin"
		}
		if i%10 == 0 && i < entries-20 {
			s += " lantern"
		}
		if i%2 == 0 && i < entries-20 {
			s += " harbor"
		}
		text = append(text, s+".")
		if len(text) == 8 {
			flush()
		}
	}
	if len(text) > 0 {
		flush()
	}
	if len(h)%2 == 1 {
		text = append(text, "Noted.")
		flush()
	}
	text = append(text, "Where do we stand?")
	flush()
	if _, err := st.Ingest(t.Context(), snapshot(t, "big", h), store.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	want := foldWith(t, h, nil)
	if want.Archive.Len() < entries {
		t.Fatalf("the archive holds %d entries, want %d", want.Archive.Len(), entries)
	}
	requireView(t, st, want)
	queries := []string{"zeppelin", "lantern", "harbor", "lantern zeppelin", "nothing", "Which ones have the lantern and the zeppelin?"}
	for _, query := range queries {
		requireSearch(t, st, want, query)
	}
	// A store that keeps one conversation's candidates and 256 items
	// reads most picked items again, by their keys, on every search.
	small, err := store.New(tb.pool, &store.Config{SearchCache: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for _, query := range queries {
			requireSearch(t, small, want, query)
		}
	}

	// Concurrent searches share the candidates kept for the conversation
	// (the race detector watches them) and answer as one search does.
	bodies := make(map[string]string)
	for _, query := range queries {
		rec, err := st.Search(t.Context(), "u", "c", query)
		if err != nil {
			t.Fatal(err)
		}
		bodies[query] = string(rec.Body)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(queries))
	for g := range 8 {
		wg.Go(func() {
			for i := range queries {
				query := queries[(g+i)%len(queries)]
				rec, err := st.Search(t.Context(), "u", "c", query)
				switch {
				case err != nil:
					errs <- err
				case string(rec.Body) != bodies[query]:
					errs <- fmt.Errorf("concurrent search %q answered another view", query)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDeleteClearsTheArchive checks that deleting a conversation removes its
// archive, and that a search then answers as for an unknown key.
func TestDeleteClearsTheArchive(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	h := longConversation(40, 4)
	tb.ingest(t, snapshot(t, "e1", h))
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := tb.pool.QueryRow(t.Context(), `SELECT count(*) FROM recall_archive`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count() == 0 {
		t.Fatal("extraction archived nothing, so the check below proves nothing")
	}
	// A search before the deletion leaves the conversation's candidates
	// kept in memory; the one after it must not answer from them.
	if rec, err := tb.store.Search(t.Context(), "u", "c", "venue"); err != nil || rec.Version == 0 {
		t.Fatalf("search before DELETE: version %d, %v", rec.Version, err)
	}
	if err := tb.store.DeleteConversation(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d archive rows after DELETE, want 0", n)
	}
	rec, err := tb.store.Search(t.Context(), "u", "c", "venue")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != 0 || rec.Body != nil {
		t.Errorf("search after DELETE: version %d, body %s; want the empty record", rec.Version, rec.Body)
	}
}

// TestExtractInChunks extracts a long history in chunks of seven held
// messages, in both profiles: the evidence equals one fold over it.
func TestExtractInChunks(t *testing.T) {
	t.Parallel()
	for _, fold := range []*evidence.Config{{Profile: evidence.ProfileSeed}, {Profile: evidence.ProfileFocus}} {
		t.Run(string(fold.Profile), func(t *testing.T) {
			t.Parallel()
			tb := setup(t, time.Minute)
			st := newStoreChunked(t, tb, fold, 7)
			h := longConversation(120, 5)
			if _, err := st.Ingest(t.Context(), snapshot(t, "e1", h), store.Meta{}); err != nil {
				t.Fatal(err)
			}
			res, err := st.Extract(t.Context(), "u", "c")
			if err != nil {
				t.Fatal(err)
			}
			want := foldWith(t, h, fold)
			if res.Outcome != checkpoint.Applied || res.Cursor != want.Cursor || res.Summarised != want.Cursor {
				t.Fatalf("extract: %+v, want applied up to %d", res, want.Cursor)
			}
			requireView(t, st, want)
			rec, err := st.Evidence(t.Context(), "u", "c")
			if err != nil {
				t.Fatal(err)
			}
			if rec.Version != 1 {
				t.Errorf("version %d after one extraction, want 1", rec.Version)
			}
		})
	}
}

// TestExtractInByteChunks extracts a history of large messages, more text
// than one read of held messages takes, in both profiles: the evidence
// equals one fold over it.
func TestExtractInByteChunks(t *testing.T) {
	t.Parallel()
	for _, fold := range []*evidence.Config{{Profile: evidence.ProfileSeed}, {Profile: evidence.ProfileFocus}} {
		t.Run(string(fold.Profile), func(t *testing.T) {
			t.Parallel()
			tb := setup(t, time.Minute)
			st := newFocusStore(t, tb, fold)
			// About 2 MB of text: four reads.
			h := longConversation(120, 9)
			filler := strings.Repeat("The export job moved to its own replica and the read path stayed within budget. ", 200)
			for i := range h {
				var m map[string]any
				if err := json.Unmarshal(h[i], &m); err != nil {
					t.Fatal(err)
				}
				if s, ok := m["content"].(string); ok {
					m["content"] = s + " " + filler
					h[i], _ = json.Marshal(m)
				}
			}
			if _, err := st.Ingest(t.Context(), snapshot(t, "e1", h), store.Meta{}); err != nil {
				t.Fatal(err)
			}
			res, err := st.Extract(t.Context(), "u", "c")
			if err != nil {
				t.Fatal(err)
			}
			want := foldWith(t, h, fold)
			if res.Outcome != checkpoint.Applied || res.Cursor != want.Cursor {
				t.Fatalf("extract: %+v, want applied up to %d", res, want.Cursor)
			}
			requireView(t, st, want)
		})
	}
}

// TestExtractReadsTheRequestApart checks the focus profile's extraction when
// the held messages before the request fill a read by their bytes, so that
// the request is read on its own.
func TestExtractReadsTheRequestApart(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	st := newFocusStore(t, tb, nil)
	var big strings.Builder // about 600 KB of distinct sentences
	for i := range 20_000 {
		fmt.Fprintf(&big, "Pallet%d went to rack %d. ", i, i%97)
	}
	h := []json.RawMessage{
		json.RawMessage(`{"id":"m0","role":"user","content":"We must keep the billing database online."}`),
		json.RawMessage(fmt.Sprintf(`{"id":"m1","role":"assistant","content":%q}`, big.String())),
		// Only its own words find the pallet among 20,000 entries.
		json.RawMessage(`{"id":"m2","role":"user","content":"Where is pallet4242 now?"}`),
	}
	if _, err := st.Ingest(t.Context(), snapshot(t, "e1", h), store.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	want := foldWith(t, h, nil)
	if !strings.Contains(string(evidence.AppendBody(nil, &want, 0)), "Pallet4242 ") {
		t.Fatal("the core's view lacks the pallet the request names, so this test checks nothing")
	}
	requireView(t, st, want)
}
