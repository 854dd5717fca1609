package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/recallhq/recall/api"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// call is one call a fakeBackend received.
type call struct {
	Method         string
	Caller         api.Caller
	UserID         string
	ConversationID string
	Query          api.EvidenceQuery
	Search         string
	MaxTokens      int
	After          string
	Limit          int
}

// fakeBackend answers from a map of evidence by user and conversation, and
// records each call.
type fakeBackend struct {
	mu       sync.Mutex
	calls    []call
	evidence map[[2]string]*Evidence
	pages    map[string]*Conversations
	// err, when set, is every call's error.
	err error
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{evidence: map[[2]string]*Evidence{}, pages: map[string]*Conversations{}}
}

func (f *fakeBackend) record(c call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeBackend) lastCall(t *testing.T) call {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		t.Fatal("the backend was not called")
	}
	return f.calls[len(f.calls)-1]
}

func (f *fakeBackend) answer(userID, conversationID string) (*Evidence, error) {
	if f.err != nil {
		return nil, f.err
	}
	if ev, ok := f.evidence[[2]string{userID, conversationID}]; ok {
		cp := *ev
		return &cp, nil
	}
	return &Evidence{UserID: userID, ConversationID: conversationID}, nil
}

func (f *fakeBackend) Evidence(_ context.Context, c api.Caller, userID, conversationID string, q api.EvidenceQuery) (*Evidence, error) {
	f.record(call{Method: "Evidence", Caller: c, UserID: userID, ConversationID: conversationID, Query: q})
	return f.answer(userID, conversationID)
}

func (f *fakeBackend) Search(_ context.Context, c api.Caller, userID, conversationID, query string, maxTokens int) (*Evidence, error) {
	f.record(call{Method: "Search", Caller: c, UserID: userID, ConversationID: conversationID, Search: query, MaxTokens: maxTokens})
	return f.answer(userID, conversationID)
}

func (f *fakeBackend) Conversations(_ context.Context, c api.Caller, userID, after string, limit int) (*Conversations, error) {
	f.record(call{Method: "Conversations", Caller: c, UserID: userID, After: after, Limit: limit})
	if f.err != nil {
		return nil, f.err
	}
	if p, ok := f.pages[userID]; ok {
		return p, nil
	}
	return &Conversations{Conversations: []Conversation{}}, nil
}

// testBundle is a client session connected to a Server over an in-memory
// transport.
type testBundle struct {
	backend *fakeBackend
	session *sdk.ClientSession
	logs    *bytes.Buffer
}

// setup starts a Server acting for caller over a fake backend, and
// connects a client to it.
func setup(t *testing.T, caller api.Caller) *testBundle {
	t.Helper()
	b := newFakeBackend()
	logs := &bytes.Buffer{}
	s, err := New(b, &Config{Caller: caller, Logger: slog.New(slog.NewTextHandler(logs, nil)), Version: "test"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server Connect: %v", err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client Connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
		cancel()
	})
	return &testBundle{backend: b, session: cs, logs: logs}
}

// callTool calls a tool and returns its result; a protocol error fails the
// test.
func (b *testBundle) callTool(t *testing.T, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := b.session.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

// toolText is the text of a result's single text content.
func toolText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d contents, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// structured decodes a successful result's structured content into out.
func structured(t *testing.T, res *sdk.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("the tool failed: %s", toolText(t, res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	// The text content carries the same JSON, for clients that read only it.
	var fromText any
	if err := json.Unmarshal([]byte(toolText(t, res)), &fromText); err != nil {
		t.Fatalf("the text content is not the structured JSON: %v", err)
	}
}

var (
	alice   = api.Caller{Subject: "alice"}
	service = api.Caller{Subject: "svc", Service: true}
)

func TestListTools(t *testing.T) {
	t.Parallel()
	b := setup(t, alice)
	res, err := b.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		wantRequired []string
		wantProps    []string
		wantOutput   []string
	}{
		{ToolConversations, nil, []string{"after", "limit", "user_id"}, []string{"conversations", "next"}},
		{ToolEvidence, []string{"conversation_id"}, []string{"conversation_id", "max_tokens", "min_cursor", "user_id", "wait"},
			[]string{"conversation_id", "cursor", "lagging", "message", "message_count", "user_id", "version"}},
		{ToolSearch, []string{"conversation_id", "query"}, []string{"conversation_id", "max_tokens", "query", "user_id"},
			[]string{"conversation_id", "cursor", "lagging", "message", "message_count", "user_id", "version"}},
	}
	if len(res.Tools) != len(tests) {
		t.Fatalf("%d tools, want %d", len(res.Tools), len(tests))
	}
	slices.SortFunc(res.Tools, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	for i, tt := range tests {
		tool := res.Tools[i]
		if tool.Name != tt.name {
			t.Fatalf("tool %d is %q, want %q", i, tool.Name, tt.name)
		}
		in, out := schemaOf(t, tool.InputSchema), schemaOf(t, tool.OutputSchema)
		if diff := cmp.Diff(tt.wantRequired, in.Required); diff != "" {
			t.Errorf("%s: required (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.wantProps, keys(in.Properties)); diff != "" {
			t.Errorf("%s: input properties (-want +got):\n%s", tt.name, diff)
		}
		for name, p := range in.Properties {
			if p.Description == "" {
				t.Errorf("%s: input %s has no description", tt.name, name)
			}
		}
		if diff := cmp.Diff(tt.wantOutput, keys(out.Properties)); diff != "" {
			t.Errorf("%s: output properties (-want +got):\n%s", tt.name, diff)
		}
		if tool.Description == "" || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: want a description and the read-only hint", tt.name)
		}
	}
}

func schemaOf(t *testing.T, v any) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("schema %s: %v", b, err)
	}
	if s.Type != "object" {
		t.Errorf("schema type %q, want object", s.Type)
	}
	return &s
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var known = &Evidence{
	UserID: "alice", ConversationID: "c-1", Cursor: 4, Version: 3, MessageCount: 5,
	Message: &Message{Role: "assistant", Content: `{"type":"untrusted_historical_evidence"}`},
}

func TestEvidenceTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		caller    api.Caller
		args      map[string]any
		backend   error
		wantCall  call
		wantError string // the tool error's prefix; "" for success
	}{
		{
			name:     "own user by default",
			caller:   alice,
			args:     map[string]any{"conversation_id": "c-1"},
			wantCall: call{Method: "Evidence", Caller: alice, UserID: "alice", ConversationID: "c-1"},
		},
		{
			name:   "min_cursor, wait and max_tokens",
			caller: alice,
			args:   map[string]any{"conversation_id": "c-1", "min_cursor": 4, "wait": "1.5s", "max_tokens": 300},
			wantCall: call{Method: "Evidence", Caller: alice, UserID: "alice", ConversationID: "c-1",
				Query: api.EvidenceQuery{MinCursor: 4, Wait: 1500 * time.Millisecond, MaxTokens: 300}},
		},
		{
			name:     "wait in seconds",
			caller:   alice,
			args:     map[string]any{"conversation_id": "c-1", "min_cursor": 4, "wait": "2"},
			wantCall: call{Method: "Evidence", Caller: alice, UserID: "alice", ConversationID: "c-1", Query: api.EvidenceQuery{MinCursor: 4, Wait: 2 * time.Second}},
		},
		{
			name:     "service token names the user",
			caller:   service,
			args:     map[string]any{"user_id": "alice", "conversation_id": "c-1"},
			wantCall: call{Method: "Evidence", Caller: service, UserID: "alice", ConversationID: "c-1"},
		},
		{
			name:      "service token without user_id",
			caller:    service,
			args:      map[string]any{"conversation_id": "c-1"},
			wantError: CodeUserRequired + ": ",
		},
		{
			name:      "no caller without user_id",
			caller:    api.Caller{},
			args:      map[string]any{"conversation_id": "c-1"},
			wantError: CodeUserRequired + ": ",
		},
		{
			name:      "bad wait",
			caller:    alice,
			args:      map[string]any{"conversation_id": "c-1", "wait": "soon"},
			wantError: api.CodeInvalidWait + ": ",
		},
		{
			name:      "negative min_cursor",
			caller:    alice,
			args:      map[string]any{"conversation_id": "c-1", "min_cursor": -1},
			wantError: `validating "arguments"`,
		},
		{
			name:      "missing conversation_id",
			caller:    alice,
			args:      map[string]any{},
			wantError: `validating "arguments"`,
		},
		{
			name:      "a number for a string",
			caller:    alice,
			args:      map[string]any{"conversation_id": 7},
			wantError: `validating "arguments"`,
		},
		{
			name:      "unknown conversation",
			caller:    alice,
			args:      map[string]any{"conversation_id": "nope"},
			wantCall:  call{Method: "Evidence", Caller: alice, UserID: "alice", ConversationID: "nope"},
			wantError: CodeUnknownConversation + ": ",
		},
		{
			name:      "another user's conversation",
			caller:    alice,
			args:      map[string]any{"user_id": "bob", "conversation_id": "c-1"},
			backend:   &api.Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Message: "the token may act only for the user named by its sub claim"},
			wantCall:  call{Method: "Evidence", Caller: alice, UserID: "bob", ConversationID: "c-1"},
			wantError: "forbidden: the token may act only for the user named by its sub claim",
		},
		{
			name:      "the API is down",
			caller:    alice,
			args:      map[string]any{"conversation_id": "c-1"},
			backend:   errors.New("dial tcp 127.0.0.1:1: connection refused"),
			wantCall:  call{Method: "Evidence", Caller: alice, UserID: "alice", ConversationID: "c-1"},
			wantError: CodeUnavailable + ": recall did not answer: dial tcp",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.caller)
			b.backend.evidence[[2]string{"alice", "c-1"}] = known
			b.backend.err = tt.backend
			res := b.callTool(t, ToolEvidence, tt.args)
			if tt.wantError != "" {
				if !res.IsError || !strings.HasPrefix(toolText(t, res), tt.wantError) {
					t.Fatalf("result %v %q, want a tool error starting %q", res.IsError, toolText(t, res), tt.wantError)
				}
			} else {
				var got Evidence
				structured(t, res, &got)
				if diff := cmp.Diff(*known, got); diff != "" {
					t.Errorf("evidence (-want +got):\n%s", diff)
				}
			}
			if tt.wantCall.Method == "" {
				if len(b.backend.calls) > 0 {
					t.Errorf("the backend was called: %+v", b.backend.calls)
				}
				return
			}
			if diff := cmp.Diff(tt.wantCall, b.backend.lastCall(t)); diff != "" {
				t.Errorf("backend call (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSearchTool(t *testing.T) {
	t.Parallel()
	b := setup(t, alice)
	b.backend.evidence[[2]string{"alice", "c-1"}] = known
	const query = "what did we decide about the database?"
	var got Evidence
	structured(t, b.callTool(t, ToolSearch, map[string]any{"conversation_id": "c-1", "query": query, "max_tokens": 200}), &got)
	if diff := cmp.Diff(*known, got); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
	want := call{Method: "Search", Caller: alice, UserID: "alice", ConversationID: "c-1", Search: query, MaxTokens: 200}
	if diff := cmp.Diff(want, b.backend.lastCall(t)); diff != "" {
		t.Errorf("backend call (-want +got):\n%s", diff)
	}
	for _, args := range []map[string]any{
		{"conversation_id": "c-1", "query": ""},
		{"conversation_id": "c-1"},
		{"conversation_id": "c-1", "query": "x", "max_tokens": 0},
	} {
		if res := b.callTool(t, ToolSearch, args); !res.IsError {
			t.Errorf("%v: no tool error", args)
		}
	}
	if res := b.callTool(t, ToolSearch, map[string]any{"conversation_id": "gone", "query": "x"}); !res.IsError ||
		!strings.HasPrefix(toolText(t, res), CodeUnknownConversation+": ") {
		t.Errorf("unknown conversation: %q, want an %s tool error", toolText(t, res), CodeUnknownConversation)
	}
	// The query is never logged, nor are ids.
	b.backend.err = errors.New("connection refused")
	if res := b.callTool(t, ToolSearch, map[string]any{"conversation_id": "c-1", "query": query}); !res.IsError {
		t.Fatal("no tool error for a failed backend")
	}
	if logs := b.logs.String(); !strings.Contains(logs, "tool="+ToolSearch) || strings.Contains(logs, "database") || strings.Contains(logs, "c-1") {
		t.Errorf("logs name the tool and never the arguments:\n%s", logs)
	}
}

func TestConversationsTool(t *testing.T) {
	t.Parallel()
	b := setup(t, service)
	next := "c-2"
	page := &Conversations{
		Conversations: []Conversation{{ConversationID: "c-2", Version: 2, Cursor: 3, MessageCount: 4, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
		Next:          &next,
	}
	b.backend.pages["alice"] = page
	var got Conversations
	structured(t, b.callTool(t, ToolConversations, map[string]any{"user_id": "alice", "after": "c-1", "limit": 1}), &got)
	if diff := cmp.Diff(*page, got); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(call{Method: "Conversations", Caller: service, UserID: "alice", After: "c-1", Limit: 1}, b.backend.lastCall(t)); diff != "" {
		t.Errorf("backend call (-want +got):\n%s", diff)
	}
	// The last page's next is null.
	structured(t, b.callTool(t, ToolConversations, map[string]any{"user_id": "bob"}), &got)
	if got.Next != nil || got.Conversations == nil || len(got.Conversations) != 0 {
		t.Errorf("empty page = %+v, want no conversations and a null next", got)
	}
	for _, args := range []map[string]any{
		{"user_id": "alice", "limit": 1001},
		{"user_id": "alice", "limit": 0},
		{"user_id": ""},
		{},
	} {
		if res := b.callTool(t, ToolConversations, args); !res.IsError {
			t.Errorf("%v: no tool error", args)
		}
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, alice)
	b.backend.evidence[[2]string{"alice", "c/1"}] = known
	res, err := b.session.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var templates []string
	for _, rt := range res.ResourceTemplates {
		templates = append(templates, rt.URITemplate)
	}
	slices.Sort(templates)
	if diff := cmp.Diff([]string{EvidenceTemplate, UserEvidenceTemplate}, templates); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}

	tests := []struct {
		uri          string
		wantUser     string // the backend's user_id
		wantNotFound bool
	}{
		{"recall://conversations/c%2F1/evidence", "alice", false},
		{"recall://users/alice/conversations/c%2F1/evidence", "alice", false},
		{"recall://conversations/unknown/evidence", "alice", true},
		{"recall://conversations/c%2F1/other", "", true},
	}
	for _, tt := range tests {
		got, err := b.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: tt.uri})
		if tt.wantNotFound {
			// The protocol's resource-not-found error (SEP-2164).
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message != "Resource not found" {
				t.Errorf("%s: %v, want the resource-not-found error", tt.uri, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.uri, err)
			continue
		}
		if len(got.Contents) != 1 || got.Contents[0].MIMEType != "application/json" {
			t.Fatalf("%s: contents %+v, want one JSON text", tt.uri, got.Contents)
		}
		var ev Evidence
		if err := json.Unmarshal([]byte(got.Contents[0].Text), &ev); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(*known, ev); diff != "" {
			t.Errorf("%s: evidence (-want +got):\n%s", tt.uri, diff)
		}
		if c := b.backend.lastCall(t); c.UserID != tt.wantUser || c.ConversationID != "c/1" {
			t.Errorf("%s: backend read %q/%q, want %q/c/1", tt.uri, c.UserID, c.ConversationID, tt.wantUser)
		}
	}

	// The API's refusal is an invalid-params error with its code.
	b.backend.err = &api.Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Message: "no"}
	_, err = b.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: "recall://users/bob/conversations/c-1/evidence"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(we.Message, "forbidden: ") {
		t.Errorf("forbidden read: %v, want an invalid-params error starting forbidden:", err)
	}
}

func TestParseEvidenceURI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		uri                string
		wantUser, wantConv string
		wantOK             bool
	}{
		{"recall://conversations/c-7/evidence", "", "c-7", true},
		{"recall://conversations/a%20b%2Fc/evidence", "", "a b/c", true},
		{"recall://users/u-42/conversations/c-7/evidence", "u-42", "c-7", true},
		{"recall://users//conversations/c-7/evidence", "", "", false},
		{"recall://conversations//evidence", "", "", false},
		{"recall://conversations/c-7/evidence?x=1", "", "", false},
		{"recall://conversations/c-7", "", "", false},
		{"other://conversations/c-7/evidence", "", "", false},
		{"recall://conversations/a/b/evidence", "", "", false},
		{"recall://conversations/%zz/evidence", "", "", false},
	}
	for _, tt := range tests {
		user, conv, ok := parseEvidenceURI(tt.uri)
		if user != tt.wantUser || conv != tt.wantConv || ok != tt.wantOK {
			t.Errorf("parseEvidenceURI(%q) = %q, %q, %v; want %q, %q, %v", tt.uri, user, conv, ok, tt.wantUser, tt.wantConv, tt.wantOK)
		}
	}
}

func TestNewNeedsBackend(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, nil); err == nil || !strings.Contains(err.Error(), "NewClientBackend") {
		t.Errorf("New(nil) = %v, want an error naming the backends", err)
	}
}
