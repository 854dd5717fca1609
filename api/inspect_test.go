package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/testutil/proctest"
)

// inspectedText is in the fake inspection's archive only.
const inspectedText = "We must never deploy on Fridays."

// fakeInspector answers one inspection for every conversation and records
// the page asked for.
type fakeInspector struct {
	after *evidence.ArchivePosition
	limit int
}

func (f *fakeInspector) Inspect(_ context.Context, userID, conversationID string, after *evidence.ArchivePosition, limit int) (evidence.Inspection, error) {
	f.after, f.limit = after, limit
	item := evidence.Item{Entry: evidence.Entry{Role: checkpoint.RoleUser, MessageID: "m0", Excerpt: inspectedText, Span: evidence.Span{0, 32}},
		Bucket: evidence.Constraints, Tier: evidence.TierUserKey, Weight: 700}
	newer := item
	newer.Index, newer.MessageID, newer.Excerpt = 4, "m4", "Correction: we deploy on Thursdays instead."
	return evidence.Inspection{
		Record:       evidence.Record{UserID: userID, ConversationID: conversationID, Version: 3, Cursor: 6, MessageCount: 7, UpdatedAt: updatedAt},
		ArchiveCount: 9,
		Entries: []evidence.InspectedEntry{
			{Item: item, Decision: evidence.Decision{Why: evidence.WhySuperseded, Classes: []string{"user"},
				SupersededBy: &evidence.EntryRef{Index: 4, MessageID: "m4"}}},
			{Item: newer, Decision: evidence.Decision{Why: evidence.WhyShown, As: "user", Classes: []string{"user"}}},
		},
		Next:         &evidence.ArchivePosition{Index: 4, SpanStart: 0},
		RequestIndex: 6, MaxTokens: 1800, RoomLeft: 100, Matches: true,
		Lane: evidence.LaneInspection{NoteCount: 3, Answered: 4,
			Notes: []evidence.InspectedNote{{Note: evidence.Note{Bucket: evidence.Decisions, Role: checkpoint.RoleUser, MessageID: "m4", Index: 4,
				Text: "Deploys move to Thursdays."}, Shown: true}},
			Calls: []evidence.ModelCall{{Lo: 4, Hi: 6, Attempt: 2, Outcome: "timeout", TokensIn: 812, Seconds: 60, At: updatedAt},
				{Lo: 4, Hi: 6, Attempt: 1, Outcome: "rate_limited", At: updatedAt}}},
	}, nil
}

type inspectBundle struct {
	h         *api.Handler
	inspector *fakeInspector
	logs      *proctest.Buffer
}

func setupInspector(t *testing.T) *inspectBundle {
	t.Helper()
	users := newFakeUsers()
	fillUsers(t, users)
	src := newFakeSource()
	logs := &proctest.Buffer{}
	in := &fakeInspector{}
	h, err := api.New(src, &api.Config{JWTSecret: secret, Notifier: src, Users: users, Inspector: in,
		Rejections: &fakeRejections{rows: []api.Rejection{{ID: 7, Reason: "gap", Detail: "messages before offset 4 never arrived",
			EventID: "e7", UserID: "u-42", ConversationID: "c-1", ReceivedAt: updatedAt}}},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &inspectBundle{h: h, inspector: in, logs: logs}
}

const (
	inspectConversations = "/inspect/api/users/u-42/conversations"
	inspectConversation  = "/inspect/api/users/u-42/conversations/c-1"
)

// TestInspectorAuth checks that the inspector's data routes answer only a
// token with the service scope: 401 without a token, 403 and no data for a
// user's token, even for the user's own conversations.
func TestInspectorAuth(t *testing.T) {
	t.Parallel()
	b := setupInspector(t)
	for _, route := range []struct{ method, path string }{
		{"GET", inspectConversations},
		{"GET", inspectConversation},
		{"POST", inspectConversation + "/search"},
	} {
		for _, tt := range []struct {
			name       string
			token      string
			wantStatus int
		}{
			{"no token", "", http.StatusUnauthorized},
			{"bad token", "not-a-jwt", http.StatusUnauthorized},
			{"the user's own token", userToken(t, "u-42"), http.StatusForbidden},
			{"service token", serviceToken(t), http.StatusOK},
		} {
			r := httptest.NewRequest(route.method, route.path, strings.NewReader(`{"query":"deploy"}`))
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			w := httptest.NewRecorder()
			b.h.ServeHTTP(w, r)
			if w.Code != tt.wantStatus {
				t.Errorf("%s %s with %s: %d, want %d: %s", route.method, route.path, tt.name, w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantStatus != http.StatusOK {
				if code, _ := errorOf(t, w); code != map[int]string{401: api.CodeUnauthorized, 403: api.CodeForbidden}[tt.wantStatus] {
					t.Errorf("%s %s with %s: code %s", route.method, route.path, tt.name, code)
				}
				if strings.Contains(w.Body.String(), inspectedText) || strings.Contains(w.Body.String(), "c-1") {
					t.Errorf("%s %s with %s answered data: %s", route.method, route.path, tt.name, w.Body)
				}
			}
			if got := w.Header().Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") {
				t.Errorf("%s %s with %s: Content-Security-Policy %q", route.method, route.path, tt.name, got)
			}
		}
	}
}

// TestInspectConversation checks the conversation route's answer: the
// state, the stored message, the page of entries with their decisions,
// the next page's position and the rejections, and its paging parameters.
func TestInspectConversation(t *testing.T) {
	t.Parallel()
	b := setupInspector(t)
	w := do(t, b.h, "GET", inspectConversation+"?after=3:17&limit=2", serviceToken(t))
	if w.Code != http.StatusOK {
		t.Fatalf("%d: %s", w.Code, w.Body)
	}
	if diff := cmp.Diff(&evidence.ArchivePosition{Index: 3, SpanStart: 17}, b.inspector.after); diff != "" || b.inspector.limit != 2 {
		t.Errorf("asked for the page after %v, limit %d; want 3:17, 2", b.inspector.after, b.inspector.limit)
	}
	var body struct {
		ConversationID string `json:"conversation_id"`
		Version        int64  `json:"version"`
		ArchiveCount   int    `json:"archive_count"`
		Entries        []struct {
			Excerpt  string            `json:"excerpt"`
			Bucket   string            `json:"bucket"`
			Tier     string            `json:"tier"`
			Decision evidence.Decision `json:"decision"`
		} `json:"entries"`
		Next       *string          `json:"next"`
		Rejections []map[string]any `json:"rejections"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.ConversationID != "c-1" || body.Version != 3 || body.ArchiveCount != 9 || body.Next == nil || *body.Next != "4:0" {
		t.Errorf("state: %s", w.Body)
	}
	if len(body.Entries) != 2 || body.Entries[0].Bucket != "constraints" || body.Entries[0].Tier != "user_key" ||
		body.Entries[0].Decision.Why != evidence.WhySuperseded || body.Entries[0].Decision.SupersededBy.MessageID != "m4" {
		t.Errorf("entries: %s", w.Body)
	}
	// The rejections come with the first page only.
	if len(body.Rejections) != 0 {
		t.Errorf("a later page lists rejections: %s", w.Body)
	}
	w = do(t, b.h, "GET", inspectConversation, serviceToken(t))
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Rejections) != 1 || body.Rejections[0]["reason"] != "gap" || body.Rejections[0]["payload"] != nil {
		t.Errorf("rejections: %s", w.Body)
	}
	// The model lane's notes and calls: outcomes and counts, no prompt.
	var lane struct {
		Notes []struct {
			Index  int    `json:"index"`
			Bucket string `json:"bucket"`
			Text   string `json:"text"`
			Shown  bool   `json:"shown"`
		} `json:"notes"`
		NoteCount  int                  `json:"note_count"`
		Answered   int                  `json:"model_calls_answered"`
		ModelCalls []evidence.ModelCall `json:"model_calls"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &lane); err != nil {
		t.Fatal(err)
	}
	if lane.NoteCount != 3 || lane.Answered != 4 || len(lane.Notes) != 1 || lane.Notes[0].Bucket != "decisions" || !lane.Notes[0].Shown ||
		len(lane.ModelCalls) != 2 || lane.ModelCalls[1].Outcome != "rate_limited" || lane.ModelCalls[0].TokensIn != 812 {
		t.Errorf("the lane: %s", w.Body)
	}
	for _, bad := range []string{"?after=3", "?after=x:1", "?after=-1:0", "?limit=0", "?limit=5001"} {
		if w := do(t, b.h, "GET", inspectConversation+bad, serviceToken(t)); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, w.Code)
		}
	}
	if logs := b.logs.String(); strings.Contains(logs, inspectedText) || strings.Contains(logs, "c-1") {
		t.Errorf("the logs name a conversation or its text: %s", logs)
	}
}

// TestInspectorPage checks that the page and its assets are served with the
// security headers, and that the page runs no inline script or style and
// writes no data as HTML.
func TestInspectorPage(t *testing.T) {
	t.Parallel()
	b := setupInspector(t)
	for _, tt := range []struct{ path, wantType, wantBody string }{
		{"/inspect/", "text/html", `<script src="app.js" defer></script>`},
		{"/inspect/app.js", "javascript", "textContent"},
		{"/inspect/style.css", "text/css", "body"},
	} {
		w := do(t, b.h, "GET", tt.path, "")
		if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), tt.wantType) || !strings.Contains(w.Body.String(), tt.wantBody) {
			t.Errorf("GET %s: %d %s", tt.path, w.Code, w.Header().Get("Content-Type"))
		}
		h := w.Header()
		if h.Get("Content-Security-Policy") != "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "+
			"frame-ancestors 'none'; base-uri 'none'; form-action 'self'" || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", tt.path, h)
		}
	}
	if w := do(t, b.h, "GET", "/inspect", ""); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/inspect/" {
		t.Errorf("GET /inspect: %d to %q", w.Code, w.Header().Get("Location"))
	}

	html := read(t, "inspector/index.html")
	for _, m := range regexp.MustCompile(`<script[^>]*>(.?)`).FindAllStringSubmatch(html, -1) {
		if !strings.Contains(m[0], ` src="`) || m[1] != "<" {
			t.Errorf("index.html has an inline script: %q", m[0])
		}
	}
	for _, re := range []string{`\son[a-z]+\s*=`, `\sstyle\s*=`, `<style`, `https?://`} {
		if m := regexp.MustCompile(re).FindString(html); m != "" {
			t.Errorf("index.html has %q", m)
		}
	}
	js := read(t, "inspector/app.js")
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "http://", "https://"} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
}

func read(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
