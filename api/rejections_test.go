package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/recallhq/recall/api"
)

// fakeRejections lists rows by key, filtered as the store filters them.
type fakeRejections struct {
	rows []api.Rejection
}

func (f *fakeRejections) ConversationRejections(_ context.Context, userID, conversationID, eventID string, limit int) ([]api.Rejection, error) {
	var out []api.Rejection
	for _, r := range f.rows {
		if r.UserID == userID && r.ConversationID == conversationID && (eventID == "" || r.EventID == eventID) && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func setupRejections(t *testing.T) *api.Handler {
	t.Helper()
	src := newFakeSource()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h, err := api.New(src, &api.Config{
		JWTSecret: secret, Notifier: src, Logger: slog.New(slog.DiscardHandler),
		Rejections: &fakeRejections{rows: []api.Rejection{
			{ID: 3, Reason: "deleted", Detail: "the conversation was deleted", EventID: "e3", UserID: "u-42", ConversationID: "c-7", ReceivedAt: at},
			{ID: 2, Reason: "gap", Detail: "messages before offset 4 never arrived within 10s", EventID: "e2", UserID: "u-42", ConversationID: "c-7", ReceivedAt: at},
			{ID: 1, Reason: "invalid", Detail: "x", EventID: "e1", UserID: "u-43", ConversationID: "c-7", ReceivedAt: at},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestRejections(t *testing.T) {
	t.Parallel()
	h := setupRejections(t)
	const path = "/v1/users/u-42/conversations/c-7/rejections"
	tests := []struct {
		name       string
		target     string
		token      string
		wantStatus int
		wantIDs    []string
	}{
		{"the owner's", path, userToken(t, "u-42"), 200, []string{"e3", "e2"}},
		{"one event", path + "?event_id=e2", userToken(t, "u-42"), 200, []string{"e2"}},
		{"limit", path + "?limit=1", serviceToken(t), 200, []string{"e3"}},
		{"none", "/v1/users/u-42/conversations/c-none/rejections", userToken(t, "u-42"), 200, []string{}},
		{"another user's", path, userToken(t, "u-43"), 403, nil},
		{"no token", path, "", 401, nil},
		{"bad limit", path + "?limit=0", userToken(t, "u-42"), 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := do(t, h, http.MethodGet, tt.target, tt.token)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body.String())
			}
			if tt.wantIDs == nil {
				errorOf(t, w)
				return
			}
			var body struct {
				Rejections []map[string]any `json:"rejections"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Rejections == nil {
				t.Fatalf("body %s: want {\"rejections\":[…]}", w.Body.String())
			}
			var ids []string
			for _, r := range body.Rejections {
				ids = append(ids, r["event_id"].(string))
				if _, ok := r["payload"]; ok {
					t.Errorf("a rejection carries its payload: %v", r)
				}
				if len(r) != 7 {
					t.Errorf("rejection %v: want id, reason, detail, event_id, user_id, conversation_id, received_at", r)
				}
			}
			if !slices.Equal(ids, tt.wantIDs) && len(ids)+len(tt.wantIDs) > 0 {
				t.Errorf("event ids %v, want %v", ids, tt.wantIDs)
			}
		})
	}
}

func TestRejectionsWithoutLister(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if w := do(t, b.h, http.MethodGet, "/v1/users/u-42/conversations/c-7/rejections", userToken(t, "u-42")); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", w.Code, w.Body.String())
	}
}
