package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/mcp"
	"github.com/recallhq/recall/testutil/mcptest"
)

// readsBundle is a handler that serves the MCP server at /mcp, and the
// Reads it gave that server.
type readsBundle struct {
	h     *api.Handler
	src   *fakeSource
	users *fakeUsers
	reads *api.Reads
}

func setupReads(t *testing.T) *readsBundle {
	t.Helper()
	b := &readsBundle{src: newFakeSource(), users: newFakeUsers()}
	live, _ := foldFocus(t, history)
	b.src.set(recordOf("u-42", "c-7", &live))
	b.users.addRecord(stateAt("u-42", "c-1", 2, 3))
	b.users.addRecord(stateAt("u-42", "c-2", 4, 5))
	var err error
	b.h, err = api.New(b.src, &api.Config{
		JWTSecret: secret, Notifier: b.src, Users: b.users, MaxWait: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
		MCP: func(r *api.Reads) (http.Handler, error) {
			b.reads = r
			s, err := mcp.New(mcp.NewReadsBackend(r), nil)
			if err != nil {
				return nil, err
			}
			return s.HTTPHandler(), nil
		},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// routeAnswer is a route's answer: its body, or its error code.
func routeAnswer(t *testing.T, w *httptest.ResponseRecorder) (body, code string) {
	t.Helper()
	if w.Code == http.StatusOK {
		return w.Body.String(), ""
	}
	code, _ = errorOf(t, w)
	return "", code
}

// readAnswer is a read's answer in the same terms.
func readAnswer(t *testing.T, b []byte, err error) (body, code string) {
	t.Helper()
	if err == nil {
		return string(b), ""
	}
	var ae *api.Error
	if !errors.As(err, &ae) {
		t.Fatalf("the read failed with %T %v, want an *api.Error", err, err)
	}
	return "", ae.Code
}

// TestReadsAnswerAsTheRoutes: each of Reads' reads answers what its route
// answers the same caller, byte for byte, or refuses with the route's code.
func TestReadsAnswerAsTheRoutes(t *testing.T) {
	t.Parallel()
	b := setupReads(t)
	ctx := context.Background()
	user, other, service := api.Caller{Subject: "u-42"}, api.Caller{Subject: "u-7"}, api.Caller{Subject: "svc", Service: true}
	tokens := map[api.Caller]string{user: userToken(t, "u-42"), other: userToken(t, "u-7"), service: serviceToken(t)}
	long := strings.Repeat("x", 257)

	evidenceTests := []struct {
		name   string
		caller api.Caller
		user   string
		conv   string
		q      api.EvidenceQuery
		query  string // the route's query string
	}{
		{"own", user, "u-42", "c-7", api.EvidenceQuery{}, ""},
		{"service", service, "u-42", "c-7", api.EvidenceQuery{}, ""},
		{"max_tokens", user, "u-42", "c-7", api.EvidenceQuery{MaxTokens: 60}, "?max_tokens=60"},
		{"reached min_cursor", user, "u-42", "c-7", api.EvidenceQuery{MinCursor: 1, Wait: time.Second}, "?min_cursor=1&wait=1s"},
		{"lagging", user, "u-42", "c-7", api.EvidenceQuery{MinCursor: 99, Wait: 10 * time.Millisecond}, "?min_cursor=99&wait=10ms"},
		{"unknown", user, "u-42", "nope", api.EvidenceQuery{}, ""},
		{"another user's", other, "u-42", "c-7", api.EvidenceQuery{}, ""},
		{"bad user id", service, long, "c-7", api.EvidenceQuery{}, ""},
		{"bad conversation id", user, "u-42", long, api.EvidenceQuery{}, ""},
		{"wait too long", user, "u-42", "c-7", api.EvidenceQuery{MinCursor: 99, Wait: 3 * time.Second}, "?min_cursor=99&wait=3s"},
		{"negative min_cursor", user, "u-42", "c-7", api.EvidenceQuery{MinCursor: -1}, "?min_cursor=-1"},
	}
	// Each case is the route's answer and the read's, to compare.
	type readCase struct {
		name  string
		route func(t *testing.T) *httptest.ResponseRecorder
		read  func() ([]byte, error)
	}
	var cases []readCase
	for _, tt := range evidenceTests {
		cases = append(cases, readCase{"evidence/" + tt.name,
			func(t *testing.T) *httptest.ResponseRecorder {
				return do(t, b.h, http.MethodGet, "/v1/users/"+tt.user+"/conversations/"+tt.conv+"/evidence"+tt.query, tokens[tt.caller])
			},
			func() ([]byte, error) { return b.reads.Evidence(ctx, tt.caller, tt.user, tt.conv, tt.q) }})
	}

	searchTests := []struct {
		name      string
		caller    api.Caller
		user      string
		query     string
		maxTokens int
	}{
		{"own", user, "u-42", "what did we decide about the database?", 0},
		{"max_tokens", user, "u-42", "the schema", 60},
		{"another user's", other, "u-42", "the schema", 0},
		{"empty query", user, "u-42", "", 0},
		{"query too long", user, "u-42", strings.Repeat("q", api.MaxQueryBytes+1), 0},
	}
	for _, tt := range searchTests {
		body, _ := json.Marshal(map[string]any{"query": tt.query})
		if tt.maxTokens > 0 {
			body, _ = json.Marshal(map[string]any{"query": tt.query, "max_tokens": tt.maxTokens})
		}
		cases = append(cases, readCase{"search/" + tt.name,
			func(t *testing.T) *httptest.ResponseRecorder {
				return post(t, b.h, "/v1/users/"+tt.user+"/conversations/c-7/evidence/search", tokens[tt.caller], string(body))
			},
			func() ([]byte, error) { return b.reads.Search(ctx, tt.caller, tt.user, "c-7", tt.query, tt.maxTokens) }})
	}

	listTests := []struct {
		name   string
		caller api.Caller
		after  string
		limit  int
		query  string
	}{
		{"default limit", user, "", 0, ""},
		{"a page", user, "", 1, "?limit=1"},
		{"the next page", service, "c-1", 1, "?limit=1&after=c-1"},
		{"limit over 1000", user, "", 1001, "?limit=1001"},
		{"bad after", user, long, 1, "?limit=1&after=" + long},
		{"another user's", other, "", 0, ""},
	}
	for _, tt := range listTests {
		cases = append(cases, readCase{"conversations/" + tt.name,
			func(t *testing.T) *httptest.ResponseRecorder {
				return do(t, b.h, http.MethodGet, "/v1/users/u-42/conversations"+tt.query, tokens[tt.caller])
			},
			func() ([]byte, error) {
				page, err := b.reads.Conversations(ctx, tt.caller, "u-42", tt.after, tt.limit)
				if err != nil {
					return nil, err
				}
				j, err := json.Marshal(page)
				return append(j, '\n'), err
			}})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantBody, wantCode := routeAnswer(t, tc.route(t))
			body, err := tc.read()
			gotBody, gotCode := readAnswer(t, body, err)
			if gotCode != wantCode || gotBody != wantBody {
				t.Errorf("the read = %q (%s), want the route's %q (%s)", gotBody, gotCode, wantBody, wantCode)
			}
		})
	}
}

// bearer adds a bearer token to each request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectMCP connects the SDK's client to /mcp with token.
func connectMCP(t *testing.T, url, token string) *sdk.ClientSession {
	t.Helper()
	transport := &sdk.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "api-test", Version: "1"}, nil).Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPRoute: /mcp serves the MCP server to verified tokens only, and its
// tools act for the token's caller.
func TestMCPRoute(t *testing.T) {
	t.Parallel()
	b := setupReads(t)
	srv := httptest.NewServer(b.h)
	t.Cleanup(srv.Close)
	ctx := context.Background()

	for _, token := range []string{"", "not-a-jwt"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || body["error"]["code"] != api.CodeUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: %d %v, want 401 unauthorized with a challenge", token, resp.StatusCode, body)
		}
	}

	// Behind a proxy on the same machine, the request reaches a loopback
	// address under the public name: it is served.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Host = "recall.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+userToken(t, "u-42"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), mcp.ToolEvidence) {
		t.Errorf("tools/list under another Host: %d %s, want 200 with the tools", resp.StatusCode, body)
	}

	user := connectMCP(t, srv.URL, userToken(t, "u-42"))
	got, errText := mcptest.Call(t, user, mcp.ToolEvidence, map[string]any{"conversation_id": "c-7"})
	want := decode(t, do(t, b.h, http.MethodGet, "/v1/users/u-42/conversations/c-7/evidence", userToken(t, "u-42")))
	if errText != "" || got["cursor"] != float64(want.Cursor) || got["version"] != float64(want.Version) || got["user_id"] != "u-42" {
		t.Errorf("recall_evidence = %v %q, want cursor %d, version %d for u-42", got, errText, want.Cursor, want.Version)
	}
	if msg, _ := got["message"].(map[string]any); msg["content"] != want.Message.Content {
		t.Errorf("recall_evidence's message = %v, want the route's", got["message"])
	}
	if _, errText = mcptest.Call(t, user, mcp.ToolEvidence, map[string]any{"user_id": "u-7", "conversation_id": "c-7"}); !strings.HasPrefix(errText, api.CodeForbidden+": ") {
		t.Errorf("another user's evidence: %q, want a forbidden tool error", errText)
	}
	if _, errText = mcptest.Call(t, user, mcp.ToolEvidence, map[string]any{"conversation_id": "nope"}); !strings.HasPrefix(errText, mcp.CodeUnknownConversation+": ") {
		t.Errorf("unknown conversation: %q, want an %s tool error", errText, mcp.CodeUnknownConversation)
	}
	if _, errText = mcptest.Call(t, user, mcp.ToolEvidence, map[string]any{"conversation_id": "c-7", "min_cursor": 99, "wait": "3s"}); !strings.HasPrefix(errText, api.CodeWaitTooLong+": ") {
		t.Errorf("a wait over the API's longest: %q, want a %s tool error", errText, api.CodeWaitTooLong)
	}

	service := connectMCP(t, srv.URL, serviceToken(t))
	if _, errText = mcptest.Call(t, service, mcp.ToolConversations, nil); !strings.HasPrefix(errText, mcp.CodeUserRequired+": ") {
		t.Errorf("service token without user_id: %q, want a %s tool error", errText, mcp.CodeUserRequired)
	}
	got, errText = mcptest.Call(t, service, mcp.ToolConversations, map[string]any{"user_id": "u-42", "limit": 1})
	wantPage := map[string]any{
		"conversations": []any{map[string]any{"conversation_id": "c-1", "cursor": 2.0, "message_count": 3.0, "version": 3.0,
			"updated_at": updatedAt.Format(time.RFC3339Nano)}},
		"next": "c-1",
	}
	if diff := cmp.Diff(wantPage, got); errText != "" || diff != "" {
		t.Errorf("recall_conversations: %q (-want +got):\n%s", errText, diff)
	}
	res, err := service.ReadResource(ctx, &sdk.ReadResourceParams{URI: "recall://users/u-42/conversations/c-7/evidence"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, `"cursor":`+strconv.Itoa(want.Cursor)) {
		t.Errorf("the evidence resource: %v, %v", res, err)
	}
}
