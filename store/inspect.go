package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// Inspect returns a conversation's inspection with the page of up to limit
// (at least 1) archive entries after the position after (nil for the first
// page). The
// view is chosen again for the held request at the cursor from the same
// candidates, by the same code (evidence.ExplainView), as extraction chose
// it; Matches says whether it came out the same. The first page also
// carries the model lane's notes and calls.
func (s *Store) Inspect(ctx context.Context, userID, conversationID string, after *evidence.ArchivePosition, limit int) (evidence.Inspection, error) {
	in := evidence.Inspection{Record: evidence.Record{UserID: userID, ConversationID: conversationID, PrefixDigest: checkpoint.ChainStart()},
		RequestIndex: -1, MaxTokens: s.fold.MaxTokens}
	limit = max(limit, 1)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		_, count, found, err := scanConversation(tx.QueryRow(ctx, conversationRow, userID, conversationID), &in.Record)
		if err != nil || !found {
			return err
		}
		in.ArchiveCount = count
		pos := evidence.ArchivePosition{Index: -1, SpanStart: -1}
		if after != nil {
			pos = *after
		}
		lists, err := scanItems(ctx, tx, `SELECT `+itemColumns+`, 0 FROM recall_archive
WHERE user_id = $1 AND conversation_id = $2 AND (idx, span_start) > ($3, $4)
ORDER BY idx, span_start LIMIT $5`, userID, conversationID, pos.Index, pos.SpanStart, limit+1)
		if err != nil {
			return err
		}
		page := lists[0]
		if len(page) > limit {
			page = page[:limit]
			last := page[limit-1]
			in.Next = &evidence.ArchivePosition{Index: last.Index, SpanStart: last.Span[0]}
		}
		x, err := s.explain(ctx, tx, &in, count)
		if err != nil {
			return err
		}
		if after == nil {
			var view []evidence.Shown
			if x != nil {
				view = x.View.Shown
			}
			if in.Lane, err = inspectLane(ctx, tx, userID, conversationID, view); err != nil {
				return err
			}
		}
		in.Entries = make([]evidence.InspectedEntry, len(page))
		for i := range page {
			in.Entries[i] = evidence.InspectedEntry{Item: page[i], Decision: evidence.Decision{Why: evidence.WhyNotCandidate}}
			if x != nil {
				in.Entries[i].Decision = x.Decision(&page[i])
			}
		}
		return nil
	})
	if err != nil {
		return evidence.Inspection{}, err
	}
	return in, nil
}

// explain chooses the view of in's conversation again, as extraction did:
// for the held request at the cursor (the message extraction summarised up
// to), from the candidates of the archive of count items. It returns nil
// when the conversation has no view.
func (s *Store) explain(ctx context.Context, tx pgx.Tx, in *evidence.Inspection, count int) (*evidence.Explanation, error) {
	rec := &in.Record
	if rec.View == nil { // no focus view
		return nil, nil
	}
	var role string
	var evidential bool
	var id, text []byte
	var notes int
	err := tx.QueryRow(ctx, `SELECT m.role, m.evidential, m.message_id, m.text, c.notes_count
FROM recall_message m JOIN recall_conversation c USING (user_id, conversation_id)
WHERE m.user_id = $1 AND m.conversation_id = $2 AND m.idx = $3`, rec.UserID, rec.ConversationID, rec.Cursor).
		Scan(&role, &evidential, &id, &text, &notes)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the held request: %w", err)
	}
	request := heldMessage(checkpoint.Role(role), evidential, string(id), string(text))
	c, q, err := candidates(ctx, tx, rec, evidence.RequestText(&request), count, notes)
	if err != nil {
		return nil, err
	}
	x := evidence.ExplainView(c, q, s.fold.MaxTokens)
	in.RequestIndex, in.RoomLeft = rec.Cursor, x.RoomLeft
	stored, err := encodeView(x.View.Shown)
	if err != nil {
		return nil, err
	}
	in.Matches = string(stored) == string(rec.View)
	return x, nil
}
