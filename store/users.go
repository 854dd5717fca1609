package store

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// The queries of this file read a user's rows in keyset pages of
// Config.ExportPage rows: each page is one short query whose rows are
// collected before the next is asked for, so that no connection, snapshot
// or more than a page of rows is held while the caller writes them out.

// holdsState selects the conversations that hold state: not deleted, and
// with a history or evidence accepted (a row that an event created only to
// be rejected holds nothing).
const holdsState = `deleted_at IS NULL AND (version > 0 OR message_count > 0)`

// ConversationSummary is a conversation as a user's listing shows it.
type ConversationSummary struct {
	ConversationID string
	Version        int64
	Cursor         int
	MessageCount   int
	// UpdatedAt is when the state last changed.
	UpdatedAt time.Time
}

// UserConversations returns up to limit of the user's conversations that
// hold state, ordered by conversation id, starting after the id after (""
// for the first).
func (s *Store) UserConversations(ctx context.Context, userID, after string, limit int) ([]ConversationSummary, error) {
	rows, err := s.pool.Query(ctx, `
SELECT conversation_id, version, "cursor", message_count, updated_at
FROM recall_conversation
WHERE user_id = $1 AND conversation_id > $2 AND `+holdsState+`
ORDER BY conversation_id
LIMIT $3`, userID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list a user's conversations: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ConversationSummary, error) {
		var c ConversationSummary
		var updated *time.Time
		err := row.Scan(&c.ConversationID, &c.Version, &c.Cursor, &c.MessageCount, &updated)
		if updated != nil {
			c.UpdatedAt = *updated
		}
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list a user's conversations: %w", err)
	}
	return out, nil
}

// UserRecords yields the stored evidence of each of the user's
// conversations that hold state, ordered by conversation id (as
// UserConversations lists them), one page at a time. It stops at the first
// error, which it yields.
func (s *Store) UserRecords(ctx context.Context, userID string) iter.Seq2[evidence.Record, error] {
	return func(yield func(evidence.Record, error) bool) {
		after := ""
		for {
			rows, err := s.pool.Query(ctx, `
SELECT conversation_id, version, "cursor", message_count, prefix_digest, body, updated_at
FROM recall_conversation
WHERE user_id = $1 AND conversation_id > $2 AND `+holdsState+`
ORDER BY conversation_id
LIMIT $3`, userID, after, s.cfg.ExportPage)
			if err != nil {
				yield(evidence.Record{}, fmt.Errorf("export a user's conversations: %w", err))
				return
			}
			page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (evidence.Record, error) {
				rec := evidence.Record{UserID: userID}
				var prefix []byte
				var updated *time.Time
				err := row.Scan(&rec.ConversationID, &rec.Version, &rec.Cursor, &rec.MessageCount, &prefix, &rec.Body, &updated)
				copy(rec.PrefixDigest[:], prefix)
				if updated != nil {
					rec.UpdatedAt = *updated
				}
				return rec, err
			})
			if err != nil {
				yield(evidence.Record{}, fmt.Errorf("export a user's conversations: %w", err))
				return
			}
			for _, rec := range page {
				if !yield(rec, nil) {
					return
				}
			}
			if len(page) < s.cfg.ExportPage {
				return
			}
			after = page[len(page)-1].ConversationID
		}
	}
}

// ArchiveEntry is one entry of a conversation's archive (the focus
// profile's), as an export lists it.
type ArchiveEntry struct {
	ConversationID string
	Bucket         evidence.Bucket
	evidence.Entry
}

// UserArchive yields every archive entry of the user's conversations,
// ordered by conversation id and then by their place in the history, one
// page at a time. It stops at the first error, which it yields.
func (s *Store) UserArchive(ctx context.Context, userID string) iter.Seq2[ArchiveEntry, error] {
	return func(yield func(ArchiveEntry, error) bool) {
		// The keyset: the last row's (conversation_id, idx, span_start), the
		// archive's primary key after user_id.
		var conv string
		idx, start := -1, -1
		for {
			rows, err := s.pool.Query(ctx, `
SELECT conversation_id, idx, span_start, span_end, role, message_id, excerpt, truncated, bucket
FROM recall_archive
WHERE user_id = $1 AND (conversation_id, idx, span_start) > ($2, $3, $4)
ORDER BY conversation_id, idx, span_start
LIMIT $5`, userID, conv, idx, start, s.cfg.ExportPage)
			if err != nil {
				yield(ArchiveEntry{}, fmt.Errorf("export a user's archive: %w", err))
				return
			}
			page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArchiveEntry, error) {
				var e ArchiveEntry
				var role string
				var id, excerpt []byte
				var bucket int16
				err := row.Scan(&e.ConversationID, &e.Index, &e.Span[0], &e.Span[1], &role, &id, &excerpt, &e.Truncated, &bucket)
				e.Role, e.MessageID, e.Excerpt, e.Bucket = checkpoint.Role(role), string(id), string(excerpt), evidence.Bucket(bucket)
				return e, err
			})
			if err != nil {
				yield(ArchiveEntry{}, fmt.Errorf("export a user's archive: %w", err))
				return
			}
			for _, e := range page {
				if !yield(e, nil) {
					return
				}
			}
			if len(page) < s.cfg.ExportPage {
				return
			}
			last := page[len(page)-1]
			conv, idx, start = last.ConversationID, last.Index, last.Span[0]
		}
	}
}

// UserRejections yields the recorded rejections of the user's events,
// without their payloads, ordered by conversation id and then by id (the
// order they were recorded in), one page at a time. It stops at the first
// error, which it yields.
func (s *Store) UserRejections(ctx context.Context, userID string) iter.Seq2[RecordedRejection, error] {
	return func(yield func(RecordedRejection, error) bool) {
		var conv string
		var id int64
		for {
			rows, err := s.pool.Query(ctx, `
SELECT id, reason, detail, event_id, user_id, conversation_id, received_at
FROM recall_rejection
WHERE user_id = $1 AND (conversation_id, id) > ($2, $3)
ORDER BY conversation_id, id
LIMIT $4`, userID, conv, id, s.cfg.ExportPage)
			if err != nil {
				yield(RecordedRejection{}, fmt.Errorf("export a user's rejections: %w", err))
				return
			}
			page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecordedRejection, error) {
				var r RecordedRejection
				err := row.Scan(&r.ID, &r.Reason, &r.Detail, &r.EventID, &r.UserID, &r.ConversationID, &r.ReceivedAt)
				return r, err
			})
			if err != nil {
				yield(RecordedRejection{}, fmt.Errorf("export a user's rejections: %w", err))
				return
			}
			for _, r := range page {
				if !yield(r, nil) {
					return
				}
			}
			if len(page) < s.cfg.ExportPage {
				return
			}
			last := page[len(page)-1]
			conv, id = last.ConversationID, last.ID
		}
	}
}

// DeleteUser deletes every conversation of the user as DeleteConversation
// does, each in its own transaction under its own lock: the evidence, the
// archive, the held messages and the payloads of the rejections recorded
// for it, leaving a tombstone, so that each of those keys stays deleted.
// The keys are the user's conversations that are not deleted yet and the
// keys of the user's rejections that still hold a payload (events that
// never created a conversation); a rejection whose key no event may have
// (empty, or too long) loses its payload and gets no tombstone. A
// conversation the user starts afterwards under a new id is accepted.
//
// It returns how many keys it deleted. It is idempotent, and a deletion
// cut short (an error, a cancelled context) is finished by calling it
// again: the keys it deleted no longer match.
func (s *Store) DeleteUser(ctx context.Context, userID string) (int, error) {
	if _, err := s.pool.Exec(ctx, `
UPDATE recall_rejection SET payload = NULL, payload_sha256 = NULL
WHERE user_id = $1 AND (conversation_id = '' OR octet_length(conversation_id) > $2)
    AND (payload IS NOT NULL OR payload_sha256 IS NOT NULL)`, userID, checkpoint.MaxKeyBytes); err != nil {
		return 0, fmt.Errorf("delete a user: clear rejection payloads: %w", err)
	}
	deleted := 0
	keyQueries := []string{
		`SELECT conversation_id FROM recall_conversation
WHERE user_id = $1 AND conversation_id > $2 AND deleted_at IS NULL
ORDER BY conversation_id LIMIT $3`,
		`SELECT DISTINCT conversation_id FROM recall_rejection
WHERE user_id = $1 AND conversation_id > $2 AND (payload IS NOT NULL OR payload_sha256 IS NOT NULL)
ORDER BY conversation_id LIMIT $3`,
	}
	for _, q := range keyQueries {
		for after := ""; ; {
			rows, err := s.pool.Query(ctx, q, userID, after, s.cfg.ExportPage)
			if err != nil {
				return deleted, fmt.Errorf("delete a user: find conversations: %w", err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return deleted, fmt.Errorf("delete a user: find conversations: %w", err)
			}
			for _, id := range ids {
				if checkpoint.ValidateKey("conversation_id", id) != nil {
					continue // cleared above
				}
				if err := s.DeleteConversation(ctx, userID, id); err != nil {
					return deleted, err
				}
				s.searches.drop(searchKey{userID, id})
				deleted++
			}
			if len(ids) < s.cfg.ExportPage {
				break
			}
			after = ids[len(ids)-1]
		}
	}
	return deleted, nil
}
