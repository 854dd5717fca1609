package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/testutil/pgtest"
)

func TestSearchCacheKeepsTheMostRecentlyUsed(t *testing.T) {
	c := newSearchCache(2)
	key := func(i int) searchKey { return searchKey{"u", fmt.Sprint(i)} }
	c.put(key(1), &known{Standing: &evidence.Standing{Total: 1}})
	c.put(key(2), &known{Standing: &evidence.Standing{Total: 2}})
	if c.get(key(1)) == nil { // 1 is now the most recently used
		t.Fatal("entry 1 missing")
	}
	c.put(key(3), &known{Standing: &evidence.Standing{Total: 3}})
	if c.get(key(2)) != nil {
		t.Error("entry 2, the least recently used, was kept beyond the bound")
	}
	if s := c.get(key(1)); s == nil || s.Total != 1 {
		t.Errorf("entry 1 = %v, want total 1", s)
	}
	c.put(key(1), &known{Standing: &evidence.Standing{Total: 10}})
	if s := c.get(key(1)); s == nil || s.Total != 10 {
		t.Errorf("entry 1 after a put = %v, want total 10", s)
	}
	c.drop(key(1))
	if c.get(key(1)) != nil || c.standings.Len() != 1 {
		t.Errorf("after drop: %d entries, want 1", c.standings.Len())
	}

	off := newSearchCache(-1)
	off.put(key(1), &known{Standing: &evidence.Standing{}})
	off.items.put("u", "1", []evidence.Item{{}})
	if off.get(key(1)) != nil {
		t.Error("a cache of size -1 kept an entry")
	}
	if items, missing := off.items.get([]itemKey{{userID: "u", conversationID: "1"}}); items[0] != nil || len(missing) != 1 {
		t.Error("a cache of size -1 kept an item")
	}
}

func TestItemCacheForgetsAConversation(t *testing.T) {
	c := newItemCache(3)
	items := func(n int) []evidence.Item {
		out := make([]evidence.Item, n)
		for i := range out {
			out[i].Index = i
		}
		return out
	}
	c.put("u", "a", items(2))
	c.put("u", "b", items(2)) // evicts a's oldest
	if c.cache.Len() != 3 || c.held[searchKey{"u", "a"}] != 1 || c.held[searchKey{"u", "b"}] != 2 {
		t.Fatalf("%d items, held %v; want 3, a 1, b 2", c.cache.Len(), c.held)
	}
	got, missing := c.get([]itemKey{{userID: "u", conversationID: "a", index: 1}, {userID: "u", conversationID: "a"}})
	if got[0] == nil || got[0].Index != 1 || len(missing) != 1 || missing[0].index != 0 {
		t.Errorf("get: %v, missing %v; want a's item 1 and a's item 0 missing", got, missing)
	}
	c.forget("u", "b")
	if c.cache.Len() != 1 || c.held[searchKey{"u", "b"}] != 0 {
		t.Errorf("after forgetting b: %d items, held %v", c.cache.Len(), c.held)
	}
	c.forget("u", "unknown") // nothing held: nothing scanned, nothing changed
	if c.cache.Len() != 1 {
		t.Errorf("forgetting an unknown conversation dropped items")
	}
}

// TestSearchUsesTheCache checks that searches after the first read only the
// row and the keys their query picks (the tests of store_test check that
// the answers are the uncached ones, which a search that always read
// everything would pass too), and that an extraction makes the next search
// read everything again.
func TestSearchUsesTheCache(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	if err := Migrate(t.Context(), dbURL, nil); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := New(pool, &Config{Jobs: noJobs{}})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(n int) {
		var msgs []json.RawMessage
		for i := range n {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			// Two lists pick the same entries: "pallet" is in the request
			// and, through the newest entries, in the window.
			m, _ := json.Marshal(map[string]any{"id": fmt.Sprint(i), "role": role,
				"content": fmt.Sprintf("Pallet %d went to rack %d. The budget for item %d holds.", i, i%7, i)})
			msgs = append(msgs, m)
		}
		b, _ := json.Marshal(map[string]any{"schema": checkpoint.Schema, "event_id": fmt.Sprint("e", n), "user_id": "u", "conversation_id": "c", "messages": msgs})
		ev, err := checkpoint.ParseEvent(b, checkpoint.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Ingest(t.Context(), ev, Meta{}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Extract(t.Context(), "u", "c"); err != nil {
			t.Fatal(err)
		}
	}
	search := func(query string) {
		if _, err := st.Search(t.Context(), "u", "c", query); err != nil {
			t.Fatal(err)
		}
	}
	turn(301)
	for _, q := range []string{"pallet 17", "rack 3 budget", "pallet 17", "nothing at all"} {
		search(q)
	}
	if n := st.searches.reads.Load(); n != 1 {
		t.Errorf("%d of 4 searches read all their candidates, want 1", n)
	}
	// An entry both lists picked is asked for twice when it is missing.
	first := itemKey{userID: "u", conversationID: "c"}
	if ok, err := st.readMissing(t.Context(), "u", "c", []itemKey{first, first}); !ok || err != nil {
		t.Errorf("reading one entry asked for twice: ok %v, %v", ok, err)
	}

	turn(303)
	search("pallet 17")
	search("pallet 18")
	if n := st.searches.reads.Load(); n != 2 {
		t.Errorf("after an extraction: %d searches read everything, want 2", n)
	}
}

// noJobs inserts no extraction job.
type noJobs struct{}

func (noJobs) InsertTx(context.Context, pgx.Tx, river.JobArgs, *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return &rivertype.JobInsertResult{}, nil
}

func (noJobs) InsertManyTx(_ context.Context, _ pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	return make([]*rivertype.JobInsertResult, len(params)), nil
}
