package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/client"
	"github.com/recallhq/recall/examples"
	"github.com/recallhq/recall/publisher"
)

// testBundle is what a test works with: a fresh user and clients for it.
type testBundle struct {
	user    string
	client  *client.Client // acts for user
	service *client.Client // acts for any user
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	user := "user-" + randomHex()
	return &testBundle{
		user:    user,
		client:  newClient(t, token(user, false)),
		service: newClient(t, token("backend", true)),
	}
}

func newClient(t *testing.T, tok string) *client.Client {
	t.Helper()
	c, err := client.New(apiURL, tok)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// publish publishes the coding example as conv of b.user through POST
// /v1/checkpoints and waits (with Evidence's min_cursor and wait) until
// recall has folded it. It returns the evidence and the messages.
func (b *testBundle) publish(t *testing.T, conv string) (*client.Evidence, []json.RawMessage) {
	t.Helper()
	data, err := examples.Conversation("coding")
	if err != nil {
		t.Fatal(err)
	}
	var sample struct{ Messages []json.RawMessage }
	if err := json.Unmarshal(data, &sample); err != nil {
		t.Fatal(err)
	}
	ev, err := publisher.NewSnapshot(b.user, conv, sample.Messages)
	if err != nil {
		t.Fatal(err)
	}
	ev.EventID = "ev-" + randomHex()
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, apiURL+"/v1/checkpoints", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token(b.user, false))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/checkpoints: %s, want 202", resp.Status)
	}
	newest := 0
	for i, m := range sample.Messages {
		var r struct{ Role string }
		_ = json.Unmarshal(m, &r)
		if r.Role == "user" {
			newest = i
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := b.client.Evidence(t.Context(), b.user, conv, &client.EvidenceOptions{MinCursor: newest, Wait: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Lagging && got.Cursor >= newest {
			return got, sample.Messages
		}
		if time.Now().After(deadline) {
			t.Fatalf("evidence cursor %d, want %d within 30s: is the worker running?", got.Cursor, newest)
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url, token string
		wantErr          string // "" for none
	}{
		{"ok", "http://127.0.0.1:8080", "t", ""},
		{"prefix with slash", "https://example.com/recall/", "t", ""},
		{"no scheme", "127.0.0.1:8080", "t", "must start with http:// or https://"},
		{"other scheme", "ftp://example.com", "t", "must start with http:// or https://"},
		{"no host", "http://", "t", "has no host"},
		{"not a URL", "http://[::1", "t", "is not a URL"},
		{"query", "http://example.com/?a=b", "t", "must not have a query"},
		{"credentials", "http://u:p@example.com", "t", "must not hold credentials"},
		{"no token", "http://example.com", "", "the token is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.New(tt.url, tt.token)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New(%q) = %v, want no error", tt.url, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New(%q) = %v, want an error containing %q", tt.url, err, tt.wantErr)
			}
		})
	}
	if _, err := client.New("http://example.com", "t", client.WithHTTPClient(nil)); err == nil {
		t.Fatal("New with WithHTTPClient(nil) succeeded, want an error")
	}
}

func TestEvidenceUnknownConversation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Ids that need escaping in a path.
	conv := "a/b c?d#e%f"
	ev, err := b.client.Evidence(t.Context(), b.user, conv, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &client.Evidence{UserID: b.user, ConversationID: conv, PrefixDigest: ev.PrefixDigest,
		Buckets: client.Buckets{Constraints: []client.Entry{}, Decisions: []client.Entry{}, OpenWork: []client.Entry{}, RecentContext: []client.Entry{}}}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Fatalf("evidence of an unknown conversation (-want +got):\n%s", diff)
	}
	if len(ev.PrefixDigest) != 64 {
		t.Fatalf("prefix_digest %q, want 64 hex characters", ev.PrefixDigest)
	}
}

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name       string
		token      string
		wantStatus int
		wantCode   string
	}{
		{"bad signature", token(b.user, false) + "x", http.StatusUnauthorized, "unauthorized"},
		{"not a JWT", "nonsense", http.StatusUnauthorized, "unauthorized"},
		{"another user", token("someone-else", false), http.StatusForbidden, "forbidden"},
	}
	calls := []struct {
		name string
		call func(c *client.Client) error
	}{
		{"Evidence", func(c *client.Client) error { _, err := c.Evidence(t.Context(), b.user, "c", nil); return err }},
		{"Search", func(c *client.Client) error { _, err := c.Search(t.Context(), b.user, "c", "q", 0); return err }},
		{"ListConversations", func(c *client.Client) error { _, err := c.ListConversations(t.Context(), b.user, nil); return err }},
		{"DeleteUser", func(c *client.Client) error { return c.DeleteUser(t.Context(), b.user) }},
		{"Export", func(c *client.Client) error {
			for _, err := range c.Export(t.Context(), b.user) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, tt := range tests {
		for _, call := range calls {
			t.Run(tt.name+"/"+call.name, func(t *testing.T) {
				err := call.call(newClient(t, tt.token))
				apiErr, ok := errors.AsType[*client.APIError](err)
				if !ok {
					t.Fatalf("err = %v, want *client.APIError", err)
				}
				if apiErr.Status != tt.wantStatus || apiErr.Code != tt.wantCode || apiErr.Message == "" {
					t.Fatalf("err = %+v, want status %d, code %q and a message", apiErr, tt.wantStatus, tt.wantCode)
				}
			})
		}
	}
}

func TestPublishedConversation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev, history := b.publish(t, "conv-1")
	if ev.Version < 1 || ev.Message == nil || ev.Message.Role != "assistant" || ev.UpdatedAt.IsZero() {
		t.Fatalf("evidence after a publish: version %d, message %v, updated_at %v; want a version, an assistant message and a time",
			ev.Version, ev.Message, ev.UpdatedAt)
	}
	entries := len(ev.Buckets.Constraints) + len(ev.Buckets.Decisions) + len(ev.Buckets.OpenWork) + len(ev.Buckets.RecentContext)
	if entries == 0 {
		t.Fatal("evidence after a publish has no entries")
	}

	// The service token reads it too, and MinVersion is honoured.
	again, err := b.service.Evidence(t.Context(), b.user, "conv-1", &client.EvidenceOptions{MinVersion: ev.Version, MaxTokens: 50_000})
	if err != nil {
		t.Fatal(err)
	}
	if again.Version != ev.Version || again.Cursor != ev.Cursor {
		t.Fatalf("second read: version %d cursor %d, want %d %d", again.Version, again.Cursor, ev.Version, ev.Cursor)
	}

	found, err := b.client.Search(t.Context(), b.user, "conv-1", "rate limiting", 0)
	if err != nil {
		t.Fatal(err)
	}
	if found.Version != ev.Version || found.ConversationID != "conv-1" {
		t.Fatalf("search: version %d conversation %q, want %d conv-1", found.Version, found.ConversationID, ev.Version)
	}
	if _, err := b.client.Search(t.Context(), b.user, "conv-1", "", 0); !isCode(err, http.StatusBadRequest, "empty_query") {
		t.Fatalf("search with an empty query: %v, want 400 empty_query", err)
	}

	res, err := b.client.Context(t.Context(), b.user, "conv-1", &client.ContextRequest{
		Messages: history,
		System:   "You are a coding agent.",
		Budget:   &client.Budget{ResponseReserve: new(1024)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) < 2 || res.EstimatedTokens.Total == 0 || res.Limit == 0 || !res.Evidence.Included || res.Evidence.Version != ev.Version {
		t.Fatalf("context: %+v, want system, evidence and request messages within a limit", res)
	}
	if _, err := b.client.Context(t.Context(), b.user, "conv-1", &client.ContextRequest{}); !isCode(err, http.StatusBadRequest, "invalid_messages") {
		t.Fatalf("context without messages: %v, want 400 invalid_messages", err)
	}

	if err := b.client.DeleteConversation(t.Context(), b.user, "conv-1"); err != nil {
		t.Fatal(err)
	}
	gone, err := b.client.Evidence(t.Context(), b.user, "conv-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if gone.Version != 0 || gone.Message != nil {
		t.Fatalf("evidence after DeleteConversation: version %d, message %v; want 0 and none", gone.Version, gone.Message)
	}
}

func isCode(err error, status int, code string) bool {
	e, ok := errors.AsType[*client.APIError](err)
	return ok && e.Status == status && e.Code == code
}

func TestListConversationsPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	convs := []string{"c-1", "c-2", "c-3"}
	for _, c := range convs {
		_, _ = b.publish(t, c)
	}
	var got []string
	var pages []*client.ConversationPage
	opts := &client.ListOptions{Limit: 2}
	for {
		page, err := b.client.ListConversations(t.Context(), b.user, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page)
		for _, c := range page.Conversations {
			got = append(got, c.ConversationID)
			if c.Version < 1 || c.UpdatedAt.IsZero() {
				t.Fatalf("listed %+v: want a version and a time", c)
			}
		}
		if page.Next == "" {
			break
		}
		if len(pages) > len(convs) {
			t.Fatalf("more pages than conversations: the listing does not end")
		}
		opts.After = page.Next
	}
	if diff := cmp.Diff(convs, got); diff != "" {
		t.Fatalf("listed conversations (-want +got):\n%s", diff)
	}
	if len(pages) != 2 || pages[0].Next != "c-2" || len(pages[0].Conversations) != 2 {
		t.Fatalf("pages of 2: got %d pages, the first with next %q and %d conversations; want 2, c-2 and 2",
			len(pages), pages[0].Next, len(pages[0].Conversations))
	}
	if _, err := b.client.ListConversations(t.Context(), b.user, &client.ListOptions{Limit: 5000}); !isCode(err, http.StatusBadRequest, "invalid_limit") {
		t.Fatalf("limit 5000: %v, want 400 invalid_limit", err)
	}
}

func TestExport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []string{"x-2", "x-1"} {
		_, _ = b.publish(t, c)
	}
	rank := map[string]int{client.ExportTypeConversation: 0, client.ExportTypeEntry: 1, client.ExportTypeRejection: 2, client.ExportTypeEnd: 3}
	var lines []*client.ExportLine
	var convs []string
	counts := map[string]int{}
	for line, err := range b.client.Export(t.Context(), b.user) {
		if err != nil {
			t.Fatalf("after %d lines: %v", len(lines), err)
		}
		if n := len(lines); n > 0 && rank[line.Type] < rank[lines[n-1].Type] {
			t.Fatalf("line %d is a %s after a %s: want conversations, entries, rejections, end", n, line.Type, lines[n-1].Type)
		}
		lines = append(lines, line)
		counts[line.Type]++
		if line.Conversation != nil {
			convs = append(convs, line.Conversation.ConversationID)
			if line.Conversation.Version < 1 || len(line.Conversation.PrefixDigest) != 64 {
				t.Fatalf("conversation line %s", line.Raw)
			}
		}
		if line.Entry != nil && (line.Entry.Excerpt == "" || line.Entry.Bucket == "") {
			t.Fatalf("entry line %s: want a bucket and an excerpt", line.Raw)
		}
	}
	if diff := cmp.Diff([]string{"x-1", "x-2"}, convs); diff != "" {
		t.Fatalf("conversation lines (-want +got):\n%s", diff)
	}
	last := lines[len(lines)-1]
	if last.End == nil {
		t.Fatalf("the last line is %s, want the end line", last.Raw)
	}
	wantEnd := client.ExportEnd{Conversations: counts["conversation"], Entries: counts["entry"], Rejections: counts["rejection"]}
	if *last.End != wantEnd || counts["end"] != 1 {
		t.Fatalf("end line %+v, want %+v (the lines counted)", *last.End, wantEnd)
	}

	// Stopping early closes the stream; the next export works.
	for range b.client.Export(t.Context(), b.user) {
		break
	}
	n := 0
	for _, err := range b.client.Export(t.Context(), b.user) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(lines) {
		t.Fatalf("second export: %d lines, want %d", n, len(lines))
	}
}

func TestDeleteUser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _ = b.publish(t, "d-1")
	_, _ = b.publish(t, "d-2")
	page, err := b.client.ListConversations(t.Context(), b.user, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Conversations) != 2 {
		t.Fatalf("before DeleteUser: %d conversations, want 2", len(page.Conversations))
	}
	if err := b.service.DeleteUser(t.Context(), b.user); err != nil {
		t.Fatal(err)
	}
	page, err = b.client.ListConversations(t.Context(), b.user, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Conversations) != 0 || page.Next != "" {
		t.Fatalf("after DeleteUser: %+v, want no conversations", page)
	}
	var types []string
	for line, err := range b.client.Export(t.Context(), b.user) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, line.Type)
	}
	if !slices.Equal(types, []string{client.ExportTypeEnd}) {
		t.Fatalf("export after DeleteUser: %v, want only the end line", types)
	}
	// Idempotent.
	if err := b.client.DeleteUser(t.Context(), b.user); err != nil {
		t.Fatal(err)
	}
}

func TestEmptyIDs(t *testing.T) {
	t.Parallel()
	c := newClient(t, "unused")
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // nothing may be sent
	if _, err := c.Evidence(ctx, "", "c", nil); err == nil || !strings.Contains(err.Error(), "user ID is empty") {
		t.Fatalf("empty user: %v", err)
	}
	if err := c.DeleteConversation(ctx, "u", ""); err == nil || !strings.Contains(err.Error(), "conversation ID is empty") {
		t.Fatalf("empty conversation: %v", err)
	}
}
