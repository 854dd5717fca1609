package cli

import (
	"context"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/store"
)

// storeInspector serves the evidence inspector from the primary's store,
// as the user routes are: an operator looking into a conversation sees
// what the worker last wrote, never a replica's older copy.
type storeInspector struct{ st *store.Store }

func (s storeInspector) Inspect(ctx context.Context, userID, conversationID string, after *api.ArchivePosition, limit int) (api.Inspection, error) {
	var pos *store.ArchivePosition
	if after != nil {
		pos = &store.ArchivePosition{Index: after.Index, SpanStart: after.SpanStart}
	}
	in, err := s.st.Inspect(ctx, userID, conversationID, pos, limit)
	if err != nil {
		return api.Inspection{}, err
	}
	out := api.Inspection{Record: in.Record, ArchiveCount: in.ArchiveCount, Entries: make([]api.InspectedEntry, len(in.Entries)),
		RequestIndex: in.RequestIndex, MaxTokens: in.MaxTokens, RoomLeft: in.RoomLeft, Matches: in.Matches}
	for i, e := range in.Entries {
		out.Entries[i] = api.InspectedEntry(e)
	}
	if in.Next != nil {
		out.Next = &api.ArchivePosition{Index: in.Next.Index, SpanStart: in.Next.SpanStart}
	}
	return out, nil
}
