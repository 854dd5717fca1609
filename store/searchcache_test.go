package store

import (
	"fmt"
	"testing"

	"github.com/recallhq/recall/evidence"
)

func TestSearchCacheKeepsTheMostRecentlyUsed(t *testing.T) {
	c := newSearchCache(2)
	key := func(i int) searchKey { return searchKey{"u", fmt.Sprint(i)} }
	c.put(key(1), &standing{total: 1})
	c.put(key(2), &standing{total: 2})
	if c.get(key(1)) == nil { // 1 is now the most recently used
		t.Fatal("entry 1 missing")
	}
	c.put(key(3), &standing{total: 3})
	if c.get(key(2)) != nil {
		t.Error("entry 2, the least recently used, was kept beyond the bound")
	}
	if s := c.get(key(1)); s == nil || s.total != 1 {
		t.Errorf("entry 1 = %v, want total 1", s)
	}
	c.put(key(1), &standing{total: 10})
	if s := c.get(key(1)); s == nil || s.total != 10 {
		t.Errorf("entry 1 after a put = %v, want total 10", s)
	}
	c.drop(key(1))
	if c.get(key(1)) != nil || len(c.byKey) != 1 || c.order.Len() != 1 {
		t.Errorf("after drop: %d keys, %d in order; want 1 and 1", len(c.byKey), c.order.Len())
	}

	off := newSearchCache(-1)
	off.put(key(1), &standing{})
	if off.get(key(1)) != nil {
		t.Error("a cache of size -1 kept an entry")
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
	if c.order.Len() != 3 || c.held[searchKey{"u", "a"}] != 1 || c.held[searchKey{"u", "b"}] != 2 {
		t.Fatalf("%d items, held %v; want 3, a 1, b 2", c.order.Len(), c.held)
	}
	got, missing := c.get([]itemKey{{"u", "a", 1, 0}, {"u", "a", 0, 0}})
	if got[0] == nil || got[0].Index != 1 || len(missing) != 1 || missing[0].index != 0 {
		t.Errorf("get: %v, missing %v; want a's item 1 and a's item 0 missing", got, missing)
	}
	c.forget("u", "b")
	if c.order.Len() != 1 || len(c.byKey) != 1 || c.held[searchKey{"u", "b"}] != 0 {
		t.Errorf("after forgetting b: %d items, %d keys, held %v", c.order.Len(), len(c.byKey), c.held)
	}
	c.forget("u", "unknown") // nothing held: nothing scanned, nothing changed
	if c.order.Len() != 1 {
		t.Errorf("forgetting an unknown conversation dropped items")
	}
}
