package store

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/checkpoint"
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
	// The restated entries' deletion and the first insert go in one round
	// trip; a large extraction's further inserts follow one at a time.
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND key_hash = ANY($3)`,
		userID, conversationID, keys)
	first := min(archiveChunk, len(items))
	queueItems(b, userID, conversationID, items[:first], keys)
	br := tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	if err != nil {
		br.Close()
		return 0, fmt.Errorf("replace restated entries: %w", err)
	}
	count -= int(tag.RowsAffected())
	if _, err := br.Exec(); err != nil {
		br.Close()
		return 0, fmt.Errorf("store archive entries: %w", err)
	}
	if err := br.Close(); err != nil {
		return 0, fmt.Errorf("store archive entries: %w", err)
	}
	for lo := first; lo < len(items); lo += archiveChunk {
		b := &pgx.Batch{}
		queueItems(b, userID, conversationID, items[lo:min(lo+archiveChunk, len(items))], keys[lo:])
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return 0, fmt.Errorf("store archive entries: %w", err)
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

// queueItems queues the insert of items, whose key hashes keys begins with.
func queueItems(b *pgx.Batch, userID, conversationID string, items []evidence.Item, keys []int64) {
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
	b.Queue(`
INSERT INTO recall_archive (user_id, conversation_id, idx, span_start, span_end, role, message_id, excerpt,
    truncated, bucket, tier, weight, key_hash, terms, term_hashes)
SELECT $1, $2, t.idx, t.s, t.e, t.role, t.id, t.excerpt, t.truncated, t.bucket, t.tier, t.weight, t.key_hash,
    string_to_array(t.terms, ' '), string_to_array(t.hashes, ' ')::bigint[]
FROM unnest($3::int[], $4::int[], $5::int[], $6::text[], $7::bytea[], $8::bytea[], $9::bool[], $10::int2[],
    $11::int2[], $12::int2[], $13::int8[], $14::text[], $15::text[])
    AS t(idx, s, e, role, id, excerpt, truncated, bucket, tier, weight, key_hash, terms, hashes)`,
		userID, conversationID, idx, start, end, roles, ids, excerpts, truncated, buckets, tiers, weights, keys[:n], terms, hashes)
}

const itemColumns = `idx, span_start, span_end, role, message_id, excerpt, truncated, bucket, tier, weight, array_to_string(terms, ' ')`

// candidates returns the candidates of a view for request (a request's or a
// search's text) and the query, as evidence.Archive.Candidates and
// evidence.NewQuery do over an archive of count items.
func candidates(ctx context.Context, db querier, userID, conversationID, request string, count int) (*evidence.Candidates, *evidence.Query, error) {
	if count <= smallArchive {
		// Reading it whole is one plain range scan, no longer than the
		// candidate statements' reads.
		lists, err := scanItems(ctx, db, `SELECT `+itemColumns+`, 0 FROM recall_archive
WHERE user_id = $1 AND conversation_id = $2 ORDER BY idx, span_start`, userID, conversationID)
		if err != nil {
			return nil, nil, err
		}
		a := evidence.ArchiveOf(lists[0])
		q := evidence.NewQuery(request, a.Recent(evidence.WindowItems))
		return a.Candidates(q), q, nil
	}
	s, err := readStanding(ctx, db, userID, conversationID, count)
	if err != nil {
		return nil, nil, err
	}
	return s.withRelevant(ctx, db, userID, conversationID, request)
}

// smallArchive is the size up to which an extraction reads its archive
// whole and selects the candidates in Go (evidence.Archive.Candidates).
const smallArchive = evidence.RelevantLimit + evidence.WindowLimit

// withRelevant reads the items request picks and returns them with s's as
// a view's candidates, and the query.
func (s *standing) withRelevant(ctx context.Context, db querier, userID, conversationID, request string) (*evidence.Candidates, *evidence.Query, error) {
	q := evidence.NewQuery(request, s.recent)
	lists, err := scanItems(ctx, db, relevantSQL, userID, conversationID,
		termHashes(userID, conversationID, q.RequestTerms()), termHashes(userID, conversationID, q.WindowTerms()))
	if err != nil {
		return nil, nil, err
	}
	return s.candidates(lists[0], lists[1]), q, nil
}

// candidates returns s with the items a query picked by its request's
// terms and by its window's.
func (s *standing) candidates(byRequest, byWindow []evidence.Item) *evidence.Candidates {
	return &evidence.Candidates{Total: s.total, Recent: s.recent, Tiers: s.tiers,
		Relevant: evidence.MergeCandidates(byRequest, byWindow)}
}

func termHashes(userID, conversationID string, terms []string) []int64 {
	h := make([]int64, len(terms))
	for i, t := range terms {
		h[i] = termHash(userID, conversationID, t)
	}
	return h
}

// relevantSQL reads the newest entries sharing a term with the request
// ($3, list 0) and with the window only ($4, list 1).
var relevantSQL = fmt.Sprintf(`(SELECT %[1]s, 0 FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND term_hashes && $3
ORDER BY idx DESC, span_start DESC LIMIT %[2]d)
UNION ALL
(SELECT %[1]s, 1 FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND term_hashes && $4
ORDER BY idx DESC, span_start DESC LIMIT %[3]d)`, itemColumns, evidence.RelevantLimit, evidence.WindowLimit)

// relevantKeysSQL is relevantSQL reading only the entries' keys.
var relevantKeysSQL = fmt.Sprintf(`(SELECT idx, span_start, 0 FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND term_hashes && $3
ORDER BY idx DESC, span_start DESC LIMIT %[1]d)
UNION ALL
(SELECT idx, span_start, 1 FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND term_hashes && $4
ORDER BY idx DESC, span_start DESC LIMIT %[2]d)`, evidence.RelevantLimit, evidence.WindowLimit)

// recentList is standingSQL's list number of the newest entries; list
// 3t+j is tier t's oldest (j 0), newest (1) and heaviest (2) entries.
const recentList = 3 * int(evidence.TierContext)

var standingSQL = func() string {
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
	fmt.Fprintf(&sql, `(SELECT %s, %d FROM recall_archive WHERE user_id = $1 AND conversation_id = $2
ORDER BY idx DESC, span_start DESC LIMIT %d)`, itemColumns, recentList, evidence.CandidateLimit)
	return sql.String()
}()

// readStanding reads the candidates no query picks: per tier its oldest,
// newest and heaviest items, and the newest items.
func readStanding(ctx context.Context, db querier, userID, conversationID string, count int) (*standing, error) {
	lists, err := scanItems(ctx, db, standingSQL, userID, conversationID)
	if err != nil {
		return nil, err
	}
	s := &standing{total: count, recent: lists[recentList]}
	for t := range evidence.TierContext {
		s.tiers[t] = evidence.MergeCandidates(lists[3*int(t)], lists[3*int(t)+1], lists[3*int(t)+2])
	}
	return s, nil
}

// scanItems runs a query of itemColumns and a list number, and returns the
// items of each list in the order the query gave them.
func scanItems(ctx context.Context, db querier, sql string, args ...any) (map[int][]evidence.Item, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read archive: %w", err)
	}
	return scanRows(rows)
}

// scanRows reads rows of itemColumns and a list number, and closes them.
func scanRows(rows pgx.Rows) (map[int][]evidence.Item, error) {
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
		it.Role, it.MessageID, it.Excerpt = checkpoint.Role(role), string(id), string(excerpt)
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
	return s.SearchBefore(ctx, userID, conversationID, query, 0)
}

// SearchBefore is Search choosing only among the entries of the messages
// before index before (all of them when before <= 0): the evidence that
// complements a prompt which holds the messages from before on whole.
func (s *Store) SearchBefore(ctx context.Context, userID, conversationID, query string, before int) (evidence.Record, error) {
	key := searchKey{userID, conversationID}
	empty := evidence.Record{UserID: userID, ConversationID: conversationID, PrefixDigest: checkpoint.ChainStart()}
	if known := s.searches.get(key); known != nil && s.fold.Profile != evidence.ProfileSeed {
		rec := empty
		ok, err := s.searchStanding(ctx, known, &rec, query, before)
		if err != nil {
			return evidence.Record{}, err
		}
		if ok {
			return rec, nil
		}
	}
	rec := empty
	s.searches.reads.Add(1)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		stamp, count, found, err := scanConversation(tx.QueryRow(ctx, conversationRow, userID, conversationID), &rec)
		if err != nil || !found {
			s.searches.drop(key)
			return err
		}
		if s.fold.Profile == evidence.ProfileSeed || rec.View == nil {
			return nil
		}
		known, err := readStanding(ctx, tx, userID, conversationID, count)
		if err != nil {
			return err
		}
		known.stamp = stamp
		c, q, err := known.withRelevant(ctx, tx, userID, conversationID, query)
		if err != nil {
			return err
		}
		s.searches.put(key, known)
		s.searches.items.put(userID, conversationID, known.recent)
		for t := range known.tiers {
			s.searches.items.put(userID, conversationID, known.tiers[t])
		}
		s.searches.items.put(userID, conversationID, c.Relevant)
		return s.selectView(c.Before(before), q, &rec)
	})
	if err != nil {
		return evidence.Record{}, err
	}
	return rec, nil
}
