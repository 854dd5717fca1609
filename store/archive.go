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

// recall_archive holds each conversation's archive. The core decides what
// it keeps and which items a view reads (evidence.AddToArchive,
// evidence.ReadCandidates); this file only answers the core's scans, each
// through an index (the restatement key, the tier, the bucket, and a GIN
// index on the entries' term hashes) rather than by reading a
// conversation's archive whole, and applies the changes it hands back.

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

// archive is one conversation's archive in recall_archive: it answers the
// core's scans (evidence.Index), each through an index, and applies the
// changes the core decides (evidence.ArchiveWriter) in the transaction tx
// (nil for reads only).
type archive struct {
	db                     querier
	tx                     pgx.Tx
	userID, conversationID string
	// count is how many items the archive holds; whole, a small
	// archive as read whole, until the next change.
	count int
	whole *evidence.Archive
	// notes is how many model notes the conversation has (notes.go); -1
	// when not known. pending are notes about to be written, which the
	// view reads beside them.
	notes   int
	pending []evidence.Note
}

// Scan implements evidence.Index. An archive of up to smallArchive items
// is read whole, in one plain range scan no longer than the scans' reads,
// and the scans run over it in memory.
func (a *archive) Scan(ctx context.Context, scans []evidence.Scan) ([][]evidence.Item, error) {
	if a.count <= smallArchive {
		if a.whole == nil {
			lists, err := scanItems(ctx, a.db, `SELECT `+itemColumns+`, 0 FROM recall_archive
WHERE user_id = $1 AND conversation_id = $2 ORDER BY idx, span_start`, a.userID, a.conversationID)
			if err != nil {
				return nil, err
			}
			a.whole = evidence.ArchiveOf(lists[0])
		}
		return a.whole.Scan(ctx, scans)
	}
	sql, args := scanSQL(a.userID, a.conversationID, scans, itemColumns)
	lists, err := scanItems(ctx, a.db, sql, args...)
	if err != nil {
		return nil, err
	}
	out := make([][]evidence.Item, len(scans))
	for i := range out {
		out[i] = lists[i]
	}
	return out, nil
}

// Replace implements evidence.ArchiveWriter: the restated entries'
// deletion and the first insert go in one round trip; a large
// extraction's further inserts follow one at a time.
func (a *archive) Replace(ctx context.Context, keys []string, items []evidence.Item) (int, error) {
	hashes := make([]int64, len(keys))
	for i, k := range keys {
		hashes[i] = keyHash(k)
	}
	a.whole = nil
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM recall_archive WHERE user_id = $1 AND conversation_id = $2 AND key_hash = ANY($3)`,
		a.userID, a.conversationID, hashes)
	first := min(archiveChunk, len(items))
	queueItems(b, a.userID, a.conversationID, items[:first])
	br := a.tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	if err != nil {
		br.Close()
		return 0, fmt.Errorf("replace restated entries: %w", err)
	}
	if len(items) > 0 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return 0, fmt.Errorf("store archive entries: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return 0, fmt.Errorf("store archive entries: %w", err)
	}
	for lo := first; lo < len(items); lo += archiveChunk {
		b := &pgx.Batch{}
		queueItems(b, a.userID, a.conversationID, items[lo:min(lo+archiveChunk, len(items))])
		if err := a.tx.SendBatch(ctx, b).Close(); err != nil {
			return 0, fmt.Errorf("store archive entries: %w", err)
		}
	}
	a.count += len(items) - int(tag.RowsAffected())
	return int(tag.RowsAffected()), nil
}

// Delete implements evidence.ArchiveWriter.
func (a *archive) Delete(ctx context.Context, s evidence.Scan) (int, error) {
	a.whole = nil
	args := []any{a.userID, a.conversationID}
	where := scanWhere(&s, a.userID, a.conversationID, &args)
	tag, err := a.tx.Exec(ctx, fmt.Sprintf(`
WITH gone AS (SELECT idx, span_start FROM recall_archive WHERE %s ORDER BY %s LIMIT %d)
DELETE FROM recall_archive a USING gone
WHERE a.user_id = $1 AND a.conversation_id = $2 AND a.idx = gone.idx AND a.span_start = gone.span_start`,
		where, orderSQL[s.Order], s.Limit), args...)
	if err != nil {
		return 0, fmt.Errorf("bound the archive: %w", err)
	}
	a.count -= int(tag.RowsAffected())
	return int(tag.RowsAffected()), nil
}

// orderSQL spells each evidence.Order as an ORDER BY list.
var orderSQL = [...]string{
	evidence.Oldest:   "idx, span_start",
	evidence.Newest:   "idx DESC, span_start DESC",
	evidence.Heaviest: "weight DESC, idx, span_start",
}

// scanWhere returns the WHERE condition of s, appending its arguments to
// args, which hold the conversation's key as $1 and $2.
func scanWhere(s *evidence.Scan, userID, conversationID string, args *[]any) string {
	var b strings.Builder
	b.WriteString("user_id = $1 AND conversation_id = $2")
	if s.Tier != evidence.Any {
		fmt.Fprintf(&b, " AND tier = %d", s.Tier)
	}
	if s.Bucket != evidence.Any {
		fmt.Fprintf(&b, " AND bucket = %d", s.Bucket)
	}
	if s.Role != "" {
		*args = append(*args, string(s.Role))
		fmt.Fprintf(&b, " AND role = $%d", len(*args))
	}
	if s.After >= 0 {
		*args = append(*args, s.After)
		fmt.Fprintf(&b, " AND idx > $%d", len(*args))
	}
	if s.Before > 0 {
		*args = append(*args, s.Before)
		fmt.Fprintf(&b, " AND idx < $%d", len(*args))
	}
	if s.Terms != nil {
		*args = append(*args, termHashes(userID, conversationID, s.Terms))
		fmt.Fprintf(&b, " AND term_hashes && $%d", len(*args))
	}
	if s.Slots != nil {
		*args = append(*args, termHashes(userID, conversationID, s.Slots))
		fmt.Fprintf(&b, " AND slot_hashes && $%d", len(*args))
	}
	if s.Indexes != nil {
		idx := make([]int32, len(s.Indexes))
		for i, x := range s.Indexes {
			idx[i] = int32(x)
		}
		*args = append(*args, idx)
		fmt.Fprintf(&b, " AND idx = ANY($%d)", len(*args))
	}
	return b.String()
}

// scanSQL returns the statement that answers scans, one row per item with
// columns and the number of its scan, and its arguments.
func scanSQL(userID, conversationID string, scans []evidence.Scan, columns string) (string, []any) {
	args := []any{userID, conversationID}
	var b strings.Builder
	for i := range scans {
		if i > 0 {
			b.WriteString("\nUNION ALL\n")
		}
		s := &scans[i]
		fmt.Fprintf(&b, "(SELECT %s, %d FROM recall_archive WHERE %s ORDER BY %s LIMIT %d)",
			columns, i, scanWhere(s, userID, conversationID, &args), orderSQL[s.Order], s.Limit)
	}
	return b.String(), args
}

// appendHashes appends the hashes of terms in the conversation of userID
// and conversationID, separated by spaces.
func appendHashes(b []byte, userID, conversationID string, terms []string) []byte {
	for j, t := range terms {
		if j > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, termHash(userID, conversationID, t), 10)
	}
	return b
}

// queueItems queues the insert of items.
func queueItems(b *pgx.Batch, userID, conversationID string, items []evidence.Item) {
	n := len(items)
	keys := make([]int64, n)
	idx, start, end := make([]int32, n), make([]int32, n), make([]int32, n)
	roles, terms, hashes := make([]string, n), make([]string, n), make([]string, n)
	slots, slotHashes := make([]string, n), make([]string, n)
	fixIdx, fixSpan, fixChance := make([]*int32, n), make([]*int32, n), make([]*int16, n)
	ids, excerpts := make([][]byte, n), make([][]byte, n)
	truncated := make([]bool, n)
	traits, dates := make([]int32, n), make([]*string, n)
	buckets, tiers, weights := make([]int16, n), make([]int16, n), make([]int16, n)
	var hb []byte
	for i := range items {
		it := &items[i]
		idx[i], start[i], end[i] = int32(it.Index), int32(it.Span[0]), int32(it.Span[1])
		roles[i], ids[i], excerpts[i], truncated[i] = string(it.Role), []byte(it.MessageID), []byte(it.Excerpt), it.Truncated
		keys[i] = keyHash(it.Key)
		traits[i] = int32(it.Traits)
		if it.Date != "" {
			dates[i] = &it.Date
		}
		buckets[i], tiers[i], weights[i] = int16(it.Bucket), int16(it.Tier), int16(it.Weight)
		terms[i], slots[i] = strings.Join(it.Terms, " "), strings.Join(it.Slots, " ")
		hb = appendHashes(hb[:0], userID, conversationID, it.Terms)
		hashes[i] = string(hb)
		hb = appendHashes(hb[:0], userID, conversationID, it.Slots)
		slotHashes[i] = string(hb)
		if it.Fix != (evidence.Fix{}) {
			x, y, z := int32(it.Fix.Index), int32(it.Fix.Start), int16(it.Fix.Chance)
			fixIdx[i], fixSpan[i], fixChance[i] = &x, &y, &z
		}
	}
	b.Queue(`
INSERT INTO recall_archive (user_id, conversation_id, idx, span_start, span_end, role, message_id, excerpt,
    truncated, bucket, tier, weight, key_hash, terms, term_hashes, traits, date, slots, slot_hashes, fix_idx, fix_span, fix_chance)
SELECT $1, $2, t.idx, t.s, t.e, t.role, t.id, t.excerpt, t.truncated, t.bucket, t.tier, t.weight, t.key_hash,
    string_to_array(t.terms, ' '), string_to_array(t.hashes, ' ')::bigint[], t.traits, t.date,
    string_to_array(t.slots, ' '), string_to_array(t.slot_hashes, ' ')::bigint[], t.fix_idx, t.fix_span, t.fix_chance
FROM unnest($3::int[], $4::int[], $5::int[], $6::text[], $7::bytea[], $8::bytea[], $9::bool[], $10::int2[],
    $11::int2[], $12::int2[], $13::int8[], $14::text[], $15::text[], $16::int4[], $17::text[],
    $18::text[], $19::text[], $20::int[], $21::int[], $22::int2[])
    AS t(idx, s, e, role, id, excerpt, truncated, bucket, tier, weight, key_hash, terms, hashes, traits, date,
    slots, slot_hashes, fix_idx, fix_span, fix_chance)`,
		userID, conversationID, idx, start, end, roles, ids, excerpts, truncated, buckets, tiers, weights, keys, terms, hashes, traits, dates,
		slots, slotHashes, fixIdx, fixSpan, fixChance)
}

const itemColumns = `idx, span_start, span_end, role, message_id, excerpt, truncated, bucket, tier, weight, array_to_string(terms, ' '), traits, date,
    array_to_string(slots, ' '), fix_idx, fix_span, fix_chance`

// candidates returns the candidates of a view for request (a request's or a
// search's text) and the query, as evidence.ReadCandidates reads them, from
// the archive of count items and notes model notes.
func candidates(ctx context.Context, db querier, rec *evidence.Record, request string, count, notes int) (*evidence.Candidates, *evidence.Query, error) {
	carry, err := evidence.UnmarshalCarry(rec.Carry)
	if err != nil {
		return nil, nil, fmt.Errorf("decode the fold's carry: %w", err)
	}
	return evidence.ReadCandidates(ctx, &archive{db: db, userID: rec.UserID, conversationID: rec.ConversationID, count: count, notes: notes}, count, carry, request)
}

// smallArchive is the size up to which an archive is read whole
// (archive.Scan).
const smallArchive = 256

func termHashes(userID, conversationID string, terms []string) []int64 {
	h := make([]int64, len(terms))
	for i, t := range terms {
		h[i] = termHash(userID, conversationID, t)
	}
	return h
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
		var traits int32
		var date *string
		var slots string
		var fixIdx, fixSpan *int32
		var fixChance *int16
		var list int
		if err := rows.Scan(&it.Index, &it.Span[0], &it.Span[1], &role, &id, &excerpt, &it.Truncated, &bucket, &tier, &weight, &terms, &traits, &date,
			&slots, &fixIdx, &fixSpan, &fixChance, &list); err != nil {
			return nil, fmt.Errorf("read archive: %w", err)
		}
		if slots != "" {
			it.Slots = strings.Split(slots, " ")
		}
		if fixIdx != nil && fixSpan != nil && fixChance != nil {
			it.Fix = evidence.Fix{Index: int(*fixIdx), Start: int(*fixSpan), Chance: int(*fixChance)}
		}
		it.Role, it.MessageID, it.Excerpt = checkpoint.Role(role), string(id), string(excerpt)
		it.Bucket, it.Tier, it.Weight, it.Traits = evidence.Bucket(bucket), evidence.Tier(tier), int(weight), evidence.Traits(traits)
		if date != nil {
			it.Date = *date
		}
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
	if k := s.searches.get(key); k != nil {
		rec := empty
		ok, err := s.searchStanding(ctx, k, &rec, query, before)
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
		if rec.View == nil {
			return nil // no focus view: the stored evidence is the answer
		}
		ix := &archive{db: tx, userID: userID, conversationID: conversationID, count: count, notes: -1}
		carry, err := evidence.UnmarshalCarry(rec.Carry)
		if err != nil {
			return fmt.Errorf("decode the fold's carry: %w", err)
		}
		standing, err := evidence.ReadStanding(ctx, ix, count, carry)
		if err != nil {
			return err
		}
		c, q, err := standing.Candidates(ctx, ix, query)
		if err != nil {
			return err
		}
		s.searches.put(key, &known{stamp: stamp, Standing: standing})
		s.searches.items.put(userID, conversationID, standing.Recent)
		for t := range standing.Tiers {
			s.searches.items.put(userID, conversationID, standing.Tiers[t])
		}
		s.searches.items.put(userID, conversationID, c.Relevant)
		return s.selectView(c.Before(before), q, &rec)
	})
	if err != nil {
		return evidence.Record{}, err
	}
	return rec, nil
}
