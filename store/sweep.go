package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sweep enqueues a fresh extraction for conversations whose requested
// extraction has not started within olderThan: the job was lost with a
// killed worker (River retries it only much later) or waits behind a long
// queue. Rows locked by an ingest or by an extraction that has written
// (its archive rows hold a key share lock on the row) are skipped; a job
// still folding otherwise may get a second one, which waits for its
// extraction lock and then finds little or nothing to do. It returns how many it enqueued, at most limit.
func (s *Store) Sweep(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	if s.cfg.Jobs == nil {
		return 0, fmt.Errorf("store: Config.Jobs is required for Sweep: give it an insert-only River client")
	}
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
UPDATE recall_conversation c SET extract_requested_at = now()
FROM (
    SELECT user_id, conversation_id FROM recall_conversation
    WHERE extract_requested_at < now() - $1::interval AND deleted_at IS NULL
    ORDER BY extract_requested_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
) stale
WHERE c.user_id = stale.user_id AND c.conversation_id = stale.conversation_id
RETURNING c.user_id, c.conversation_id`, olderThan, limit)
		if err != nil {
			return err
		}
		type key struct{ user, conv string }
		keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (key, error) {
			var k key
			return k, r.Scan(&k.user, &k.conv)
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := s.enqueue(ctx, tx, k.user, k.conv); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep requested extractions: %w", err)
	}
	return n, nil
}
