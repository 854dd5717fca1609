package store

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/recallhq/recall/evidence"
)

// ReplicaReader reads evidence from a streaming read replica (a hot
// standby) and everything else from the primary. A replica replays the
// primary's changes with a lag, so a read that must not be older than what
// a client has seen (EvidenceAtLeast, SearchAtLeast) goes to the primary
// when the replica's copy is older; a read the replica cannot answer (it is
// down, or cancels the query for a conflict with replay) goes to the
// primary too. Deletes always go to the primary. A waiter is woken once
// the change has committed on the primary, and the reads a wake-up causes
// carry the waiter's floor, so they find the change on the primary when the
// replica has not replayed it yet.
type ReplicaReader struct {
	primary, replica *Store
	logger           *slog.Logger

	replicaReads  atomic.Int64
	primaryReads  atomic.Int64
	fallbackWarns atomic.Int64
}

// NewReplicaReader returns a reader over the primary's store and the
// replica's. logger may be nil.
func NewReplicaReader(primary, replica *Store, logger *slog.Logger) (*ReplicaReader, error) {
	if primary == nil || replica == nil {
		return nil, errors.New("store: a ReplicaReader needs the primary's store and the replica's")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ReplicaReader{primary: primary, replica: replica, logger: logger}, nil
}

// ReadCounts returns how many reads the replica and the primary answered.
func (r *ReplicaReader) ReadCounts() (replica, primary int64) {
	return r.replicaReads.Load(), r.primaryReads.Load()
}

// Evidence reads the replica (the primary when the replica fails).
func (r *ReplicaReader) Evidence(ctx context.Context, userID, conversationID string) (evidence.Record, error) {
	return r.EvidenceAtLeast(ctx, userID, conversationID, 0, 0)
}

// EvidenceAtLeast reads the replica and, when its record's cursor is below
// minCursor or its version below minVersion, the primary.
func (r *ReplicaReader) EvidenceAtLeast(ctx context.Context, userID, conversationID string, minCursor int, minVersion int64) (evidence.Record, error) {
	rec, err := r.replica.Evidence(ctx, userID, conversationID)
	if err == nil && rec.Cursor >= minCursor && rec.Version >= minVersion {
		r.replicaReads.Add(1)
		return rec, nil
	}
	r.fellBack(ctx, err)
	r.primaryReads.Add(1)
	return r.primary.Evidence(ctx, userID, conversationID)
}

// Search is the replica's Search (the primary's when the replica fails).
func (r *ReplicaReader) Search(ctx context.Context, userID, conversationID, query string) (evidence.Record, error) {
	return r.SearchAtLeast(ctx, userID, conversationID, query, 0)
}

// SearchAtLeast is Search from the primary when the replica's record is
// older than minVersion.
func (r *ReplicaReader) SearchAtLeast(ctx context.Context, userID, conversationID, query string, minVersion int64) (evidence.Record, error) {
	rec, err := r.replica.Search(ctx, userID, conversationID, query)
	if err == nil && rec.Version >= minVersion {
		r.replicaReads.Add(1)
		return rec, nil
	}
	r.fellBack(ctx, err)
	r.primaryReads.Add(1)
	return r.primary.Search(ctx, userID, conversationID, query)
}

// SearchBefore is the replica's SearchBefore (the primary's when the
// replica fails).
func (r *ReplicaReader) SearchBefore(ctx context.Context, userID, conversationID, query string, before int) (evidence.Record, error) {
	rec, err := r.replica.SearchBefore(ctx, userID, conversationID, query, before)
	if err == nil {
		r.replicaReads.Add(1)
		return rec, nil
	}
	r.fellBack(ctx, err)
	r.primaryReads.Add(1)
	return r.primary.SearchBefore(ctx, userID, conversationID, query, before)
}

// DeleteConversation deletes on the primary.
func (r *ReplicaReader) DeleteConversation(ctx context.Context, userID, conversationID string) error {
	return r.primary.DeleteConversation(ctx, userID, conversationID)
}

// fellBack logs a replica read that failed (not one that was merely
// behind), the first and then every thousandth.
func (r *ReplicaReader) fellBack(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	if n := r.fallbackWarns.Add(1); n == 1 || n%1000 == 0 {
		r.logger.WarnContext(ctx, "read replica failed; read the primary instead", slog.Int64("failures", n), slog.String("error", err.Error()))
	}
}
