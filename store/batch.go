package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"

	"github.com/recallhq/recall/checkpoint"
)

// BatchEvent is one event of a batch given to IngestBatch.
type BatchEvent struct {
	Event *checkpoint.Event
	Meta  Meta
}

// IngestBatch records many events in one transaction, with a fixed number
// of statements for the whole batch in the common case (extensions,
// duplicates, stale events, gaps): it creates the batch's missing
// conversation rows, locks all of them in key order, reads the held
// messages the decisions need, decides each event in order in memory (each
// one seeing what the events before it left), then writes the messages,
// the conversations and the extraction jobs with one statement each. The
// events of a conversation that the batch deletes go through Ingest's own
// steps, one by one, in the same transaction.
//
// Events of one conversation must be in stream order. Results[i] is what
// Ingest would have returned for events[i] had the events been ingested
// one after the other, and the tables end the same. An error means nothing
// was recorded: the caller retries, for instance each event alone.
func (s *Store) IngestBatch(ctx context.Context, events []BatchEvent) ([]Result, error) {
	if len(events) == 0 {
		return nil, nil
	}
	if s.cfg.Jobs == nil {
		for _, e := range events {
			if e.Event.Kind != checkpoint.KindDelete {
				return nil, errors.New("store: Config.Jobs is required for ingest: give it an insert-only River client")
			}
		}
	}
	var results []Result
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		results, err = s.ingestBatch(ctx, tx, events)
		return err
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// convKey names a conversation.
type convKey struct{ user, conv string }

// batchConv is one conversation of a batch: its locked row and what the
// batch's events have made of it so far.
type batchConv struct {
	key convKey
	row convRow
	// events are the indexes of the conversation's events in the batch.
	events []int
	// single is set when the batch deletes the conversation: its events
	// then take Ingest's own path.
	single bool

	held        checkpoint.Held // as the events decided so far leave it
	requestedAt *time.Time
	// loLoaded, digests and chains are the held messages read from the
	// table: [loLoaded, loLoaded+len(digests)).
	loLoaded        int
	digests, chains []checkpoint.Digest
	// tail holds the messages the batch writes, [tailFrom, held.Count),
	// as segments of the events that carry them.
	tailFrom int
	tail     []segment

	accepted  bool
	published pgtype.Timestamptz
	enqueue   bool
}

// segment is messages [from, to) of ev, with the chain digests of
// [0, i+1) for each of them.
type segment struct {
	ev       *checkpoint.Event
	from, to int
	chains   []checkpoint.Digest
}

// message returns the digest and chain digest of held message i.
func (c *batchConv) message(i int) (checkpoint.Digest, checkpoint.Digest, bool) {
	if i >= c.tailFrom {
		for j := len(c.tail) - 1; j >= 0; j-- {
			sg := &c.tail[j]
			if i >= sg.from && i < sg.to {
				return sg.ev.Digests[i-sg.ev.Offset], sg.chains[i-sg.from], true
			}
		}
		return checkpoint.Digest{}, checkpoint.Digest{}, false
	}
	if i < c.loLoaded || i >= c.loLoaded+len(c.digests) {
		return checkpoint.Digest{}, checkpoint.Digest{}, false
	}
	return c.digests[i-c.loLoaded], c.chains[i-c.loLoaded], true
}

func (s *Store) ingestBatch(ctx context.Context, tx pgx.Tx, events []BatchEvent) ([]Result, error) {
	convs, err := lockConversations(ctx, tx, events)
	if err != nil {
		return nil, err
	}
	if err := loadBatchChains(ctx, tx, convs, events); err != nil {
		return nil, err
	}
	results := make([]Result, len(events))
	for _, c := range convs {
		for _, i := range c.events {
			ev, meta := events[i].Event, events[i].Meta
			if c.single {
				results[i], err = s.ingest(ctx, tx, ev, meta)
			} else {
				results[i], err = s.decide(ctx, tx, c, ev, meta)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if err := writeBatch(ctx, tx, convs); err != nil {
		return nil, err
	}
	var jobs []river.InsertManyParams
	for _, c := range convs {
		if c.enqueue {
			jobs = append(jobs, river.InsertManyParams{Args: ExtractArgs{UserID: c.key.user, ConversationID: c.key.conv}})
		}
	}
	if len(jobs) > 0 {
		if _, err := s.cfg.Jobs.InsertManyTx(ctx, tx, jobs); err != nil {
			return nil, fmt.Errorf("enqueue extraction: %w", err)
		}
	}
	return results, nil
}

// lockConversations creates the batch's missing conversation rows and locks
// all of them, in key order so that concurrent batches never deadlock. The
// conversations are returned in that order.
func lockConversations(ctx context.Context, tx pgx.Tx, events []BatchEvent) ([]*batchConv, error) {
	byKey := make(map[convKey]*batchConv)
	var users, ids []string
	for i, e := range events {
		k := convKey{e.Event.UserID, e.Event.ConversationID}
		c := byKey[k]
		if c == nil {
			c = &batchConv{key: k}
			byKey[k] = c
			users, ids = append(users, k.user), append(ids, k.conv)
		}
		c.events = append(c.events, i)
		if e.Event.Kind == checkpoint.KindDelete {
			c.single = true
		}
	}
	// One round trip: the extraction locks of the conversations the batch
	// deletes (taken before any row lock, see lockExtraction), the insert,
	// then the row locks, which see the rows the insert made. The row lock
	// is FOR NO KEY UPDATE, which a fold's archive rows (their foreign key)
	// do not block: the batch never waits for an extraction's fold.
	start := checkpoint.ChainStart()
	b := &pgx.Batch{}
	var deleting []convKey
	for k, c := range byKey {
		if c.single {
			deleting = append(deleting, k)
		}
	}
	slices.SortFunc(deleting, func(a, b convKey) int {
		return cmp.Or(strings.Compare(a.user, b.user), strings.Compare(a.conv, b.conv))
	})
	for _, k := range deleting {
		queueLockExtraction(b, k.user, k.conv)
	}
	b.Queue(`
INSERT INTO recall_conversation (user_id, conversation_id, prefix_digest)
SELECT k.u, k.c, $3 FROM unnest($1::text[], $2::text[]) AS k(u, c)
ORDER BY k.u, k.c
ON CONFLICT DO NOTHING`, users, ids, start[:])
	b.Queue(`
SELECT c.user_id, c.conversation_id, c.version, c."cursor", c.message_count, c.prefix_digest,
    c.deleted_at IS NOT NULL, c.extract_requested_at
FROM recall_conversation c
WHERE (c.user_id, c.conversation_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
ORDER BY c.user_id, c.conversation_id
FOR NO KEY UPDATE OF c`, users, ids)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for range deleting {
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("take the extraction locks: %w", err)
		}
	}
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("create conversations: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("lock conversations: %w", err)
	}
	defer rows.Close()
	convs := make([]*batchConv, 0, len(byKey))
	for rows.Next() {
		var k convKey
		var r convRow
		var prefix []byte
		if err := rows.Scan(&k.user, &k.conv, &r.version, &r.cursor, &r.count, &prefix, &r.deleted, &r.requestedAt); err != nil {
			return nil, fmt.Errorf("lock conversations: %w", err)
		}
		copy(r.prefix[:], prefix)
		c := byKey[k]
		if c == nil {
			return nil, fmt.Errorf("lock conversations: an unexpected row")
		}
		c.row = r
		c.held = checkpoint.Held{Cursor: r.cursor, Count: r.count, Prefix: r.prefix}
		c.requestedAt = r.requestedAt
		c.tailFrom = r.count
		convs = append(convs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock conversations: %w", err)
	}
	if len(convs) != len(byKey) {
		return nil, fmt.Errorf("lock conversations: locked %d of %d", len(convs), len(byKey))
	}
	rows.Close()
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("lock conversations: %w", err)
	}
	return convs, nil
}

// loadBatchChains reads, for each conversation decided in memory, the held
// messages its events' decisions need: the span of their ranges against
// the history held before the batch. Messages the batch itself writes are
// in memory, so this span covers every later decision too.
func loadBatchChains(ctx context.Context, tx pgx.Tx, convs []*batchConv, events []BatchEvent) error {
	var users, ids []string
	var los, his []int32
	want := make(map[convKey]*batchConv)
	for _, c := range convs {
		if c.single || c.row.deleted {
			continue
		}
		lo, hi := c.row.count, c.row.cursor
		for _, i := range c.events {
			l, h := c.held.Range(events[i].Event)
			if l < h {
				lo, hi = min(lo, l), max(hi, h)
			}
		}
		if lo >= hi {
			continue
		}
		c.loLoaded = lo
		c.digests = make([]checkpoint.Digest, hi-lo)
		c.chains = make([]checkpoint.Digest, hi-lo)
		want[c.key] = c
		users, ids = append(users, c.key.user), append(ids, c.key.conv)
		los, his = append(los, int32(lo)), append(his, int32(hi))
	}
	if len(users) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `
SELECT m.user_id, m.conversation_id, m.idx, m.digest, m.chain
FROM unnest($1::text[], $2::text[], $3::int[], $4::int[]) AS r(u, c, lo, hi)
JOIN recall_message m ON m.user_id = r.u AND m.conversation_id = r.c AND m.idx >= r.lo AND m.idx < r.hi`,
		users, ids, los, his)
	if err != nil {
		return fmt.Errorf("load held messages: %w", err)
	}
	defer rows.Close()
	found := make(map[convKey]int)
	for rows.Next() {
		var k convKey
		var idx int
		var d, ch []byte
		if err := rows.Scan(&k.user, &k.conv, &idx, &d, &ch); err != nil {
			return fmt.Errorf("load held messages: %w", err)
		}
		c := want[k]
		if c == nil || idx < c.loLoaded || idx >= c.loLoaded+len(c.digests) {
			return fmt.Errorf("load held messages: an unexpected row")
		}
		c.digests[idx-c.loLoaded] = checkpoint.Digest(d)
		c.chains[idx-c.loLoaded] = checkpoint.Digest(ch)
		found[k]++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load held messages: %w", err)
	}
	for k, c := range want {
		if found[k] != len(c.digests) {
			return fmt.Errorf("held messages of a conversation are missing: have %d of [%d, %d)", found[k], c.loLoaded, c.loLoaded+len(c.digests))
		}
	}
	return nil
}

// decide applies one event to the conversation's state in memory, as
// ingest does to the table, and returns its result. Rejections are
// recorded in tx at once.
func (s *Store) decide(ctx context.Context, tx pgx.Tx, c *batchConv, ev *checkpoint.Event, meta Meta) (Result, error) {
	if c.row.deleted {
		return rejectEvent(ctx, tx, ev, meta, checkpoint.ReasonDeleted, deletedDetail)
	}
	lo, hi := c.held.Range(ev)
	digests := make([]checkpoint.Digest, hi-lo)
	chains := make([]checkpoint.Digest, hi-lo)
	for i := lo; i < hi; i++ {
		d, ch, ok := c.message(i)
		if !ok {
			return Result{}, fmt.Errorf("held message %d of a conversation is missing from the batch's reads", i)
		}
		digests[i-lo], chains[i-lo] = d, ch
	}
	lin, res, done, err := decideLineage(ctx, tx, c.held, ev, meta, digests, chains)
	if done || err != nil {
		return res, err
	}

	// Messages [From, n) replace whatever the conversation held from From
	// on, as ingest's DELETE and INSERT do.
	d, n := lin.From, ev.End()
	sg := segment{ev: ev, from: d, to: n, chains: make([]checkpoint.Digest, n-d)}
	ch, request := lin.Chain, false
	for i := d; i < n; i++ {
		ch = ch.Next(ev.Digests[i-ev.Offset])
		sg.chains[i-d] = ch
		if i > c.row.cursor && ev.Messages[i-ev.Offset].IsRequest() {
			request = true
		}
	}
	for len(c.tail) > 0 && c.tail[len(c.tail)-1].from >= d {
		c.tail = c.tail[:len(c.tail)-1]
	}
	if k := len(c.tail); k > 0 && c.tail[k-1].to > d {
		last := c.tail[k-1]
		last.to, last.chains = d, last.chains[:d-last.from]
		c.tail[k-1] = last
	}
	c.tail = append(c.tail, sg)
	c.tailFrom = min(c.tailFrom, d)
	c.held.Count = n

	enqueue := request && (c.requestedAt == nil || time.Since(*c.requestedAt) > s.cfg.CoalesceWindow)
	if enqueue {
		now := time.Now()
		c.requestedAt, c.enqueue = &now, true
	}
	c.accepted = true
	if !meta.PublishedAt.IsZero() && (!c.published.Valid || meta.PublishedAt.After(c.published.Time)) {
		c.published = pgtype.Timestamptz{Time: meta.PublishedAt, Valid: true}
	}
	return Result{Outcome: checkpoint.Accepted, Enqueued: enqueue}, nil
}

// writeBatch writes what the batch's in-memory decisions accepted: it
// deletes the held tails they replace, inserts their messages and updates
// their conversations.
func writeBatch(ctx context.Context, tx pgx.Tx, convs []*batchConv) error {
	var users, ids []string
	var counts []int32
	var published []pgtype.Timestamptz
	var enqueue []bool
	var delUsers, delIDs []string
	var delFrom []int32
	for _, c := range convs {
		if !c.accepted {
			continue
		}
		users, ids = append(users, c.key.user), append(ids, c.key.conv)
		counts = append(counts, int32(c.held.Count))
		published = append(published, c.published)
		enqueue = append(enqueue, c.enqueue)
		if c.tailFrom < c.row.count {
			delUsers, delIDs = append(delUsers, c.key.user), append(delIDs, c.key.conv)
			delFrom = append(delFrom, int32(c.tailFrom))
		}
	}
	if len(users) == 0 {
		return nil
	}
	// The deletion, the inserts and the update go in one round trip but
	// for a large batch, whose full chunks of messages are sent as they
	// fill (with what was queued before them), so that the rows to insert
	// are never held whole.
	b := &pgx.Batch{}
	if len(delUsers) > 0 {
		b.Queue(`
DELETE FROM recall_message m
USING unnest($1::text[], $2::text[], $3::int[]) AS r(u, c, d)
WHERE m.user_id = r.u AND m.conversation_id = r.c AND m.idx >= r.d`, delUsers, delIDs, delFrom)
	}
	b, err := insertTails(ctx, tx, b, convs)
	if err != nil {
		return err
	}
	b.Queue(`
UPDATE recall_conversation c
SET message_count = r.n, updated_at = now(),
    published_at = greatest(c.published_at, r.published),
    extract_requested_at = CASE WHEN r.enqueue THEN now() ELSE c.extract_requested_at END
FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::bool[]) AS r(u, c, n, published, enqueue)
WHERE c.user_id = r.u AND c.conversation_id = r.c`, users, ids, counts, published, enqueue)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write messages and conversations: %w", err)
	}
	return nil
}

// messageRows are the columns of recall_message rows to insert.
type messageRows struct {
	users, ids []string
	idx        []int32
	digests    [][]byte
	chains     [][]byte
	roles      []string
	evidential []bool
	messageIDs [][]byte
	texts      [][]byte
	size       int
}

func (r *messageRows) add(user, conv string, ev *checkpoint.Event, i int, chain checkpoint.Digest) {
	m := &ev.Messages[i-ev.Offset]
	d := ev.Digests[i-ev.Offset]
	r.users, r.ids = append(r.users, user), append(r.ids, conv)
	r.idx = append(r.idx, int32(i))
	r.digests = append(r.digests, d[:])
	r.chains = append(r.chains, chain[:])
	r.roles = append(r.roles, string(m.Role))
	evidential := m.Evidential()
	r.evidential = append(r.evidential, evidential)
	r.messageIDs = append(r.messageIDs, []byte(m.ID))
	var text []byte
	if evidential {
		text = []byte(m.Text)
	}
	r.texts = append(r.texts, text)
	r.size += len(user) + len(conv) + len(m.ID) + len(text) + 64
}

// queue queues the insert of the rows into b, and starts afresh.
func (r *messageRows) queue(b *pgx.Batch) {
	if len(r.idx) == 0 {
		return
	}
	b.Queue(`
INSERT INTO recall_message (user_id, conversation_id, idx, digest, chain, role, evidential, message_id, text)
SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::bytea[], $5::bytea[], $6::text[], $7::bool[], $8::bytea[], $9::bytea[])`,
		r.users, r.ids, r.idx, r.digests, r.chains, r.roles, r.evidential, r.messageIDs, r.texts)
	*r = messageRows{}
}

// insertTails queues the insert of the messages every conversation's tail
// holds into b, in statements of at most about insertChunkBytes each; it
// sends b whenever a statement is full, and returns the batch to queue
// the rest into.
func insertTails(ctx context.Context, tx pgx.Tx, b *pgx.Batch, convs []*batchConv) (*pgx.Batch, error) {
	var rows messageRows
	for _, c := range convs {
		for _, sg := range c.tail {
			for i := sg.from; i < sg.to; i++ {
				rows.add(c.key.user, c.key.conv, sg.ev, i, sg.chains[i-sg.from])
				if rows.size >= insertChunkBytes {
					rows.queue(b)
					if err := tx.SendBatch(ctx, b).Close(); err != nil {
						return nil, fmt.Errorf("store messages: %w", err)
					}
					b = &pgx.Batch{}
				}
			}
		}
	}
	rows.queue(b)
	return b, nil
}
