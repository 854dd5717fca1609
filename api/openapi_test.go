package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/checkpoint"
)

// openAPIPath is the API's description, checked here against real answers.
const openAPIPath = "../docs/openapi.yaml"

// openAPI is the parsed description and a compiler over it.
type openAPI struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	paths    []openAPIPathTemplate
}

type openAPIPathTemplate struct {
	template string
	re       *regexp.Regexp
}

// loadOpenAPI reads docs/openapi.yaml and makes its schemas compilable by
// JSON pointer ("openapi.json#/components/schemas/Evidence").
func loadOpenAPI(t *testing.T) *openAPI {
	t.Helper()
	b, err := os.ReadFile(openAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s is not YAML: %v", openAPIPath, err)
	}
	if v := doc["openapi"]; v != "3.1.0" {
		t.Fatalf("openapi: %v, want 3.1.0", v)
	}
	// Through JSON, so that the validator sees JSON numbers.
	j, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("%s does not convert to JSON (keys must be strings: quote status codes): %v", openAPIPath, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("openapi.json", inst); err != nil {
		t.Fatal(err)
	}
	o := &openAPI{doc: inst.(map[string]any), compiler: c}
	for p := range o.doc["paths"].(map[string]any) {
		re := regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`)
		o.paths = append(o.paths, openAPIPathTemplate{template: p, re: regexp.MustCompile("^" + re + "$")})
	}
	return o
}

// pointerEscape escapes a JSON pointer token.
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// resolve follows a local $ref of obj, if any, and returns the object and
// its JSON pointer.
func (o *openAPI) resolve(obj map[string]any, ptr string) (map[string]any, string) {
	ref, ok := obj["$ref"].(string)
	if !ok {
		return obj, ptr
	}
	ptr = strings.TrimPrefix(ref, "#")
	var cur any = o.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		cur = cur.(map[string]any)[tok]
	}
	return cur.(map[string]any), ptr
}

// operation returns the operation of method and path, and its pointer.
func (o *openAPI) operation(t *testing.T, method, path string) (map[string]any, string) {
	t.Helper()
	for _, p := range o.paths {
		if !p.re.MatchString(path) {
			continue
		}
		item := o.doc["paths"].(map[string]any)[p.template].(map[string]any)
		op, ok := item[strings.ToLower(method)].(map[string]any)
		if !ok {
			t.Fatalf("%s documents no %s operation", p.template, method)
		}
		return op, "/paths/" + pointerEscape(p.template) + "/" + strings.ToLower(method)
	}
	t.Fatalf("%s documents no path for %s", openAPIPath, path)
	return nil, ""
}

func (o *openAPI) schemaAt(t *testing.T, ptr string) *jsonschema.Schema {
	t.Helper()
	sch, err := o.compiler.Compile("openapi.json#" + ptr)
	if err != nil {
		t.Fatalf("compile the schema at %s: %v", ptr, err)
	}
	return sch
}

func validateJSON(t *testing.T, sch *jsonschema.Schema, body []byte, what string) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", what, err, body)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s does not match the OpenAPI schema: %v\n%s", what, err, body)
	}
}

// checkExchange validates a request body and its answer against the
// operation they belong to.
func (o *openAPI) checkExchange(t *testing.T, method, path string, reqBody []byte, w *httptest.ResponseRecorder) {
	t.Helper()
	op, opPtr := o.operation(t, method, path)
	if reqBody != nil {
		rb, rbPtr := o.resolve(op["requestBody"].(map[string]any), opPtr+"/requestBody")
		if _, ok := rb["content"].(map[string]any)["application/json"]; !ok {
			t.Fatalf("%s %s documents no JSON request body", method, path)
		}
		validateJSON(t, o.schemaAt(t, rbPtr+"/content/application~1json/schema"), reqBody, "the request body")
	}
	status := strconv.Itoa(w.Code)
	resp, ok := op["responses"].(map[string]any)[status].(map[string]any)
	if !ok {
		t.Fatalf("%s %s answered %d, which the description does not document (is the route served?): %s", method, path, w.Code, w.Body.String())
	}
	resp, respPtr := o.resolve(resp, opPtr+"/responses/"+status)
	content, _ := resp["content"].(map[string]any)
	if content == nil {
		if w.Body.Len() != 0 {
			t.Errorf("%s %s %d: documented without a body, answered %q", method, path, w.Code, w.Body.String())
		}
		return
	}
	ct := w.Header().Get("Content-Type")
	mt, _, _ := strings.Cut(ct, ";")
	if _, ok := content[mt]; !ok {
		t.Fatalf("%s %s %d: Content-Type %q is not documented", method, path, w.Code, ct)
	}
	if mt == "application/json" {
		validateJSON(t, o.schemaAt(t, respPtr+"/content/application~1json/schema"), w.Body.Bytes(), fmt.Sprintf("the %d answer", w.Code))
	}
}

// TestOpenAPI sends requests to the real handler (over the fake Source and
// Publisher) and checks each request and answer against docs/openapi.yaml.
func TestOpenAPI(t *testing.T) {
	t.Parallel()
	o := loadOpenAPI(t)
	src := newFakeSource()
	pub := newFakePublisher()
	users := newFakeUsers()
	fillUsers(t, users)
	h, err := api.New(src, &api.Config{
		JWTSecret: secret, Notifier: src, Publisher: pub, Users: users,
		Limits:     checkpoint.Limits{MaxEventBytes: 4096},
		Rejections: &fakeRejections{rows: []api.Rejection{{ID: 1, Reason: "deleted", Detail: "the conversation was deleted", EventID: "e9", UserID: "u-42", ConversationID: "c-7", ReceivedAt: updatedAt}}},
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	live, _ := fold(t, history)
	src.set(recordOf("u-42", "c-7", &live))
	sentinel, _ := fold(t, sentinelHistory)
	src.set(recordOf("u-42", "c-sentinel", &sentinel))

	user, other, service := userToken(t, "u-42"), userToken(t, "u-43"), serviceToken(t)
	const ev = "/v1/users/u-42/conversations/c-7/evidence"
	tests := []struct {
		name       string
		method     string
		path       string
		token      string
		body       string
		wantStatus int
	}{
		{"evidence", "GET", ev, user, "", 200},
		{"evidence of an unknown conversation", "GET", "/v1/users/u-42/conversations/nope/evidence", user, "", 200},
		{"sentinel", "GET", "/v1/users/u-42/conversations/c-sentinel/evidence", service, "", 200},
		{"max_tokens", "GET", ev + "?max_tokens=80", user, "", 200},
		{"max_tokens too small", "GET", ev + "?max_tokens=5", user, "", 200},
		{"lagging", "GET", ev + "?min_cursor=100&wait=10ms", user, "", 200},
		{"bad max_tokens", "GET", ev + "?max_tokens=-1", user, "", 400},
		{"wait too long", "GET", ev + "?min_cursor=1&wait=1h", user, "", 400},
		{"no token", "GET", ev, "", "", 401},
		{"another user", "GET", ev, other, "", 403},
		{"search", "POST", ev + "/search", user, `{"query":"what about the schema?","max_tokens":500}`, 200},
		{"search without a query", "POST", ev + "/search", user, `{"query":""}`, 400},
		{"context", "POST", "/v1/users/u-42/conversations/c-7/context", user,
			`{"messages":[{"id":"m0","role":"user","content":"Draft the schema."}],"system":"Be brief.","budget":{"context_window":32768,"prompt":16000}}`, 200},
		{"rejections", "GET", "/v1/users/u-42/conversations/c-7/rejections?event_id=e9", user, "", 200},
		{"no rejections", "GET", "/v1/users/u-42/conversations/c-8/rejections", user, "", 200},
		{"rejections, bad limit", "GET", "/v1/users/u-42/conversations/c-7/rejections?limit=x", user, "", 400},
		{"delete", "DELETE", "/v1/users/u-42/conversations/c-gone", user, "", 204},
		{"delete another user's", "DELETE", "/v1/users/u-42/conversations/c-gone", other, "", 403},
		{"publish", "POST", "/v1/checkpoints", user, `{"schema":"recall.checkpoint.v1","event_id":"e1","user_id":"u-42","conversation_id":"c-7","offset":0,"prefix_digest":null,"messages":[{"id":"m0","role":"user","content":"hi"}]}`, 202},
		{"publish a delete", "POST", "/v1/checkpoints", service, `{"schema":"recall.checkpoint.v1","kind":"delete","event_id":"e2","user_id":"u-9","conversation_id":"c-7"}`, 202},
		{"publish malformed", "POST", "/v1/checkpoints", user, `{"schema":`, 400},
		{"publish for another user", "POST", "/v1/checkpoints", other, `{"schema":"recall.checkpoint.v1","event_id":"e3","user_id":"u-42","conversation_id":"c-7","messages":[]}`, 403},
		{"publish too large", "POST", "/v1/checkpoints", user, `{"schema":"recall.checkpoint.v1","event_id":"e4","user_id":"u-42","conversation_id":"c-7","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413},
		{"a user's conversations", "GET", "/v1/users/u-42/conversations?limit=2", user, "", 200},
		{"a user's conversations, bad limit", "GET", "/v1/users/u-42/conversations?limit=0", user, "", 400},
		{"another user's conversations", "GET", "/v1/users/u-42/conversations", other, "", 403},
		{"export", "GET", "/v1/users/u-42/export", service, "", 200},
		{"export another user's", "GET", "/v1/users/u-42/export", other, "", 403},
		{"delete a user", "DELETE", "/v1/users/u-9", service, "", 204},
		{"delete another user", "DELETE", "/v1/users/u-42", other, "", 403},
		{"healthz", "GET", "/healthz", "", "", 200},
		{"readyz", "GET", "/readyz", "", "", 200},
		{"metrics", "GET", "/metrics", "", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reqBody []byte
			var w *httptest.ResponseRecorder
			if tt.body != "" {
				reqBody = []byte(tt.body)
				w = post(t, h, tt.path, tt.token, tt.body)
			} else {
				w = do(t, h, tt.method, tt.path, tt.token)
			}
			if w.Code != tt.wantStatus {
				t.Errorf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body.String())
			}
			// Requests the API rejects need not match the documented body.
			if tt.wantStatus >= 400 {
				reqBody = nil
			}
			path, _, _ := strings.Cut(tt.path, "?")
			o.checkExchange(t, tt.method, path, reqBody, w)
		})
	}
}

// TestOpenAPITooManyWaiters checks the answer to a request that would wait
// past MaxWaiters, for GET …/evidence and POST …/context, against the
// description, with its documented Retry-After header.
func TestOpenAPITooManyWaiters(t *testing.T) {
	t.Parallel()
	o := loadOpenAPI(t)
	src := newFakeSource()
	b := setupWith(t, src, src, api.Config{MaxWaiters: 1})
	src.set(stateAt("u-42", "c-7", 1, 1))
	tok := userToken(t, "u-42")
	const ev = "/v1/users/u-42/conversations/c-7/evidence"
	done := make(chan int, 1)
	go func() { done <- do(t, b.h, "GET", ev+"?min_cursor=2&wait=20s", tok).Code }()
	waitGauge(t, b, 1)

	w := do(t, b.h, "GET", ev+"?min_cursor=2&wait=20s", tok)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Errorf("GET past the cap: %d, Retry-After %q; want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	o.checkExchange(t, "GET", ev, nil, w)
	body := contextBody(t, `,"min_cursor":2,"wait":"20s"`)
	w = post(t, b.h, contextPath, tok, body)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Errorf("context past the cap: %d, Retry-After %q; want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	o.checkExchange(t, "POST", contextPath, []byte(body), w)

	src.set(stateAt("u-42", "c-7", 2, 2))
	if st := <-done; st != http.StatusOK {
		t.Errorf("the waiter answered %d, want 200", st)
	}
}

// TestOpenAPIDocumentsEveryRoute checks that every operation the
// description documents is served: none is answered with the handler's
// not_found or method_not_allowed for an unmatched route.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	o := loadOpenAPI(t)
	b := setup(t)
	for _, p := range o.paths {
		item := o.doc["paths"].(map[string]any)[p.template].(map[string]any)
		for _, method := range []string{"get", "post", "delete", "put", "patch"} {
			if _, ok := item[method]; !ok {
				continue
			}
			path := regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllString(p.template, "x")
			w := do(t, b.h, strings.ToUpper(method), path, serviceToken(t))
			if w.Code == http.StatusNotFound || w.Code == http.StatusMethodNotAllowed {
				if code, _ := errorOf(t, w); code == api.CodeNotFound || code == api.CodeMethodNotAllowed {
					t.Errorf("%s %s is documented but not served (%s)", strings.ToUpper(method), p.template, code)
				}
			}
		}
	}
}
