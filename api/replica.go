package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/recallhq/recall/evidence"
)

// CodeInvalidMinVersion answers a min_version that is not a non-negative
// integer (400).
const CodeInvalidMinVersion = "invalid_min_version"

// FloorReader is implemented by a Source that reads from a copy of the
// database that may lag behind the primary, such as a streaming read
// replica. Its …AtLeast methods answer a record no older than the floor
// given (a cursor and a version the client has already seen): from the copy
// when it has reached the floor, else from the primary. A client that
// passes the last version it saw (min_version) so never sees version go
// backward, and a long-poll woken by a change committed on the primary reads
// that change even when the copy has not replayed it yet.
type FloorReader interface {
	EvidenceAtLeast(ctx context.Context, userID, conversationID string, minCursor int, minVersion int64) (evidence.Record, error)
	SearchAtLeast(ctx context.Context, userID, conversationID, query string, minVersion int64) (evidence.Record, error)
}

// floor is the oldest state a request accepts.
type floor struct {
	cursor  int
	version int64
}

func (f floor) zero() bool { return f.cursor <= 0 && f.version <= 0 }

// raise returns the newer of f and g, field by field.
func (f floor) raise(g floor) floor {
	return floor{cursor: max(f.cursor, g.cursor), version: max(f.version, g.version)}
}

// parseMinVersion reads the optional min_version query parameter.
func parseMinVersion(q url.Values) (int64, error) {
	if !q.Has("min_version") {
		return 0, nil
	}
	n, err := strconv.ParseInt(q.Get("min_version"), 10, 64)
	if err != nil || n < 0 {
		return 0, newError(http.StatusBadRequest, CodeInvalidMinVersion, "min_version must be a non-negative integer")
	}
	return n, nil
}

// readAtLeast reads a key with the read deadline, no older than f when the
// source reads from a copy that may lag.
func (ws *waiters) readAtLeast(ctx context.Context, userID, conversationID string, f floor) (evidence.Record, error) {
	fr, ok := ws.src.(FloorReader)
	if !ok || f.zero() {
		return ws.readOnce(ctx, userID, conversationID)
	}
	ctx, cancel := context.WithTimeout(ctx, ws.readTimeout)
	defer cancel()
	return fr.EvidenceAtLeast(ctx, userID, conversationID, f.cursor, f.version)
}

// searchAtLeast is search no older than minVersion.
func (ws *waiters) searchAtLeast(ctx context.Context, userID, conversationID, query string, minVersion int64) (evidence.Record, error) {
	fr, ok := ws.src.(FloorReader)
	if !ok || minVersion <= 0 {
		return ws.search(ctx, userID, conversationID, query)
	}
	ctx, cancel := context.WithTimeout(ctx, ws.readTimeout)
	defer cancel()
	return fr.SearchAtLeast(ctx, userID, conversationID, query, minVersion)
}
