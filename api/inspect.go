package api

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// The evidence inspector is a web page for operators (a token with the
// recall:service scope): a user's conversations, and for one conversation
// the message served for its last request, its archive with what the view
// did with each entry and why, the corrections, the rejections of its
// events, and a search. The page is static, embedded, and makes no request
// elsewhere; its data comes from the JSON routes below, which answer only a
// service token. Nothing of a conversation is logged.

// Inspector reads what the inspector shows of a conversation.
type Inspector interface {
	// Inspect returns the conversation's inspection with the page of up to
	// limit archive entries after the position after (nil for the first).
	// An unknown or deleted conversation is an inspection whose record has
	// only its key set.
	Inspect(ctx context.Context, userID, conversationID string, after *evidence.ArchivePosition, limit int) (evidence.Inspection, error)
}

// Routes of the inspector.
const (
	routeInspectPage          = "GET /inspect/"
	routeInspectRoot          = "GET /inspect"
	routeInspectConversations = "GET /inspect/api/users/{user_id}/conversations"
	routeInspectConversation  = "GET /inspect/api/users/{user_id}/conversations/{conversation_id}"
	routeInspectSearch        = "POST /inspect/api/users/{user_id}/conversations/{conversation_id}/search"
)

// Archive page bounds of the inspector.
const (
	defaultInspectLimit = 500
	maxInspectLimit     = 5000
)

// inspectorCSP allows the page its own scripts, styles and requests only,
// and no framing.
const inspectorCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

//go:embed inspector
var inspectorFiles embed.FS

// registerInspector adds the inspector's page and routes to the mux.
func (h *Handler) registerInspector() {
	files, _ := fs.Sub(inspectorFiles, "inspector")
	h.mux.Handle(routeInspectPage, inspectorHeaders(http.StripPrefix("/inspect/", http.FileServerFS(files))))
	h.mux.Handle(routeInspectRoot, inspectorHeaders(http.RedirectHandler("/inspect/", http.StatusMovedPermanently)))
	h.mux.Handle(routeInspectConversations, inspectorHeaders(h.handle(h.service(h.listConversations))))
	h.mux.Handle(routeInspectConversation, inspectorHeaders(h.handle(h.service(h.inspectConversation))))
	h.mux.Handle(routeInspectSearch, inspectorHeaders(h.handle(h.service(h.searchEvidence))))
}

// inspectorHeaders sets the inspector's security headers on every answer.
func inspectorHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", inspectorCSP)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// service serves fn only to a bearer token with the service scope: 401
// without one, 403 for another token, whoever it names.
func (h *Handler) service(fn func(w http.ResponseWriter, r *http.Request) error) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := h.authenticate(r)
		if err != nil {
			return err
		}
		if !p.Service {
			return newError(http.StatusForbidden, CodeForbidden, "the inspector needs a token with the "+ServiceScope+" scope")
		}
		return fn(w, r)
	}
}

var errNoInspector = newError(http.StatusServiceUnavailable, CodeUnavailable, "this process does not serve the inspector's data")

// The inspector's JSON.
type (
	inspectionBody struct {
		UserID         string                    `json:"user_id"`
		ConversationID string                    `json:"conversation_id"`
		Version        int64                     `json:"version"`
		Cursor         int                       `json:"cursor"`
		MessageCount   int                       `json:"message_count"`
		UpdatedAt      *time.Time                `json:"updated_at"`
		Message        *evidence.EvidenceMessage `json:"message"`
		ArchiveCount   int                       `json:"archive_count"`
		RequestIndex   int                       `json:"request_index"`
		MaxTokens      int                       `json:"max_tokens"`
		RoomLeft       int                       `json:"room_left"`
		MatchesStored  bool                      `json:"matches_stored"`
		Entries        []inspectedEntryBody      `json:"entries"`
		Next           *string                   `json:"next"`
		Rejections     []Rejection               `json:"rejections"`
		// The model lane's, on the first page: its newest notes, how many
		// there are, how many calls answered and the newest that failed
		// (outcomes and counts, no text).
		Notes         []inspectedNoteBody  `json:"notes"`
		NoteCount     int                  `json:"note_count"`
		ModelAnswered int                  `json:"model_calls_answered"`
		ModelCalls    []evidence.ModelCall `json:"model_calls"`
	}
	inspectedNoteBody struct {
		Index     int             `json:"index"`
		Role      checkpoint.Role `json:"role"`
		MessageID string          `json:"message_id"`
		Bucket    string          `json:"bucket"`
		Text      string          `json:"text"`
		Truncated bool            `json:"truncated"`
		Shown     bool            `json:"shown"`
	}
	inspectedEntryBody struct {
		Index     int               `json:"index"`
		Span      evidence.Span     `json:"span"`
		Role      checkpoint.Role   `json:"role"`
		MessageID string            `json:"message_id"`
		Excerpt   string            `json:"excerpt"`
		Truncated bool              `json:"truncated"`
		Bucket    string            `json:"bucket"`
		Tier      string            `json:"tier"`
		Weight    int               `json:"weight"`
		Decision  evidence.Decision `json:"decision"`
	}
)

// inspectConversation answers GET /inspect/api/users/{user_id}/conversations/{conversation_id}:
// the conversation's state, stored message, a page of its archive with
// each entry's decision (?after=INDEX:SPAN_START&limit=N), and its newest
// rejections.
func (h *Handler) inspectConversation(w http.ResponseWriter, r *http.Request) error {
	userID, conversationID, err := h.conversation(r)
	if err != nil {
		return err
	}
	if h.inspector == nil {
		return errNoInspector
	}
	q := r.URL.Query()
	limit := defaultInspectLimit
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n <= 0 || n > maxInspectLimit {
			return newError(http.StatusBadRequest, CodeInvalidLimit, "limit must be an integer from 1 to "+strconv.Itoa(maxInspectLimit))
		}
		limit = n
	}
	var after *evidence.ArchivePosition
	if s := q.Get("after"); s != "" {
		if after, err = parsePosition(s); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.waiters.readTimeout)
	defer cancel()
	in, err := h.inspector.Inspect(ctx, userID, conversationID, after, limit)
	if err != nil {
		return err
	}
	body := inspectionBody{UserID: userID, ConversationID: conversationID, Version: in.Record.Version, Cursor: in.Record.Cursor,
		MessageCount: in.Record.MessageCount, ArchiveCount: in.ArchiveCount, RequestIndex: in.RequestIndex,
		MaxTokens: in.MaxTokens, RoomLeft: in.RoomLeft, MatchesStored: in.Matches,
		Entries: make([]inspectedEntryBody, len(in.Entries)), Rejections: []Rejection{},
		Notes: make([]inspectedNoteBody, len(in.Lane.Notes)), NoteCount: in.Lane.NoteCount, ModelAnswered: in.Lane.Answered, ModelCalls: in.Lane.Calls}
	if body.ModelCalls == nil {
		body.ModelCalls = []evidence.ModelCall{}
	}
	for i, n := range in.Lane.Notes {
		body.Notes[i] = inspectedNoteBody{Index: n.Index, Role: n.Role, MessageID: n.MessageID, Bucket: n.Bucket.String(),
			Text: n.Text, Truncated: n.Truncated, Shown: n.Shown}
	}
	if !in.Record.UpdatedAt.IsZero() {
		t := in.Record.UpdatedAt.UTC()
		body.UpdatedAt = &t
	}
	if body.Message, err = in.Record.Message(); err != nil {
		return err
	}
	for i, e := range in.Entries {
		it := &e.Item
		body.Entries[i] = inspectedEntryBody{Index: it.Index, Span: it.Span, Role: it.Role, MessageID: it.MessageID,
			Excerpt: it.Excerpt, Truncated: it.Truncated, Bucket: it.Bucket.String(), Tier: evidence.TierName(it.Tier),
			Weight: it.Weight, Decision: e.Decision}
	}
	if in.Next != nil {
		s := strconv.Itoa(in.Next.Index) + ":" + strconv.Itoa(in.Next.SpanStart)
		body.Next = &s
	}
	if h.rejections != nil && after == nil {
		rows, err := h.rejections.ConversationRejections(ctx, userID, conversationID, "", defaultRejectionLimit)
		if err != nil {
			return err
		}
		if rows != nil {
			body.Rejections = rows
		}
	}
	b, err := json.Marshal(&body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, append(b, '\n'))
	return nil
}

// parsePosition reads an archive position INDEX:SPAN_START.
func parsePosition(s string) (*evidence.ArchivePosition, error) {
	bad := newError(http.StatusBadRequest, CodeInvalidAfter, "after must be INDEX:SPAN_START, the next of the previous page")
	i, j, ok := strings.Cut(s, ":")
	if !ok {
		return nil, bad
	}
	index, err1 := strconv.Atoi(i)
	start, err2 := strconv.Atoi(j)
	if err1 != nil || err2 != nil || index < 0 || start < 0 {
		return nil, bad
	}
	return &evidence.ArchivePosition{Index: index, SpanStart: start}, nil
}
