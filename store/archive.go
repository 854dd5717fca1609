package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/evidence"
)

// The archive keeps what evidence.Archive keeps in memory, in
// recall_archive: the same items, replaced and evicted by the same rules, and
// the same candidates for a view, found through indexes (the restatement key,
// the tier, and a GIN index on the entries' term hashes) rather than by
// reading a conversation's archive whole.

// querier is what pgxpool.Pool and pgx.Tx share for reading.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// keyHash hashes a restatement key.
func keyHash(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64())
}

// termHash hashes a search term with its conversation's key.
func termHash(userID, conversationID, term string) int64 {
	h := fnv.New64a()
	h.Write([]byte(userID))
	h.Write([]byte{0})
	h.Write([]byte(conversationID))
	h.Write([]byte{0})
	h.Write([]byte(term))
	return int64(h.Sum64())
}

// archiveChunk bounds the items one INSERT carries.
const archiveChunk = 2000

// addToArchive adds the items of one extraction to the archive of a locked
// conversation that holds count items, as evidence.Archive.Add does: an item
// replaces the items with its restatement key, and beyond max items the
// oldest recent_context items go. It returns the archive's new size.
func addToArchive(ctx context.Context, tx pgx.Tx, userID, conversationID string, items []evidence.Item, count, max int) (int, error) {
	items = evidence.LatestByKey(items)
	if len(items) == 0 {
		return count, nil
	}
	keys := make([]int64, len(items))
	for i := range items {
		keys[i] = keyHash(items[i].Key)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND key_hash = ANY($3)`,
		userID, conversationID, keys)
	if err != nil {
		return 0, fmt.Errorf("replace restated entries: %w", err)
	}
	count -= int(tag.RowsAffected())
	for lo := 0; lo < len(items); lo += archiveChunk {
		if err := insertItems(ctx, tx, userID, conversationID, items[lo:min(lo+archiveChunk, len(items))], keys[lo:]); err != nil {
			return 0, err
		}
	}
	count += len(items)
	if over := count - max; over > 0 {
		for _, bucketOnly := range []bool{true, false} {
			tag, err := tx.Exec(ctx, `
WITH gone AS (
    SELECT idx, span_start FROM recall_archive
    WHERE user_id = $1 AND conversation_id = $2 AND (NOT $4 OR bucket = 3)
    ORDER BY idx, span_start LIMIT $3)
DELETE FROM recall_archive a USING gone
WHERE a.user_id = $1 AND a.conversation_id = $2 AND a.idx = gone.idx AND a.span_start = gone.span_start`,
				userID, conversationID, over, bucketOnly)
			if err != nil {
				return 0, fmt.Errorf("bound the archive: %w", err)
			}
			over -= int(tag.RowsAffected())
			count -= int(tag.RowsAffected())
			if over <= 0 {
				break
			}
		}
	}
	return count, nil
}

func insertItems(ctx context.Context, tx pgx.Tx, userID, conversationID string, items []evidence.Item, keys []int64) error {
	n := len(items)
	idx, start, end := make([]int32, n), make([]int32, n), make([]int32, n)
	roles, terms, hashes := make([]string, n), make([]string, n), make([]string, n)
	ids, excerpts := make([][]byte, n), make([][]byte, n)
	truncated := make([]bool, n)
	buckets, tiers, weights := make([]int16, n), make([]int16, n), make([]int16, n)
	var hb []byte
	for i := range items {
		it := &items[i]
		idx[i], start[i], end[i] = int32(it.Index), int32(it.Span[0]), int32(it.Span[1])
		roles[i], ids[i], excerpts[i], truncated[i] = string(it.Role), []byte(it.MessageID), []byte(it.Excerpt), it.Truncated
		buckets[i], tiers[i], weights[i] = int16(it.Bucket), int16(it.Tier), int16(it.Weight)
		terms[i] = strings.Join(it.Terms, " ")
		hb = hb[:0]
		for j, t := range it.Terms {
			if j > 0 {
				hb = append(hb, ' ')
			}
			hb = strconv.AppendInt(hb, termHash(userID, conversationID, t), 10)
		}
		hashes[i] = string(hb)
	}
	_, err := tx.Exec(ctx, `
INSERT INTO recall_archive (user_id, conversation_id, idx, span_start, span_end, role, message_id, excerpt,
    truncated, bucket, tier, weight, key_hash, terms, term_hashes)
SELECT $1, $2, t.idx, t.s, t.e, t.role, t.id, t.excerpt, t.truncated, t.bucket, t.tier, t.weight, t.key_hash,
    string_to_array(t.terms, ' '), string_to_array(t.hashes, ' ')::bigint[]
FROM unnest($3::int[], $4::int[], $5::int[], $6::text[], $7::bytea[], $8::bytea[], $9::bool[], $10::int2[],
    $11::int2[], $12::int2[], $13::int8[], $14::text[], $15::text[])
    AS t(idx, s, e, role, id, excerpt, truncated, bucket, tier, weight, key_hash, terms, hashes)`,
		userID, conversationID, idx, start, end, roles, ids, excerpts, truncated, buckets, tiers, weights, keys[:n], terms, hashes)
	if err != nil {
		return fmt.Errorf("store archive entries: %w", err)
	}
	return nil
}

const itemColumns = `idx, span_start, span_end, role, message_id, excerpt, truncated, bucket, tier, weight, array_to_string(terms, ' ')`

// candidates returns the candidates of a view for request (a request's or a
// search's text) and the query, as evidence.Archive.Candidates and
// evidence.NewQuery do over an archive of count items.
func candidates(ctx context.Context, db querier, userID, conversationID, request string, count int) (*evidence.Candidates, *evidence.Query, error) {
	c := &evidence.Candidates{Total: count}
	recent, err := scanItems(ctx, db, `SELECT `+itemColumns+`, 0 FROM recall_archive
WHERE user_id = $1 AND conversation_id = $2 ORDER BY idx DESC, span_start DESC LIMIT $3`,
		userID, conversationID, evidence.CandidateLimit)
	if err != nil {
		return nil, nil, err
	}
	c.Recent = recent[0]
	q := evidence.NewQuery(request, c.Recent)
	hashes := func(terms []string) []int64 {
		h := make([]int64, len(terms))
		for i, t := range terms {
			h[i] = termHash(userID, conversationID, t)
		}
		return h
	}
	// Per tier: its oldest, newest and heaviest items (lists 3t, 3t+1, 3t+2).
	var sql strings.Builder
	for t := range evidence.TierContext {
		for j, order := range []string{"idx, span_start", "idx DESC, span_start DESC", "weight DESC, idx, span_start"} {
			limit := evidence.CandidateLimit / 4
			if j == 2 {
				limit = evidence.CandidateLimit / 2
			}
			fmt.Fprintf(&sql, `(SELECT %s, %d FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND tier = %d
ORDER BY %s LIMIT %d)
UNION ALL
`, itemColumns, 3*int(t)+j, t, order, limit)
		}
	}
	// The newest entries sharing a term with the request, and with the
	// window only.
	relevant := 3 * int(evidence.TierContext)
	fmt.Fprintf(&sql, `(SELECT %s, %d FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND term_hashes && $3
ORDER BY idx DESC, span_start DESC LIMIT %d)
UNION ALL
(SELECT %s, %d FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND term_hashes && $4
ORDER BY idx DESC, span_start DESC LIMIT %d)`, itemColumns, relevant, evidence.RelevantLimit, itemColumns, relevant+1, evidence.WindowLimit)
	lists, err := scanItems(ctx, db, sql.String(), userID, conversationID, hashes(q.RequestTerms()), hashes(q.WindowTerms()))
	if err != nil {
		return nil, nil, err
	}
	for t := range evidence.TierContext {
		c.Tiers[t] = evidence.MergeCandidates(lists[3*int(t)], lists[3*int(t)+1], lists[3*int(t)+2])
	}
	c.Relevant = evidence.MergeCandidates(lists[relevant], lists[relevant+1])
	return c, q, nil
}

// scanItems runs a query of itemColumns and a list number, and returns the
// items of each list in the order the query gave them.
func scanItems(ctx context.Context, db querier, sql string, args ...any) (map[int][]evidence.Item, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read archive: %w", err)
	}
	defer rows.Close()
	lists := make(map[int][]evidence.Item)
	for rows.Next() {
		var it evidence.Item
		var role, terms string
		var id, excerpt []byte
		var bucket, tier, weight int16
		var list int
		if err := rows.Scan(&it.Index, &it.Span[0], &it.Span[1], &role, &id, &excerpt, &it.Truncated, &bucket, &tier, &weight, &terms, &list); err != nil {
			return nil, fmt.Errorf("read archive: %w", err)
		}
		it.Role, it.MessageID, it.Excerpt = evidence.Role(role), string(id), string(excerpt)
		it.Bucket, it.Tier, it.Weight = evidence.Bucket(bucket), evidence.Tier(tier), int(weight)
		// The terms come joined by spaces, which no term holds (they were
		// stored split at spaces): one string decodes at a fraction of the
		// cost of a text[].
		if terms != "" {
			it.Terms = strings.Split(terms, " ")
		}
		lists[list] = append(lists[list], it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read archive: %w", err)
	}
	return lists, nil
}

// encodeView encodes a view's entries in priority order for
// recall_conversation.view.
func encodeView(shown []evidence.Shown) ([]byte, error) {
	if shown == nil {
		shown = []evidence.Shown{}
	}
	return json.Marshal(shown)
}

// Search returns a conversation's evidence with the focus view chosen for
// query instead of its current request: the same candidates and the same
// choice as extraction makes, read in one consistent snapshot. In the seed
// profile, and for a conversation with no focus view yet, it returns the
// stored evidence. query is never logged.
func (s *Store) Search(ctx context.Context, userID, conversationID, query string) (evidence.Record, error) {
	rec := evidence.Record{UserID: userID, ConversationID: conversationID, PrefixDigest: evidence.ChainStart()}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var prefix []byte
		var updated *time.Time
		var count int
		err := tx.QueryRow(ctx, `
SELECT version, "cursor", message_count, prefix_digest, body, view, updated_at, archive_count
FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2 AND deleted_at IS NULL`, userID, conversationID).
			Scan(&rec.Version, &rec.Cursor, &rec.MessageCount, &prefix, &rec.Body, &rec.View, &updated, &count)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read evidence: %w", err)
		}
		copy(rec.PrefixDigest[:], prefix)
		if updated != nil {
			rec.UpdatedAt = *updated
		}
		if s.fold.Profile == evidence.ProfileSeed || rec.View == nil {
			return nil
		}
		c, q, err := candidates(ctx, tx, userID, conversationID, query, count)
		if err != nil {
			return err
		}
		st := evidence.State{Cursor: rec.Cursor}
		st.SetView(evidence.SelectView(c, q, s.fold.MaxTokens))
		rec.Body = evidence.AppendBody(nil, &st, 0)
		rec.View, err = encodeView(st.Shown)
		return err
	})
	if err != nil {
		return evidence.Record{}, err
	}
	return rec, nil
}
