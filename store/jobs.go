package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// ExtractQueue is the River queue extraction jobs run on.
const ExtractQueue = "recall_extract"

// ExtractArgs names the conversation to extract: the job that ingest and
// Sweep insert, and that the jobs package works. It carries the key only:
// the job reads the newest history recall holds, so one job serves every
// event committed before it takes the conversation's lock.
type ExtractArgs struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
}

// Kind implements river.JobArgs.
func (ExtractArgs) Kind() string { return "recall_extract" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (ExtractArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: ExtractQueue, MaxAttempts: 25}
}

// JobInserter inserts River jobs inside a transaction, one at a time or
// many in one statement (IngestBatch). A
// *river.Client[pgx.Tx] implements it; the store needs one that works no
// jobs (an insert-only client), so that it never depends on the package
// that runs them.
type JobInserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// enqueue inserts the extraction job of a conversation inside tx.
func (s *Store) enqueue(ctx context.Context, tx pgx.Tx, userID, conversationID string) error {
	_, err := s.cfg.Jobs.InsertTx(ctx, tx, ExtractArgs{UserID: userID, ConversationID: conversationID}, nil)
	return err
}
