package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

const contextPath = "/v1/users/u-42/conversations/c-7/context"

// contextBody is a request for the next call after history, whose evidence
// the fake source holds.
func contextBody(t testing.TB, extra string) string {
	t.Helper()
	return `{"messages":` + history + `,"system":"You are a careful engineer.",` +
		`"tools":[{"name":"search","parameters":{"type":"object"}}]` + extra + `}`
}

type contextResponse struct {
	Messages        []json.RawMessage `json:"messages"`
	EstimatedTokens assemble.Tokens   `json:"estimated_tokens"`
	Limit           int               `json:"limit"`
	DroppedTurns    int               `json:"dropped_turns"`
	Compacted       int               `json:"compacted_tool_results"`
	Evidence        struct {
		Included bool  `json:"included"`
		Version  int64 `json:"version"`
		Cursor   int   `json:"cursor"`
		Lagging  bool  `json:"lagging"`
	} `json:"evidence"`
}

func decodeContext(t *testing.T, w *httptest.ResponseRecorder) contextResponse {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body.String())
	}
	var r contextResponse
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	return r
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s, _ := fold(t, history)
	rec := recordOf("u-42", "c-7", &s)
	b.src.set(rec)
	stored, err := rec.Message()
	if err != nil || stored == nil {
		t.Fatalf("stored message: %v, %v", stored, err)
	}

	w := post(t, b.h, contextPath, userToken(t, "u-42"), contextBody(t, ""))
	golden(t, "context", w.Body.Bytes())
	r := decodeContext(t, w)
	var first, second checkpoint.Message
	if first, err = checkpoint.DecodeMessage(r.Messages[0]); err != nil || first.Role != checkpoint.RoleSystem {
		t.Fatalf("first message %s, want the system message", r.Messages[0])
	}
	if second, err = checkpoint.DecodeMessage(r.Messages[1]); err != nil || second.Role != checkpoint.RoleAssistant || second.Text != stored.Content {
		t.Fatalf("second message is not the stored evidence message")
	}
	if !r.Evidence.Included || r.Evidence.Version != s.Version || r.Evidence.Cursor != s.Cursor || r.Evidence.Lagging {
		t.Errorf("evidence %+v, want included at version %d cursor %d", r.Evidence, s.Version, s.Cursor)
	}
	if r.EstimatedTokens.Evidence != evidence.EstimateTokens(len(stored.Content)) {
		t.Errorf("evidence charged %d, want %d", r.EstimatedTokens.Evidence, evidence.EstimateTokens(len(stored.Content)))
	}
	if r.EstimatedTokens.Total > r.Limit || r.Limit != assemble.DefaultPrompt {
		t.Errorf("total %d, limit %d", r.EstimatedTokens.Total, r.Limit)
	}

	// Counted and logged, without message text.
	if n := counterValue(t, b.metrics.ContextRequests.WithLabelValues("assembled")); n != 1 {
		t.Errorf("assembled = %v, want 1", n)
	}
	if n := counterValue(t, b.metrics.ContextEvidence.WithLabelValues("included")); n != 1 {
		t.Errorf("evidence included = %v, want 1", n)
	}
	logs := b.logs.String()
	if !strings.Contains(logs, "tokens_total=") || !strings.Contains(logs, "dropped_turns=0") {
		t.Errorf("the assembly is not logged: %s", logs)
	}
	for _, text := range []string{"Friday", "Postgres", "careful engineer", "search", "u-42", "c-7"} {
		if strings.Contains(logs, text) {
			t.Errorf("logs carry %q", text)
		}
	}
}

func TestContextDropsAndCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// No evidence for the key; a budget that fits the current turn only.
	w := post(t, b.h, contextPath, serviceToken(t), contextBody(t, `,"budget":{"prompt":60}`))
	r := decodeContext(t, w)
	if r.DroppedTurns != 2 || len(r.Messages) != 2 || r.Evidence.Included || r.Evidence.Version != 0 {
		t.Errorf("dropped %d, %d messages, evidence %+v; want 2 dropped, system and request only", r.DroppedTurns, len(r.Messages), r.Evidence)
	}
	if n := counterValue(t, b.metrics.ContextDroppedTurns); n != 2 {
		t.Errorf("dropped turns counted %v, want 2", n)
	}
	if n := counterValue(t, b.metrics.ContextEvidence.WithLabelValues("none")); n != 1 {
		t.Errorf("evidence none = %v, want 1", n)
	}

	// Evidence that does not fit beside the mandatory part is left out.
	s, _ := fold(t, history)
	b.src.set(recordOf("u-42", "c-7", &s))
	r = decodeContext(t, post(t, b.h, contextPath, serviceToken(t), contextBody(t, `,"budget":{"prompt":60}`)))
	if r.Evidence.Included || r.Evidence.Version != s.Version {
		t.Errorf("evidence %+v, want left out at version %d", r.Evidence, s.Version)
	}
	if n := counterValue(t, b.metrics.ContextEvidence.WithLabelValues("left_out")); n != 1 {
		t.Errorf("evidence left_out = %v, want 1", n)
	}
}

func TestContextEvidenceFalse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := decodeContext(t, post(t, b.h, contextPath, userToken(t, "u-42"), contextBody(t, `,"evidence":false`)))
	if n := b.src.reads.Load(); n != 0 || r.Evidence.Included {
		t.Errorf("%d reads, evidence %+v: want none", n, r.Evidence)
	}
}

func TestContextWaitsForMinCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.src.set(stateAt("u-42", "c-7", 2, 1))
	tok := userToken(t, "u-42")

	// The deadline passes: the state it has, marked lagging.
	r := decodeContext(t, post(t, b.h, contextPath, tok, contextBody(t, `,"min_cursor":4,"wait":"50ms"`)))
	if !r.Evidence.Lagging || r.Evidence.Cursor != 2 {
		t.Errorf("evidence %+v, want lagging at cursor 2", r.Evidence)
	}

	// The cursor arrives while the request waits.
	done := make(chan contextResponse, 1)
	go func() {
		w := post(t, b.h, contextPath, tok, contextBody(t, `,"min_cursor":4,"wait":"20s"`))
		var r contextResponse
		_ = json.Unmarshal(w.Body.Bytes(), &r)
		done <- r
	}()
	b.src.waitSubscribers(t, "u-42", "c-7", 1)
	s, _ := fold(t, history)
	b.src.set(recordOf("u-42", "c-7", &s))
	select {
	case r := <-done:
		if r.Evidence.Lagging || !r.Evidence.Included || r.Evidence.Cursor != s.Cursor {
			t.Errorf("evidence %+v, want included at cursor %d", r.Evidence, s.Cursor)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not wake when the cursor arrived")
	}
}

func TestContextErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := userToken(t, "u-42")
	huge := strings.Repeat(" ", assemble.MaxRequestBytes+1)
	tests := []struct {
		name       string
		path       string
		token      string
		body       string
		wantStatus int
		wantCode   string
		wantInMsg  string
	}{
		{name: "no token", token: "-", body: contextBody(t, ""), wantStatus: 401, wantCode: api.CodeUnauthorized},
		{name: "another user", token: userToken(t, "u-1"), body: contextBody(t, ""), wantStatus: 403, wantCode: api.CodeForbidden},
		{name: "not JSON", body: `{"messages":`, wantStatus: 400, wantCode: api.CodeInvalidRequest},
		{name: "unknown role", body: `{"messages":[{"role":"wizard","content":"hunter2"}]}`, wantStatus: 400, wantCode: api.CodeInvalidMessages, wantInMsg: "role"},
		{name: "no user message", body: `{"messages":[{"role":"assistant","content":"hunter2"}]}`, wantStatus: 400, wantCode: api.CodeNoUserMessage},
		{name: "negative budget", body: contextBody(t, `,"budget":{"response_reserve":-1}`), wantStatus: 400, wantCode: api.CodeInvalidBudget, wantInMsg: "budget.response_reserve"},
		{name: "absurd budget", body: contextBody(t, `,"budget":{"prompt":99999999999}`), wantStatus: 400, wantCode: api.CodeInvalidBudget, wantInMsg: "budget.prompt"},
		{name: "wait too long", body: contextBody(t, `,"min_cursor":1,"wait":"31s"`), wantStatus: 400, wantCode: api.CodeWaitTooLong},
		{name: "wait negative", body: contextBody(t, `,"min_cursor":1,"wait":"-1s"`), wantStatus: 400, wantCode: api.CodeInvalidWait},
		{name: "over 16 MiB", body: huge, wantStatus: 400, wantCode: api.CodeTooLarge},
		{name: "budget too small", body: contextBody(t, `,"budget":{"prompt":20}`), wantStatus: 422, wantCode: api.CodeBudgetTooSmall},
		{name: "cannot compact", body: `{"messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":"","tool_calls":[{"id":"c","name":"f","args":{}}]},` +
			`{"role":"tool","tool_call_id":"c","content":` + rowsWithIDs(4000) + `}]}`, wantStatus: 422, wantCode: api.CodeCannotCompact},
		{name: "GET is not allowed", path: "GET", wantStatus: 405, wantCode: api.CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			token := tok
			switch tt.token {
			case "-":
				token = ""
			case "":
			default:
				token = tt.token
			}
			var w *httptest.ResponseRecorder
			if tt.path == "GET" {
				w = do(t, b.h, http.MethodGet, contextPath, token)
			} else {
				w = post(t, b.h, contextPath, token, tt.body)
			}
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %.300s", w.Code, tt.wantStatus, w.Body.String())
			}
			code, msg := errorOf(t, w)
			if code != tt.wantCode || !strings.Contains(msg, tt.wantInMsg) {
				t.Errorf("error %s %q, want %s naming %q", code, msg, tt.wantCode, tt.wantInMsg)
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("the error quotes message text")
			}
		})
	}
	if strings.Contains(b.logs.String(), "hunter2") {
		t.Errorf("logs carry message text")
	}
}

// rowsWithIDs is a JSON string holding n rows whose references alone
// exceed the per-result limit.
func rowsWithIDs(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"rows":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"id":"row-` + strings.Repeat("x", 8) + `-` + string(rune('a'+i%26)) + `"}`)
	}
	sb.WriteString(`]}`)
	s, _ := json.Marshal(sb.String())
	return string(s)
}

// complementing is a source that chooses views among older messages, as
// the store does: it records what it was asked and answers a view of its
// own.
type complementing struct {
	*fakeSource
	requests []string
	befores  []int
}

func (c *complementing) SearchBefore(ctx context.Context, userID, conversationID, query string, before int) (evidence.Record, error) {
	c.requests, c.befores = append(c.requests, query), append(c.befores, before)
	rec, err := c.fakeSource.Evidence(ctx, userID, conversationID)
	if err != nil {
		return rec, err
	}
	s := evidence.NewState()
	s.Cursor = rec.Cursor
	s.SetView(evidence.View{Shown: []evidence.Shown{{Bucket: evidence.Constraints, Entry: evidence.Entry{Role: checkpoint.RoleUser, Index: 0, Excerpt: "older only"}}}})
	s.Buckets.Constraints = []evidence.Entry{s.Shown[0].Entry}
	return recordOf(userID, conversationID, &s), nil
}

// TestContextComplements checks that in focus the context's evidence is
// the view chosen among the messages older than the oldest one the answer
// keeps, for the current request.
func TestContextComplements(t *testing.T) {
	t.Parallel()
	src := &complementing{fakeSource: newFakeSource()}
	h, err := api.New(src, &api.Config{JWTSecret: secret, Notifier: src, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var turns []string
	for i := range 20 {
		turns = append(turns,
			fmt.Sprintf(`{"id":"u%d","role":"user","content":%q}`, i, strings.Repeat("We must keep the rollout slow. ", 8)),
			fmt.Sprintf(`{"id":"a%d","role":"assistant","content":%q}`, i, strings.Repeat("Agreed, slow rollout. ", 8)))
	}
	turns = append(turns, `{"id":"now","role":"user","content":"what is the plan?"}`)
	long := "[" + strings.Join(turns, ",") + "]"
	s, msgs := foldFocus(t, long)
	src.set(recordOf("u-42", "c-7", &s))

	w := post(t, h, contextPath, userToken(t, "u-42"), `{"messages":`+long+`,"budget":{"prompt":900}}`)
	r := decodeContext(t, w)
	if len(src.befores) != 1 || src.requests[0] != "what is the plan?" {
		t.Fatalf("SearchBefore asked %v with %q; want once, for the request", src.befores, src.requests)
	}
	first, err := checkpoint.DecodeMessage(r.Messages[0])
	if err != nil {
		t.Fatal(err)
	}
	if !r.Evidence.Included || !strings.Contains(first.Text, "older only") {
		t.Fatalf("the evidence is not the complementing view: %s", r.Messages[0])
	}
	kept, err := checkpoint.DecodeMessage(r.Messages[1])
	if err != nil {
		t.Fatal(err)
	}
	oldest := slices.IndexFunc(msgs, func(m checkpoint.Message) bool { return m.ID == kept.ID })
	if r.DroppedTurns == 0 || src.befores[0] != oldest {
		t.Errorf("asked before %d, the oldest kept message is %d (%d turns dropped)", src.befores[0], oldest, r.DroppedTurns)
	}
}
