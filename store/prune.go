package store

import (
	"context"
	"fmt"
	"time"
)

// Prune removes what recall keeps only for a while: rejection rows older
// than olderThan, and tombstones of conversations deleted longer ago than
// that (a late event for such a key starts a new conversation). It removes
// at most limit rows of each and returns how many it removed; call it
// again while it returns a full batch. Rows locked by a running ingest are
// skipped.
func (s *Store) Prune(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
WITH r AS (
    DELETE FROM recall_rejection WHERE id IN (
        SELECT id FROM recall_rejection WHERE received_at < now() - $1::interval
        ORDER BY received_at LIMIT $2)
    RETURNING 1
), t AS (
    DELETE FROM recall_conversation c USING (
        SELECT user_id, conversation_id FROM recall_conversation
        WHERE deleted_at < now() - $1::interval
        ORDER BY deleted_at LIMIT $2
        FOR UPDATE SKIP LOCKED) old
    WHERE c.user_id = old.user_id AND c.conversation_id = old.conversation_id
    RETURNING 1
)
SELECT (SELECT count(*) FROM r) + (SELECT count(*) FROM t)`, olderThan, limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("prune rejections and tombstones: %w", err)
	}
	return n, nil
}
