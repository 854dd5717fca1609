package store

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/evidence"
)

// DefaultSearchCache is how many conversations' standing candidates a Store
// keeps for Search by default.
const DefaultSearchCache = 64

// A search's candidates are of two kinds: those its query picks (the
// entries that share a term with it) and those it does not (each tier's
// oldest, newest and heaviest entries, and the newest entries, which also
// make the query's window). The second kind changes only when the
// conversation's row does, so a Store keeps it for the conversations
// searched last, stamped with the row version it was read at, and a search
// that finds its stamp current reads only the conversation's row and the
// entries its query picks, in one round trip and one snapshot.

// rowStamp identifies one version of a conversation's row: xmin is the
// transaction that wrote it, so the stamp differs even when a conversation
// deleted and written again repeats an earlier version number.
type rowStamp struct {
	xmin    uint32
	version int64
	updated time.Time
}

type searchKey struct{ userID, conversationID string }

type standing struct {
	stamp  rowStamp
	total  int
	tiers  [evidence.TierContext][]evidence.Item
	recent []evidence.Item
}

// searchCache is a least-recently-used map of standing candidates. Its
// items are never modified once stored: SelectView only reads them.
type searchCache struct {
	max   int
	mu    sync.Mutex
	order *list.List // of *cached, most recently used first
	byKey map[searchKey]*list.Element
}

type cached struct {
	key searchKey
	s   *standing
}

func newSearchCache(max int) *searchCache {
	return &searchCache{max: max, order: list.New(), byKey: make(map[searchKey]*list.Element)}
}

func (c *searchCache) get(k searchKey) *standing {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byKey[k]
	if e == nil {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cached).s
}

func (c *searchCache) put(k searchKey, s *standing) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[k]; e != nil {
		e.Value.(*cached).s = s
		c.order.MoveToFront(e)
		return
	}
	c.byKey[k] = c.order.PushFront(&cached{key: k, s: s})
	for c.order.Len() > c.max {
		last := c.order.Back()
		delete(c.byKey, last.Value.(*cached).key)
		c.order.Remove(last)
	}
}

// drop forgets a conversation (deleted, or never written).
func (c *searchCache) drop(k searchKey) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[k]; e != nil {
		delete(c.byKey, k)
		c.order.Remove(e)
	}
}

const conversationRow = `
SELECT version, "cursor", message_count, prefix_digest, body, view, updated_at, archive_count, xmin::text::bigint
FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2 AND deleted_at IS NULL`

// scanConversation reads conversationRow into rec and returns the row's
// stamp and archive size; found is false for an unknown or deleted
// conversation.
func scanConversation(row pgx.Row, rec *evidence.Record) (stamp rowStamp, count int, found bool, err error) {
	var prefix []byte
	var updated *time.Time
	var xmin int64
	err = row.Scan(&rec.Version, &rec.Cursor, &rec.MessageCount, &prefix, &rec.Body, &rec.View, &updated, &count, &xmin)
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

// searchStanding is Search's fast path: the conversation's row and the
// entries the query picks, read in one repeatable-read snapshot sent as one
// batch, and the standing candidates from s. ok is false when the row is
// no longer the one s was read at (Search then reads everything).
func (st *Store) searchStanding(ctx context.Context, s *standing, rec *evidence.Record, query string) (ok bool, err error) {
	q := evidence.NewQuery(query, s.recent)
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	b.Queue(conversationRow, rec.UserID, rec.ConversationID)
	b.Queue(relevantSQL, rec.UserID, rec.ConversationID,
		termHashes(rec.UserID, rec.ConversationID, q.RequestTerms()),
		termHashes(rec.UserID, rec.ConversationID, q.WindowTerms()))
	b.Queue(`COMMIT`)
	br := st.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return false, fmt.Errorf("read evidence: %w", err)
	}
	stamp, count, found, err := scanConversation(br.QueryRow(), rec)
	if err != nil {
		return false, err
	}
	rows, err := br.Query()
	if err != nil {
		return false, fmt.Errorf("read archive: %w", err)
	}
	lists, err := scanRows(rows)
	if err != nil {
		return false, err
	}
	if _, err := br.Exec(); err != nil {
		return false, fmt.Errorf("read evidence: %w", err)
	}
	if err := br.Close(); err != nil {
		return false, fmt.Errorf("read evidence: %w", err)
	}
	key := searchKey{rec.UserID, rec.ConversationID}
	switch {
	case !found:
		st.searches.drop(key)
		*rec = evidence.Record{UserID: rec.UserID, ConversationID: rec.ConversationID, PrefixDigest: evidence.ChainStart()}
		return true, nil
	case stamp != s.stamp || count != s.total:
		return false, nil
	}
	return true, st.selectView(s.candidates(lists[0], lists[1]), q, rec)
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
