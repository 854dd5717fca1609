package cli

import (
	"context"
	"iter"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/store"
)

// storeUsers serves the API's user routes (listing, export, deletion of all
// of a user's conversations) from the primary's store: an export reads what
// a deletion may have just removed, so it never reads a replica that lags.
type storeUsers struct{ st *store.Store }

func (s storeUsers) UserConversations(ctx context.Context, userID, after string, limit int) ([]api.ConversationSummary, error) {
	rows, err := s.st.UserConversations(ctx, userID, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]api.ConversationSummary, len(rows))
	for i, c := range rows {
		out[i] = api.ConversationSummary{ConversationID: c.ConversationID, Version: c.Version, Cursor: c.Cursor,
			MessageCount: c.MessageCount, UpdatedAt: c.UpdatedAt}
	}
	return out, nil
}

func (s storeUsers) UserRecords(ctx context.Context, userID string) iter.Seq2[evidence.Record, error] {
	return s.st.UserRecords(ctx, userID)
}

func (s storeUsers) UserEntries(ctx context.Context, userID string) iter.Seq2[api.ExportEntry, error] {
	return mapSeq2(s.st.UserArchive(ctx, userID), func(e store.ArchiveEntry) api.ExportEntry {
		return api.ExportEntry{ConversationID: e.ConversationID, Bucket: e.Bucket, Entry: e.Entry}
	})
}

func (s storeUsers) UserNotes(ctx context.Context, userID string) iter.Seq2[api.ExportNote, error] {
	return mapSeq2(s.st.UserNotes(ctx, userID), func(n store.UserNote) api.ExportNote {
		return api.ExportNote{ConversationID: n.ConversationID, Note: n.Note}
	})
}

func (s storeUsers) UserRejections(ctx context.Context, userID string) iter.Seq2[api.Rejection, error] {
	return mapSeq2(s.st.UserRejections(ctx, userID), func(r store.RecordedRejection) api.Rejection {
		return api.Rejection{ID: r.ID, Reason: r.Reason, Detail: r.Detail, EventID: r.EventID,
			UserID: r.UserID, ConversationID: r.ConversationID, ReceivedAt: r.ReceivedAt}
	})
}

func (s storeUsers) DeleteUser(ctx context.Context, userID string) error {
	_, err := s.st.DeleteUser(ctx, userID)
	return err
}

// mapSeq2 yields f of each value of seq, and its errors as they are.
func mapSeq2[T, U any](seq iter.Seq2[T, error], f func(T) U) iter.Seq2[U, error] {
	return func(yield func(U, error) bool) {
		for v, err := range seq {
			var u U
			if err == nil {
				u = f(v)
			}
			if !yield(u, err) {
				return
			}
		}
	}
}
