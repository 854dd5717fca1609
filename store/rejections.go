package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/checkpoint"
)

// RecordedRejection is a row of recall_rejection as it is listed.
type RecordedRejection struct {
	ID             int64     `json:"id"`
	Reason         string    `json:"reason"`
	Detail         string    `json:"detail"`
	EventID        string    `json:"event_id"`
	UserID         string    `json:"user_id"`
	ConversationID string    `json:"conversation_id"`
	ReceivedAt     time.Time `json:"received_at"`
	// Payload is the event as received (null for a deleted key's). It is
	// read only when RejectionFilter.Payloads asks for it.
	Payload []byte `json:"payload,omitempty"`
}

// DefaultRejectionLimit bounds a listing when RejectionFilter.Limit is 0.
const DefaultRejectionLimit = 1000

// RejectionFilter selects rejections. The zero value lists the newest
// DefaultRejectionLimit rows without their payloads.
type RejectionFilter struct {
	// Since keeps rows received at or after it. Defaults to all.
	Since time.Time
	// Reason keeps rows of one reason. Defaults to all.
	Reason checkpoint.Reason
	// UserID and ConversationID keep the rows of one user or one key.
	// Default to all.
	UserID, ConversationID string
	// EventID keeps the rows of one event. Defaults to all.
	EventID string
	// Limit bounds the rows, newest first. Defaults to 1,000.
	Limit int
	// Payloads reads the payloads too. Defaults to false.
	Payloads bool
}

// Rejections lists recorded rejections, newest first.
func (s *Store) Rejections(ctx context.Context, f RejectionFilter) ([]RecordedRejection, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if !f.Since.IsZero() {
		add("received_at >= ?", f.Since)
	}
	if f.Reason != "" {
		add("reason = ?", string(f.Reason))
	}
	if f.UserID != "" {
		add("user_id = ?", f.UserID)
	}
	if f.ConversationID != "" {
		add("conversation_id = ?", f.ConversationID)
	}
	if f.EventID != "" {
		add("event_id = ?", f.EventID)
	}
	payload := "NULL::bytea"
	if f.Payloads {
		payload = "payload"
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultRejectionLimit
	}
	q := `SELECT id, reason, detail, event_id, user_id, conversation_id, received_at, ` + payload + ` FROM recall_rejection`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY received_at DESC, id DESC LIMIT " + strconv.Itoa(limit)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list rejections: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecordedRejection, error) {
		var r RecordedRejection
		err := row.Scan(&r.ID, &r.Reason, &r.Detail, &r.EventID, &r.UserID, &r.ConversationID, &r.ReceivedAt, &r.Payload)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("list rejections: %w", err)
	}
	return out, nil
}
