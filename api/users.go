package api

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// UserSource lists, exports and deletes all of a user's conversations, for
// the user routes.
type UserSource interface {
	// UserConversations returns up to limit of the user's conversations
	// that hold state (not deleted, with a history or evidence), ordered by
	// conversation id, starting after the id after ("" for the first).
	UserConversations(ctx context.Context, userID, after string, limit int) ([]ConversationSummary, error)
	// UserRecords yields the stored evidence of each of the user's
	// conversations that hold state, ordered by conversation id.
	UserRecords(ctx context.Context, userID string) iter.Seq2[evidence.Record, error]
	// UserEntries yields every archive entry of the user's conversations,
	// ordered by conversation id and then by their place in the history.
	UserEntries(ctx context.Context, userID string) iter.Seq2[ExportEntry, error]
	// UserRejections yields the recorded rejections of the user's events,
	// never with their payloads.
	UserRejections(ctx context.Context, userID string) iter.Seq2[Rejection, error]
	// DeleteUser deletes every conversation of the user as
	// Source.DeleteConversation does, each key staying deleted. It is
	// idempotent.
	DeleteUser(ctx context.Context, userID string) error
}

// The sequences of a UserSource read their rows in bounded pages and stop
// after yielding an error; a handler that stops ranging over them ends
// their reads.

// ConversationSummary is one conversation of a user's listing.
type ConversationSummary struct {
	ConversationID string    `json:"conversation_id"`
	Version        int64     `json:"version"`
	Cursor         int       `json:"cursor"`
	MessageCount   int       `json:"message_count"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// UserNoteSource is a UserSource that also holds the model lane's notes
// (RECALL_EXTRACTOR=model): an export lists them after the archive's
// entries.
type UserNoteSource interface {
	// UserNotes yields every note of the user's conversations, ordered by
	// conversation id and then by their source's place in the history.
	UserNotes(ctx context.Context, userID string) iter.Seq2[ExportNote, error]
}

// ExportNote is one model note of a user's conversation.
type ExportNote struct {
	ConversationID string
	Note           evidence.Note
}

// ExportEntry is one archive entry of a user's conversation.
type ExportEntry struct {
	ConversationID string
	Bucket         evidence.Bucket
	Entry          evidence.Entry
}

// Route patterns of the user routes.
const (
	routeUserConversations = "GET /v1/users/{user_id}/conversations"
	routeUserExport        = "GET /v1/users/{user_id}/export"
	routeUserDelete        = "DELETE /v1/users/{user_id}"
)

// Listing bounds of GET …/conversations.
const (
	defaultConversationLimit = 100
	maxConversationLimit     = 1000
)

// Export and deletion write deadlines. Each flush of an export gives the
// connection exportWriteTimeout more, so that an export of any size
// streams while the client keeps reading; a user's deletion, one
// transaction per conversation, may take longer than a read.
const (
	exportWriteTimeout = time.Minute
	deleteWriteTimeout = 10 * time.Minute
)

// exportFlushBytes is how many bytes of lines an export gathers before it
// writes and flushes them.
const exportFlushBytes = 32 << 10

var errNoUsers = newError(http.StatusServiceUnavailable, CodeUnavailable, "this process does not serve the user routes")

// registerUserRoutes adds the user routes to the mux.
func (h *Handler) registerUserRoutes() {
	h.mux.HandleFunc(routeUserConversations, h.handle(h.listConversations))
	h.mux.HandleFunc(routeUserExport, h.handle(h.exportUser))
	h.mux.HandleFunc(routeUserDelete, h.handle(h.deleteUser))
}

// user authorises the request and returns the user it names. Auth comes
// first: a client learns nothing about ids it may not use.
func (h *Handler) user(r *http.Request) (string, error) {
	p, err := h.authenticate(r)
	if err != nil {
		return "", err
	}
	userID := r.PathValue("user_id")
	if err := authorize(p, userID); err != nil {
		return "", err
	}
	return userID, nil
}

// authorize answers 403 unless c may act for userID, then 400 for a user
// id that cannot be one. Auth comes first: a caller learns nothing about
// ids it may not use.
func authorize(c Caller, userID string) error {
	if !c.MayActFor(userID) {
		return newError(http.StatusForbidden, CodeForbidden,
			"the token may act only for the user named by its sub claim (or needs the "+ServiceScope+" scope)")
	}
	if err := checkpoint.ValidateKey("user_id", userID); err != nil {
		return newError(http.StatusBadRequest, CodeInvalidID, err.Error())
	}
	return nil
}

// ConversationPage is a page of a user's conversations: those that hold
// state, ordered by conversation id, and the id to ask for the next page
// after (nil on the last page).
type ConversationPage struct {
	Conversations []ConversationSummary `json:"conversations"`
	Next          *string               `json:"next"`
}

// errInvalidLimit answers a listing's limit out of range.
var errInvalidLimit = newError(http.StatusBadRequest, CodeInvalidLimit, "limit must be an integer from 1 to "+strconv.Itoa(maxConversationLimit))

// listConversations answers GET /v1/users/{user_id}/conversations: a page
// of the user's conversations that hold state, ordered by conversation id,
// and the id to ask for the next page after (null on the last page).
func (h *Handler) listConversations(w http.ResponseWriter, r *http.Request) error {
	userID, err := h.user(r)
	if err != nil {
		return err
	}
	if h.users == nil {
		return errNoUsers
	}
	q := r.URL.Query()
	limit := defaultConversationLimit
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil {
			return errInvalidLimit
		}
		limit = n
	}
	page, err := h.conversationPage(r.Context(), userID, q.Get("after"), limit)
	if err != nil {
		return err
	}
	b, err := json.Marshal(page)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, append(b, '\n'))
	return nil
}

// conversationPage checks a listing's after ("" for the first page) and
// limit, and reads the page.
func (h *Handler) conversationPage(ctx context.Context, userID, after string, limit int) (ConversationPage, error) {
	if limit <= 0 || limit > maxConversationLimit {
		return ConversationPage{}, errInvalidLimit
	}
	if after != "" {
		if err := checkpoint.ValidateKey("after", after); err != nil {
			return ConversationPage{}, newError(http.StatusBadRequest, CodeInvalidAfter, err.Error()+"; after is the next of the previous page, a conversation_id")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, h.waiters.readTimeout)
	defer cancel()
	// One more than asked for tells whether there is a next page.
	rows, err := h.users.UserConversations(ctx, userID, after, limit+1)
	if err != nil {
		return ConversationPage{}, err
	}
	var next *string
	if len(rows) > limit {
		rows = rows[:limit]
		next = &rows[limit-1].ConversationID
	}
	out := make([]ConversationSummary, len(rows))
	for i, c := range rows {
		c.UpdatedAt = c.UpdatedAt.UTC()
		out[i] = c
	}
	return ConversationPage{Conversations: out, Next: next}, nil
}

// deleteUser answers DELETE /v1/users/{user_id}: 204 once every
// conversation of the user is deleted.
func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request) error {
	userID, err := h.user(r)
	if err != nil {
		return err
	}
	if h.users == nil {
		return errNoUsers
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(deleteWriteTimeout))
	if err := h.users.DeleteUser(r.Context(), userID); err != nil {
		return err
	}
	// The waiters of this process read again; those of others find out at
	// their next poll.
	h.waiters.deleted(userID, "")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// exportUser answers GET /v1/users/{user_id}/export: everything recall
// holds for the user, as JSON lines, read page by page and written as it
// is read, so that its memory is bounded however much there is. The last
// line is {"type":"end",…}; a stream without it was cut short (an error
// after the first lines were sent cannot change the status).
func (h *Handler) exportUser(w http.ResponseWriter, r *http.Request) error {
	userID, err := h.user(r)
	if err != nil {
		return err
	}
	if h.users == nil {
		return errNoUsers
	}
	ctx := r.Context()
	x := &exportWriter{w: w, rc: http.NewResponseController(w)}
	var end exportEnd
	for rec, err := range h.users.UserRecords(ctx, userID) {
		if err != nil {
			return x.fail(h, r, err)
		}
		line, err := conversationLine(&rec)
		if err != nil {
			return x.fail(h, r, err)
		}
		if err := x.line(line); err != nil {
			return x.fail(h, r, err)
		}
		end.Conversations++
	}
	for e, err := range h.users.UserEntries(ctx, userID) {
		if err != nil {
			return x.fail(h, r, err)
		}
		if err := x.line(exportEntryLine{
			Type: "entry", ConversationID: e.ConversationID, Bucket: e.Bucket.String(), Role: string(e.Entry.Role),
			MessageID: e.Entry.MessageID, Index: e.Entry.Index, Span: e.Entry.Span, Excerpt: e.Entry.Excerpt, Truncated: e.Entry.Truncated,
		}); err != nil {
			return x.fail(h, r, err)
		}
		end.Entries++
	}
	if ns, ok := h.users.(UserNoteSource); ok {
		for n, err := range ns.UserNotes(ctx, userID) {
			if err != nil {
				return x.fail(h, r, err)
			}
			if err := x.line(exportNoteLine{
				Type: "note", ConversationID: n.ConversationID, Bucket: n.Note.Bucket.String(), Role: string(n.Note.Role),
				MessageID: n.Note.MessageID, Index: n.Note.Index, Text: n.Note.Text, Truncated: n.Note.Truncated,
			}); err != nil {
				return x.fail(h, r, err)
			}
			end.Notes++
		}
	}
	for rj, err := range h.users.UserRejections(ctx, userID) {
		if err != nil {
			return x.fail(h, r, err)
		}
		if err := x.line(exportRejectionLine{
			Type: "rejection", EventID: rj.EventID, ConversationID: rj.ConversationID, Reason: rj.Reason, ReceivedAt: rj.ReceivedAt.UTC(),
		}); err != nil {
			return x.fail(h, r, err)
		}
		end.Rejections++
	}
	end.Type = "end"
	if err := x.line(end); err != nil {
		return x.fail(h, r, err)
	}
	if err := x.flush(); err != nil {
		return x.fail(h, r, err)
	}
	return nil
}

// The lines of an export.
type (
	exportConversationLine struct {
		Type           string          `json:"type"`
		ConversationID string          `json:"conversation_id"`
		Version        int64           `json:"version"`
		Cursor         int             `json:"cursor"`
		MessageCount   int             `json:"message_count"`
		PrefixDigest   string          `json:"prefix_digest"`
		OmittedEntries int             `json:"omitted_entries"`
		Buckets        json.RawMessage `json:"buckets"`
		UpdatedAt      *time.Time      `json:"updated_at"`
	}
	exportEntryLine struct {
		Type           string        `json:"type"`
		ConversationID string        `json:"conversation_id"`
		Bucket         string        `json:"bucket"`
		Role           string        `json:"role"`
		MessageID      string        `json:"message_id"`
		Index          int           `json:"index"`
		Span           evidence.Span `json:"span"`
		Excerpt        string        `json:"excerpt"`
		Truncated      bool          `json:"truncated"`
	}
	// exportNoteLine is a model note (the model lane's): text a model
	// wrote from the message at index.
	exportNoteLine struct {
		Type           string `json:"type"`
		ConversationID string `json:"conversation_id"`
		Bucket         string `json:"bucket"`
		Role           string `json:"role"`
		MessageID      string `json:"message_id"`
		Index          int    `json:"index"`
		Text           string `json:"text"`
		Truncated      bool   `json:"truncated"`
	}
	exportRejectionLine struct {
		Type           string    `json:"type"`
		EventID        string    `json:"event_id"`
		ConversationID string    `json:"conversation_id"`
		Reason         string    `json:"reason"`
		ReceivedAt     time.Time `json:"received_at"`
	}
	exportEnd struct {
		Type          string `json:"type"`
		Conversations int    `json:"conversations"`
		Entries       int    `json:"entries"`
		Rejections    int    `json:"rejections"`
		// Notes counts the model lane's notes; left out when there are
		// none, so that an export without the lane is as it was.
		Notes int `json:"notes,omitempty"`
	}
)

// emptyBuckets are the buckets of a conversation with no evidence yet.
var emptyBuckets = json.RawMessage(`{"constraints":[],"decisions":[],"open_work":[],"recent_context":[]}`)

// conversationLine is rec's line of an export: the state and the buckets
// of its stored evidence.
func conversationLine(rec *evidence.Record) (*exportConversationLine, error) {
	prefix := rec.PrefixDigest
	if rec.Cursor == 0 {
		prefix = checkpoint.ChainStart()
	}
	line := &exportConversationLine{Type: "conversation", ConversationID: rec.ConversationID, Version: rec.Version,
		Cursor: rec.Cursor, MessageCount: rec.MessageCount, PrefixDigest: prefix.String(), Buckets: emptyBuckets}
	if !rec.UpdatedAt.IsZero() {
		t := rec.UpdatedAt.UTC()
		line.UpdatedAt = &t
	}
	if rec.Body != nil {
		// The stored body is the members "omitted_entries", …, "buckets",
		// "message" of the evidence response.
		var body struct {
			OmittedEntries int             `json:"omitted_entries"`
			Buckets        json.RawMessage `json:"buckets"`
		}
		raw := make([]byte, 0, len(rec.Body)+2)
		raw = append(append(append(raw, '{'), rec.Body...), '}')
		if err := json.Unmarshal(raw, &body); err != nil {
			// The cause is left out: a syntax error quotes the byte it met.
			return nil, errors.New("decode the stored evidence of a conversation")
		}
		line.OmittedEntries = body.OmittedEntries
		if body.Buckets != nil {
			line.Buckets = body.Buckets
		}
	}
	return line, nil
}

// exportWriter writes the lines of an export, a batch of about
// exportFlushBytes at a time, each batch flushed to the client at once.
type exportWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	buf  []byte
	sent bool  // the status and some lines are written
	err  error // the first write error: the client is gone
}

// line appends v as one line, and writes the batch when it is full.
func (x *exportWriter) line(v any) error {
	if x.err != nil {
		return x.err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	x.buf = append(append(x.buf, b...), '\n')
	if len(x.buf) >= exportFlushBytes {
		return x.flush()
	}
	return nil
}

// flush writes the gathered lines (the status and headers first, the
// first time) and flushes them to the client.
func (x *exportWriter) flush() error {
	if x.err != nil {
		return x.err
	}
	if !x.sent {
		h := x.w.Header()
		h.Set("Content-Type", "application/x-ndjson")
		h.Set("Cache-Control", "no-store")
		x.w.WriteHeader(http.StatusOK)
		x.sent = true
	}
	// Not every ResponseWriter has deadlines (ErrNotSupported): then the
	// server's own write timeout stands.
	_ = x.rc.SetWriteDeadline(time.Now().Add(exportWriteTimeout))
	if _, err := x.w.Write(x.buf); err != nil {
		x.err = err
		return err
	}
	x.buf = x.buf[:0]
	if err := x.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		x.err = err
		return err
	}
	return nil
}

// fail ends an export that failed with err. Before anything was sent, err
// is answered as usual. After, the status is sent and cannot change: the
// stream ends without its end line, which tells the client it was cut
// short, and the error is logged (never with ids or text).
func (x *exportWriter) fail(h *Handler, r *http.Request, err error) error {
	if !x.sent {
		return err
	}
	if x.err == nil && !errors.Is(err, context.Canceled) {
		h.logger.ErrorContext(r.Context(), "api: export cut short",
			slog.String("route", routeLabel(r)), slog.String("error", err.Error()))
	}
	return nil
}
