package store

import (
	"fmt"
	"testing"
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
