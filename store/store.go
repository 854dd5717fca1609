// Package store is recall's Postgres adapter (pgx v5): conversation state,
// the messages recall holds until they are summarised, rejection records and
// tombstones, and the schema's migrations.
//
// Each conversation has two locks. Its row in recall_conversation is the
// lock of its state: ingest takes it (FOR NO KEY UPDATE) for the whole of
// its transaction, an extraction only to check what it folded and write.
// Its extraction lock (an advisory lock on the key, lockExtraction) is
// held by an extraction for the whole of its transaction and by a deletion
// before the row; ingest never takes it. So ingest never waits for a fold,
// extractions of a conversation and its deletion serialise, and different
// conversations never wait for each other.
package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// The defaults of Config.
const (
	// DefaultCoalesceWindow is how long a requested extraction absorbs later
	// events of its conversation. The sweep's age (jobs.DefaultSweepAfter)
	// is the same window.
	DefaultCoalesceWindow = 10 * time.Second
	// DefaultExtractChunk is how many held messages an extraction reads and
	// folds at once.
	DefaultExtractChunk = 2000
	// DefaultSearchCache is how many conversations' standing candidates a
	// Store keeps for Search.
	DefaultSearchCache = 64
	// DefaultExportPage is how many rows each query of a user's export or
	// deletion reads.
	DefaultExportPage = 500
)

// Config configures a Store.
type Config struct {
	// Jobs inserts extraction jobs in ingest's and Sweep's transactions.
	// Required for Ingest and Sweep; a store that only reads needs none.
	Jobs JobInserter
	// Fold is the evidence profile, its bounds and heuristics. Defaults to
	// the focus profile with its default bounds.
	Fold *evidence.Config
	// Follower is what follows each extraction over the messages it
	// summarised: Notes{} for the model lane (RECALL_EXTRACTOR=model), which
	// holds them for its notes job and enqueues it. Defaults to Lexical{}:
	// nothing follows.
	Follower Follower
	// CoalesceWindow is how long an enqueued extraction that has not started
	// yet absorbs later events of its conversation; after it, ingest enqueues
	// another (which also covers a job lost with a crashed worker until River
	// rescues it). Defaults to DefaultCoalesceWindow (10s).
	CoalesceWindow time.Duration
	// ExtractChunk is how many held messages an extraction reads and folds
	// at once, so that a large snapshot is never held whole. Defaults to
	// DefaultExtractChunk (2000).
	ExtractChunk int
	// SearchCache is how many conversations' standing search candidates
	// (those no query picks) Search keeps in memory, each stamped with the
	// row version it was read at. Defaults to DefaultSearchCache; negative
	// keeps none.
	SearchCache int
	// ExportPage is how many rows each query of a user's export
	// (UserRecords, UserArchive, UserRejections) and of DeleteUser reads:
	// what they hold in memory at once. Defaults to DefaultExportPage (500).
	ExportPage int
	// Logger receives operational logs; never message text. Defaults to
	// discarding.
	Logger *slog.Logger
}

// Store reads and writes recall's tables.
type Store struct {
	pool *pgxpool.Pool
	cfg  Config
	fold evidence.Config // cfg.Fold with its defaults

	extractChunk int
	searches     *searchCache

	// foldedHook, when set (by tests), runs after an extraction's fold and
	// before it takes the row lock to write.
	foldedHook func()
}

// WithDefaults returns a copy of c (which may be nil) with every zero
// field set to its default.
func (c *Config) WithDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	out.CoalesceWindow = cmp.Or(out.CoalesceWindow, DefaultCoalesceWindow)
	out.ExtractChunk = cmp.Or(out.ExtractChunk, DefaultExtractChunk)
	out.SearchCache = cmp.Or(out.SearchCache, DefaultSearchCache)
	out.ExportPage = cmp.Or(out.ExportPage, DefaultExportPage)
	if out.Follower == nil {
		out.Follower = Lexical{}
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return &out
}

// validate reports the first field of a defaulted Config that cannot work,
// saying how to fix it.
func (c *Config) validate() error {
	if c.ExtractChunk < 0 {
		return fmt.Errorf("store: Config.ExtractChunk is %d: it must be positive, or 0 for the default %d", c.ExtractChunk, DefaultExtractChunk)
	}
	if c.ExportPage < 0 {
		return fmt.Errorf("store: Config.ExportPage is %d: it must be positive, or 0 for the default %d", c.ExportPage, DefaultExportPage)
	}
	return nil
}

// New returns a Store over pool.
func New(pool *pgxpool.Pool, cfg *Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("store: New needs a pgx pool")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &Store{pool: pool, cfg: *c, fold: c.Fold.WithDefaults(), extractChunk: c.ExtractChunk,
		searches: newSearchCache(c.SearchCache)}, nil
}

// Evidence returns a conversation's stored evidence. An unknown or deleted
// conversation is a Record with only its key set.
func (s *Store) Evidence(ctx context.Context, userID, conversationID string) (evidence.Record, error) {
	rec := evidence.Record{UserID: userID, ConversationID: conversationID, PrefixDigest: checkpoint.ChainStart()}
	var prefix []byte
	var updated *time.Time
	err := s.pool.QueryRow(ctx, `
SELECT version, "cursor", message_count, prefix_digest, body, view, updated_at
FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2 AND deleted_at IS NULL`, userID, conversationID).
		Scan(&rec.Version, &rec.Cursor, &rec.MessageCount, &prefix, &rec.Body, &rec.View, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, nil
	}
	if err != nil {
		return rec, fmt.Errorf("read evidence: %w", err)
	}
	copy(rec.PrefixDigest[:], prefix)
	if updated != nil {
		rec.UpdatedAt = *updated
	}
	return rec, nil
}

// lockConversation takes the conversation's row lock in tx, creating the row
// first when it does not exist. The lock is FOR NO KEY UPDATE, which the
// key share lock an extraction's archive rows take on the row (their
// foreign key) does not block.
func lockConversation(ctx context.Context, tx pgx.Tx, userID, conversationID string) (convRow, error) {
	const sel = `
SELECT version, "cursor", message_count, prefix_digest, body, deleted_at IS NOT NULL, extract_requested_at
FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2
FOR NO KEY UPDATE`
	var r convRow
	scan := func() error {
		var prefix []byte
		err := tx.QueryRow(ctx, sel, userID, conversationID).
			Scan(&r.version, &r.cursor, &r.count, &prefix, &r.body, &r.deleted, &r.requestedAt)
		copy(r.prefix[:], prefix)
		return err
	}
	err := scan()
	if errors.Is(err, pgx.ErrNoRows) {
		start := checkpoint.ChainStart()
		if _, err := tx.Exec(ctx, `
INSERT INTO recall_conversation (user_id, conversation_id, prefix_digest)
VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, userID, conversationID, start[:]); err != nil {
			return r, fmt.Errorf("create conversation: %w", err)
		}
		err = scan()
	}
	if err != nil {
		return r, fmt.Errorf("lock conversation: %w", err)
	}
	return r, nil
}

// convRow is a locked conversation row.
type convRow struct {
	version     int64
	cursor      int
	count       int
	prefix      checkpoint.Digest
	body        []byte
	deleted     bool
	requestedAt *time.Time
	// archiveCount is the size of the focus profile's archive; carry the
	// focus fold's carry.
	archiveCount int
	carry        []byte
	// notesHoldFrom, notesRequestedAt and notesCount are the model lane's
	// (notes.go).
	notesHoldFrom    *int
	notesRequestedAt *time.Time
	notesCount       int
}

func (r *convRow) record(userID, conversationID string) evidence.Record {
	return evidence.Record{UserID: userID, ConversationID: conversationID, Version: r.version,
		Cursor: r.cursor, MessageCount: r.count, PrefixDigest: r.prefix, Body: r.body, Carry: r.carry}
}

// DeleteConversation deletes a conversation's evidence and every message
// recall holds of it (including the payloads of its rejected events, and
// the model lane's notes and call records), and
// leaves a tombstone so that later events for the key are rejected as
// deleted. It is idempotent.
func (s *Store) DeleteConversation(ctx context.Context, userID, conversationID string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockExtraction(ctx, tx, userID, conversationID); err != nil {
			return err
		}
		if _, err := lockConversation(ctx, tx, userID, conversationID); err != nil {
			return err
		}
		return deleteLocked(ctx, tx, userID, conversationID)
	})
}

// deleteLocked deletes a conversation whose extraction lock and row lock tx
// holds, taken in that order.
func deleteLocked(ctx context.Context, tx pgx.Tx, userID, conversationID string) error {
	if err := lockDeletion(ctx, tx, userID, conversationID); err != nil {
		return err
	}
	start := checkpoint.ChainStart()
	b := &pgx.Batch{}
	b.Queue(`
UPDATE recall_conversation
SET deleted_at = coalesce(deleted_at, now()), version = 0, "cursor" = 0, message_count = 0,
    prefix_digest = $3, body = NULL, updated_at = now(), extract_requested_at = NULL, archive_count = 0, view = NULL, carry = NULL,
    notes_cursor = NULL, notes_hold_from = NULL, notes_requested_at = NULL, notes_count = 0
WHERE user_id = $1 AND conversation_id = $2`, userID, conversationID, start[:])
	b.Queue(`DELETE FROM recall_message WHERE user_id = $1 AND conversation_id = $2`, userID, conversationID)
	b.Queue(`DELETE FROM recall_archive WHERE user_id = $1 AND conversation_id = $2`, userID, conversationID)
	b.Queue(`DELETE FROM recall_note WHERE user_id = $1 AND conversation_id = $2`, userID, conversationID)
	b.Queue(`DELETE FROM recall_model_call WHERE user_id = $1 AND conversation_id = $2`, userID, conversationID)
	b.Queue(`UPDATE recall_rejection SET payload = NULL, payload_sha256 = NULL
WHERE user_id = $1 AND conversation_id = $2 AND (payload IS NOT NULL OR payload_sha256 IS NOT NULL)`, userID, conversationID)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("delete conversation: %w", err)
	}
	return nil
}

// Rejection is the record of an event that could not be applied (docs/protocol.md, Rejections).
type Rejection struct {
	Reason         checkpoint.Reason
	Detail         string
	EventID        string
	UserID         string
	ConversationID string
	// Stream and StreamSeq identify the JetStream message, so that a
	// redelivered event is recorded once.
	Stream    string
	StreamSeq uint64
	// StreamCreated is the stream's creation time: a stream recreated with
	// the database kept numbers its messages from 1 again, and its
	// rejections must not collide with the old stream's.
	StreamCreated time.Time
	// Payload is the event as received, kept for replay: at most its first
	// MaxRejectionPayload bytes, with the SHA-256 and size of the whole.
	Payload []byte
}

// MaxRejectionPayload bounds the payload bytes a rejection keeps (64 KiB).
const MaxRejectionPayload = 64 << 10

// Reject records a rejected event. Recording the same stream message twice
// keeps one row. When the event names a conversation that is deleted, it
// is recorded as deleted, without its payload, whatever made it fail: the
// check runs under the key's deletion lock, so a DELETE that commits at the
// same moment cannot leave a payload behind.
func (s *Store) Reject(ctx context.Context, r Rejection) error {
	if r.Reason == checkpoint.ReasonDeleted ||
		checkpoint.ValidateKey("user_id", r.UserID) != nil || checkpoint.ValidateKey("conversation_id", r.ConversationID) != nil {
		// No conversation can have this key (it is empty, too long, not
		// UTF-8 or holds a NUL): there is no tombstone to look for.
		return insertRejection(ctx, s.pool, r)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockDeletion(ctx, tx, r.UserID, r.ConversationID); err != nil {
			return err
		}
		var deleted bool
		err := tx.QueryRow(ctx, `SELECT deleted_at IS NOT NULL FROM recall_conversation WHERE user_id = $1 AND conversation_id = $2`,
			r.UserID, r.ConversationID).Scan(&deleted)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("record rejection: %w", err)
		}
		if deleted {
			r.Reason, r.Detail = checkpoint.ReasonDeleted, deletedDetail
		}
		return insertRejection(ctx, tx, r)
	})
}

// deletedDetail is the detail of a rejection as deleted.
const deletedDetail = "the conversation was deleted"

// lockDeletion takes the key's deletion lock until tx ends: deleting a
// conversation and recording a rejection of an event that names it (which
// may not have a conversation row to lock) serialise on it.
func lockDeletion(ctx context.Context, tx pgx.Tx, userID, conversationID string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, userID, conversationID); err != nil {
		return fmt.Errorf("lock the key for deletion: %w", err)
	}
	return nil
}

// lockExtraction takes the key's extraction lock until tx ends. An
// extraction holds it from its first read to its commit, and a deletion
// takes it before the conversation's row lock (which the extraction takes
// after it, to write), so that a deletion never waits, holding the row, for
// archive rows a fold has written. Ingest never takes it.
func lockExtraction(ctx context.Context, tx pgx.Tx, userID, conversationID string) error {
	b := &pgx.Batch{}
	queueLockExtraction(b, userID, conversationID)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("take the extraction lock: %w", err)
	}
	return nil
}

// queueLockExtraction queues the statement that takes the key's extraction
// lock: an advisory lock on one 64-bit key, apart from the deletion lock's
// pairs of 32-bit keys.
func queueLockExtraction(b *pgx.Batch, userID, conversationID string) {
	b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, hashtext($2)))`, userID, conversationID)
}

// execer is what pgxpool.Pool and pgx.Tx share.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func insertRejection(ctx context.Context, db execer, r Rejection) error {
	var sum []byte
	var size *int64
	if r.Reason == checkpoint.ReasonDeleted {
		// The conversation was deleted: keep no copy of its messages, nor a
		// digest that would confirm a guess of them.
		r.Payload = nil
	}
	if r.Payload != nil {
		d := sha256.Sum256(r.Payload)
		n := int64(len(r.Payload))
		sum, size = d[:], &n
		r.Payload = r.Payload[:min(len(r.Payload), MaxRejectionPayload)]
	}
	_, err := db.Exec(ctx, `
INSERT INTO recall_rejection (reason, detail, event_id, user_id, conversation_id, stream, stream_created, stream_seq,
    payload, payload_sha256, payload_bytes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (stream, stream_created, stream_seq) WHERE stream_seq > 0 DO NOTHING`,
		string(r.Reason), clean(r.Detail, 1024), clean(r.EventID, 1024), clean(r.UserID, 1024),
		clean(r.ConversationID, 1024), r.Stream, nullTime(r.StreamCreated), int64(r.StreamSeq), r.Payload, sum, size)
	if err != nil {
		return fmt.Errorf("record rejection: %w", err)
	}
	return nil
}

// clean makes s storable as text: valid UTF-8, no NUL, at most max bytes.
func clean(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
