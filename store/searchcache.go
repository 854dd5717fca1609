package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// A search's candidates are of two kinds: those its query picks (the
// entries that share a term with it) and those it does not (each tier's
// oldest, newest and heaviest entries, and the newest entries, which also
// make the query's window). The second kind changes only when the
// conversation's row does, so a Store keeps it for the conversations
// searched last, stamped with the row version it was read at, and a search
// that finds its stamp current reads only the conversation's row and the
// entries its query picks, in one round trip and one snapshot.

// rowStamp identifies one write of a conversation's row: xmin is the
// transaction that wrote it, beside the version and the update time.
type rowStamp struct {
	xmin    uint32
	version int64
	updated time.Time
}

type searchKey struct{ userID, conversationID string }

// known is a conversation's standing candidates as read at stamp.
type known struct {
	stamp rowStamp
	*evidence.Standing
}

// searchCache keeps the standing candidates of the conversations searched
// last, and archive items by their key, each in a least-recently-used
// cache (hashicorp/golang-lru). Its items are never modified once stored:
// SelectView only reads them.
type searchCache struct {
	// reads counts the searches that read all their candidates (no
	// standing candidates kept, or stale ones), for tests.
	reads atomic.Int64

	standings *lru.Cache[searchKey, *known] // nil: keep none
	items     *itemCache
}

func newSearchCache(max int) *searchCache {
	c := &searchCache{items: newItemCache(max * itemsPerConversation)}
	if max > 0 {
		c.standings, _ = lru.New[searchKey, *known](max)
	}
	return c
}

func (c *searchCache) get(k searchKey) *known {
	if c.standings == nil {
		return nil
	}
	s, _ := c.standings.Get(k)
	return s
}

func (c *searchCache) put(k searchKey, s *known) {
	if c.standings != nil {
		c.standings.Add(k, s)
	}
}

// drop forgets a conversation (deleted, or never written) and its items.
func (c *searchCache) drop(k searchKey) {
	if c.standings == nil {
		return
	}
	c.standings.Remove(k)
	// The items may outlive the standing candidates in the cache: a deleted
	// conversation's text is not kept in memory either way.
	c.items.forget(k.userID, k.conversationID)
}

// itemsPerConversation sizes the item cache: as many items per
// conversation kept as a search reads at most.
const itemsPerConversation = evidence.RelevantLimit + evidence.WindowLimit

// An archive item's text never changes once written: its message lies
// below the cursor, whose history is fixed, and a deleted conversation is
// never written again. What a later extraction may change of it (its tier
// and weight, when a proposal is accepted; its Fix, when a later statement
// may correct it) is part of its key. So a search's relevant entries are
// read as keys, and only the items the cache lacks are read whole.

// itemKey is an archive item's key: where it stands, and what a later
// extraction may change of it.
type itemKey struct {
	userID, conversationID string
	index, start           int
	tier, weight           int
	fix                    evidence.Fix
}

// itemKeyColumns are the columns of an itemKey (after the conversation's).
const itemKeyColumns = `idx, span_start, tier, weight, coalesce(fix_idx, 0), coalesce(fix_span, 0), coalesce(fix_chance, 0)`

// keyOf returns it's key in the conversation of userID and conversationID.
func keyOf(userID, conversationID string, it *evidence.Item) itemKey {
	return itemKey{userID, conversationID, it.Index, it.Span[0], int(it.Tier), it.Weight, it.Fix}
}

// itemCache is a least-recently-used cache of archive items, bounded by
// their count.
type itemCache struct {
	cache *lru.Cache[itemKey, *evidence.Item] // nil: keep none
	// held counts each conversation's items, so that forgetting one that
	// has none costs nothing. Under concurrent puts it may count an item
	// already evicted for a moment, which only makes a forget look.
	mu   sync.Mutex
	held map[searchKey]int
}

func newItemCache(max int) *itemCache {
	c := &itemCache{held: make(map[searchKey]int)}
	if max > 0 {
		c.cache, _ = lru.NewWithEvict(max, func(k itemKey, _ *evidence.Item) {
			c.mu.Lock()
			defer c.mu.Unlock()
			conv := searchKey{k.userID, k.conversationID}
			if c.held[conv]--; c.held[conv] <= 0 {
				delete(c.held, conv)
			}
		})
	}
	return c
}

// get returns the cached items of keys, and the keys it lacks.
func (c *itemCache) get(keys []itemKey) (items []*evidence.Item, missing []itemKey) {
	items = make([]*evidence.Item, len(keys))
	for i, k := range keys {
		if c.cache != nil {
			if it, ok := c.cache.Get(k); ok {
				items[i] = it
				continue
			}
		}
		missing = append(missing, k)
	}
	return items, missing
}

func (c *itemCache) put(userID, conversationID string, items []evidence.Item) {
	if c.cache == nil {
		return
	}
	conv := searchKey{userID, conversationID}
	for i := range items {
		k := keyOf(userID, conversationID, &items[i])
		if c.cache.Contains(k) {
			continue
		}
		c.mu.Lock()
		c.held[conv]++
		c.mu.Unlock()
		if found, _ := c.cache.ContainsOrAdd(k, &items[i]); found {
			// Another search added it meanwhile: it counted it.
			c.mu.Lock()
			c.held[conv]--
			c.mu.Unlock()
		}
	}
}

// forget drops a conversation's items (it was deleted, or is unknown).
func (c *itemCache) forget(userID, conversationID string) {
	if c.cache == nil {
		return
	}
	c.mu.Lock()
	n := c.held[searchKey{userID, conversationID}]
	c.mu.Unlock()
	if n <= 0 {
		return
	}
	for _, k := range c.cache.Keys() {
		if k.userID == userID && k.conversationID == conversationID {
			c.cache.Remove(k)
		}
	}
}

const conversationRow = `
SELECT version, "cursor", message_count, prefix_digest, body, view, updated_at, archive_count, xmin::text::bigint, carry
FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2 AND deleted_at IS NULL`

// scanConversation reads conversationRow into rec and returns the row's
// stamp and archive size; found is false for an unknown or deleted
// conversation.
func scanConversation(row pgx.Row, rec *evidence.Record) (stamp rowStamp, count int, found bool, err error) {
	var prefix []byte
	var updated *time.Time
	var xmin int64
	err = row.Scan(&rec.Version, &rec.Cursor, &rec.MessageCount, &prefix, &rec.Body, &rec.View, &updated, &count, &xmin, &rec.Carry)
	if errors.Is(err, pgx.ErrNoRows) {
		return stamp, 0, false, nil
	}
	if err != nil {
		return stamp, 0, false, fmt.Errorf("read evidence: %w", err)
	}
	copy(rec.PrefixDigest[:], prefix)
	if updated != nil {
		rec.UpdatedAt = *updated
		stamp.updated = *updated
	}
	stamp.xmin, stamp.version = uint32(xmin), rec.Version
	return stamp, count, true, nil
}

// searchStanding is Search's fast path: the standing candidates from s,
// and the entries the query picks read through pickCached. ok is false
// when the row is no longer the one s was read at, or an item was deleted
// since (Search then reads everything).
func (st *Store) searchStanding(ctx context.Context, s *known, rec *evidence.Record, query string, before int) (ok bool, err error) {
	q := s.Query(query)
	found, ok, picked, err := st.pickCached(ctx, s, rec, evidence.QueryScans(q))
	if !found || !ok || err != nil {
		return !found || ok, err
	}
	c := s.With(q, picked)
	if scans := c.NeighbourScans(q); len(scans) > 0 {
		found, ok, more, err := st.pickCached(ctx, s, rec, scans)
		if !found || !ok || err != nil {
			return !found || ok, err
		}
		c.AddNeighbours(more)
	}
	if scans := c.FixScans(); len(scans) > 0 {
		found, ok, more, err := st.pickCached(ctx, s, rec, scans)
		if !found || !ok || err != nil {
			return !found || ok, err
		}
		c.AddFixes(more)
	}
	return true, st.selectView(c.Before(before), q, rec)
}

// pickCached answers scans for the conversation of rec while its row is
// the one s was read at: the row and the keys of the entries the scans
// pick, read in one repeatable-read snapshot sent as one batch, and the
// items from the item cache or, for those it lacks, one more statement.
// found is false for a conversation deleted meanwhile (rec is then the
// empty record); ok is false when the row changed or an item is gone.
func (st *Store) pickCached(ctx context.Context, s *known, rec *evidence.Record, scans []evidence.Scan) (found, ok bool, picked [][]evidence.Item, err error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	b.Queue(conversationRow, rec.UserID, rec.ConversationID)
	if len(scans) > 0 {
		sql, args := scanSQL(rec.UserID, rec.ConversationID, scans, itemKeyColumns)
		b.Queue(sql, args...)
	}
	b.Queue(`COMMIT`)
	stamp, count, found, keys, lists, err := readRelevantKeys(st.pool.SendBatch(ctx, b), rec, len(scans) > 0)
	if err != nil {
		return false, false, nil, err
	}
	key := searchKey{rec.UserID, rec.ConversationID}
	switch {
	case !found:
		st.searches.drop(key)
		*rec = evidence.Record{UserID: rec.UserID, ConversationID: rec.ConversationID, PrefixDigest: checkpoint.ChainStart()}
		return false, false, nil, nil
	case stamp != s.stamp || count != s.Total:
		return true, false, nil, nil
	}
	items, missing := st.searches.items.get(keys)
	if len(missing) > 0 {
		if ok, err := st.readMissing(ctx, rec.UserID, rec.ConversationID, missing); !ok || err != nil {
			return true, false, nil, err
		}
		if items, missing = st.searches.items.get(keys); len(missing) > 0 {
			return true, false, nil, nil // evicted at once by other searches: read everything
		}
	}
	picked = make([][]evidence.Item, len(scans))
	for i, it := range items {
		picked[lists[i]] = append(picked[lists[i]], *it)
	}
	return true, true, picked, nil
}

// readRelevantKeys reads the results of searchStanding's batch and closes it.
func readRelevantKeys(br pgx.BatchResults, rec *evidence.Record, picks bool) (stamp rowStamp, count int, found bool, keys []itemKey, lists []int, err error) {
	defer br.Close()
	fail := func(err error) (rowStamp, int, bool, []itemKey, []int, error) {
		return rowStamp{}, 0, false, nil, nil, fmt.Errorf("read evidence: %w", err)
	}
	if _, err := br.Exec(); err != nil {
		return fail(err)
	}
	if stamp, count, found, err = scanConversation(br.QueryRow(), rec); err != nil {
		return rowStamp{}, 0, false, nil, nil, err
	}
	if !picks {
		if _, err := br.Exec(); err != nil {
			return fail(err)
		}
		return stamp, count, found, nil, nil, br.Close()
	}
	rows, err := br.Query()
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		k := itemKey{userID: rec.UserID, conversationID: rec.ConversationID}
		var list int
		if err := rows.Scan(&k.index, &k.start, &k.tier, &k.weight, &k.fix.Index, &k.fix.Start, &k.fix.Chance, &list); err != nil {
			rows.Close()
			return fail(err)
		}
		keys, lists = append(keys, k), append(lists, list)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	if _, err := br.Exec(); err != nil {
		return fail(err)
	}
	if err := br.Close(); err != nil {
		return fail(err)
	}
	return stamp, count, found, keys, lists, nil
}

// readMissing reads the archive items of keys into the item cache. ok is
// false when one of them is gone.
func (st *Store) readMissing(ctx context.Context, userID, conversationID string, keys []itemKey) (ok bool, err error) {
	// An entry both lists picked is asked for twice.
	distinct := make(map[[2]int]bool, len(keys))
	idx, start := make([]int32, 0, len(keys)), make([]int32, 0, len(keys))
	for _, k := range keys {
		if at := [2]int{k.index, k.start}; !distinct[at] {
			distinct[at] = true
			idx, start = append(idx, int32(k.index)), append(start, int32(k.start))
		}
	}
	lists, err := scanItems(ctx, st.pool, `SELECT `+itemColumns+`, 0 FROM recall_archive
WHERE user_id = $1 AND conversation_id = $2 AND (idx, span_start) IN (SELECT * FROM unnest($3::int[], $4::int[]))`,
		userID, conversationID, idx, start)
	if err != nil {
		return false, err
	}
	// An item that changed since its key was read is cached under its new
	// key: the caller then misses it, and reads everything.
	st.searches.items.put(userID, conversationID, lists[0])
	return len(lists[0]) == len(idx), nil
}

// selectView sets rec's body and view to the focus view of c for q.
func (st *Store) selectView(c *evidence.Candidates, q *evidence.Query, rec *evidence.Record) error {
	state := evidence.State{Cursor: rec.Cursor}
	state.SetView(evidence.SelectView(c, q, st.fold.MaxTokens))
	rec.Body = evidence.AppendBody(nil, &state, 0)
	var err error
	rec.View, err = encodeView(state.Shown)
	return err
}
