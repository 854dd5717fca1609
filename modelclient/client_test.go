package modelclient

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/modelnote"
	"github.com/recallhq/recall/testutil/fakemodel"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const secretKey = "sk-test-SECRET-do-not-print"

// call is a small call: message 3 new, 1 as context.
func call() (modelnote.Call, modelnote.Config) {
	cfg := modelnote.Config{ContextTurns: 2}
	held := []modelnote.Message{
		{Index: 1, Role: checkpoint.RoleUser, ID: "m1", Text: "We must ship by Friday."},
		{Index: 3, Role: checkpoint.RoleUser, ID: "m3", Text: "Use Postgres, not MySQL."},
	}
	return modelnote.Plan(held, 2, 4, &cfg), cfg
}

func newClient(t *testing.T, url string, timeout time.Duration) *Client {
	t.Helper()
	c, err := New(&Config{URL: url, Model: "test-model", APIKey: secretKey, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRequestGolden: the exact body recall posts, in each form of
// structured output. go test ./modelclient -run Golden -update rewrites it.
func TestRequestGolden(t *testing.T) {
	t.Parallel()
	c := newClient(t, "http://127.0.0.1:1/v1", 0)
	ca, cfg := call()
	var got strings.Builder
	for f := FormatJSONSchema; f <= FormatPlain; f++ {
		b, err := c.Body(ca.Prompt(&cfg), ca.Schema(), f)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString("--- " + f.String() + "\n" + string(b) + "\n")
	}
	path := filepath.Join("testdata", "request.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("request bodies (-want +got):\n%s", diff)
	}
}

func TestComplete(t *testing.T) {
	t.Parallel()
	srv := fakemodel.Start(t, nil)
	c := newClient(t, srv.URL(), 0)
	ca, cfg := call()
	comp, err := c.Complete(context.Background(), ca.Prompt(&cfg), ca.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if comp.TokensIn != 100 || comp.TokensOut != 20 || c.Format() != FormatJSONSchema {
		t.Errorf("completion %+v, want 100 tokens in, 20 out, json_schema", comp)
	}
	a, err := modelnote.ParseAnswer(comp.Content, &ca, &cfg)
	if err != nil || len(a.Notes) != 1 || a.Notes[0].Index != 3 {
		t.Errorf("answer %+v, %v: want one note of message 3", a, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+secretKey || reqs[0].Model != "test-model" || reqs[0].Format != "json_schema" {
		t.Fatalf("requests %+v", reqs)
	}
	if diff := cmp.Diff([]int{3}, reqs[0].Sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
}

// TestFallbackFormats: an endpoint that rejects a JSON schema is asked for
// a JSON object, then for plain JSON, within the same call; the form it
// took is where the next call starts.
func TestFallbackFormats(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		reject []string
		want   []string // the formats of the requests of two calls
	}{
		{"schema taken", nil, []string{"json_schema", "json_schema"}},
		{"schema rejected", []string{"json_schema"}, []string{"json_schema", "json_object", "json_object"}},
		{"both rejected", []string{"json_schema", "json_object"}, []string{"json_schema", "json_object", "", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.Start(t, func(n int, r *fakemodel.Request) fakemodel.Reply {
				for _, f := range tt.reject {
					if r.Format == f {
						return fakemodel.Reply{Status: http.StatusBadRequest, Body: `{"error":{"message":"response_format not supported"}}`}
					}
				}
				return fakemodel.NoteEach(n, r)
			})
			c := newClient(t, srv.URL(), 0)
			ca, cfg := call()
			for range 2 {
				if _, err := c.Complete(context.Background(), ca.Prompt(&cfg), ca.Schema()); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, r := range srv.Requests() {
				got = append(got, r.Format)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("formats (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name          string
		reply         fakemodel.Reply
		timeout       time.Duration
		wantKind      Kind
		wantStatus    int
		wantRetry     time.Duration // at least
		wantTransient bool
		wantOutcome   string
	}{
		{"429 with Retry-After in seconds", fakemodel.Reply{Status: 429, RetryAfter: "7"}, 0, KindStatus, 429, 7 * time.Second, true, "rate_limited"},
		{"429 with Retry-After as a date", fakemodel.Reply{Status: 429, RetryAfter: date}, 0, KindStatus, 429, 80 * time.Second, true, "rate_limited"},
		{"503", fakemodel.Reply{Status: 503}, 0, KindStatus, 503, 0, true, "server_error"},
		{"500 echoing the prompt", fakemodel.Reply{Status: 500, Body: "We must ship by Friday."}, 0, KindStatus, 500, 0, true, "server_error"},
		{"401", fakemodel.Reply{Status: 401, Body: `{"error":"bad key ` + secretKey + `"}`}, 0, KindStatus, 401, 0, false, "client_error"},
		{"slower than the timeout", fakemodel.Reply{Delay: 5 * time.Second, Content: fakemodel.Notes()}, 200 * time.Millisecond, KindTimeout, 0, 0, true, "timeout"},
		{"not a chat completion", fakemodel.Reply{Body: `We must ship by Friday.`}, 0, KindBadResponse, 0, 0, false, "bad_response"},
		{"no content", fakemodel.Reply{Body: `{"choices":[{"message":{"role":"assistant","content":null,"refusal":"no"}}]}`}, 0, KindBadResponse, 0, 0, false, "bad_response"},
		{"no choices", fakemodel.Reply{Body: `{"choices":[]}`}, 0, KindBadResponse, 0, 0, false, "bad_response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.Start(t, func(int, *fakemodel.Request) fakemodel.Reply { return tt.reply })
			c := newClient(t, srv.URL(), tt.timeout)
			ca, cfg := call()
			start := time.Now()
			_, err := c.Complete(context.Background(), ca.Prompt(&cfg), ca.Schema())
			if err == nil {
				t.Fatal("no error")
			}
			if tt.timeout > 0 && time.Since(start) > tt.timeout+2*time.Second {
				t.Errorf("the call took %s, over its timeout %s", time.Since(start), tt.timeout)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %#v, not an *Error", err)
			}
			if e.Kind != tt.wantKind || e.Status != tt.wantStatus || e.RetryAfter() < tt.wantRetry || e.Outcome() != tt.wantOutcome {
				t.Errorf("err = %+v (%s), want kind %d, status %d, retry after at least %s, outcome %s", e, e.Outcome(), tt.wantKind, tt.wantStatus, tt.wantRetry, tt.wantOutcome)
			}
			if e.Transient() != tt.wantTransient {
				t.Errorf("Transient() of %v = %v", err, !tt.wantTransient)
			}
			for _, secret := range []string{secretKey, "Friday", "Postgres"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error %q quotes %q", err, secret)
				}
			}
		})
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	cfg := Config{URL: "http://user:hunter2@127.0.0.1:1/v1?api_key=qwerty", Model: "m", APIKey: secretKey, Timeout: time.Second}
	c, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	ca, mcfg := call()
	_, err = c.Complete(context.Background(), ca.Prompt(&mcfg), ca.Schema())
	if err == nil {
		t.Fatal("a call to a closed port succeeded")
	}
	for _, s := range []string{err.Error(), cfg.String(), c.Endpoint()} {
		for _, secret := range []string{secretKey, "hunter2", "qwerty"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q prints %q", s, secret)
			}
		}
	}
	var e *Error
	if !errors.As(err, &e) || !e.Transient() || e.Outcome() != "transport_error" {
		t.Errorf("a refused connection: %#v", err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []*Config{nil, {Model: "m"}, {URL: "localhost:8000", Model: "m"}, {URL: "ftp://x/v1", Model: "m"},
		{URL: "http://x/v1"}, {URL: "http://x/v1", Model: "m", Timeout: -time.Second}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted it", cfg)
		} else if !strings.Contains(err.Error(), "RECALL_MODEL") && !strings.Contains(err.Error(), "timeout") {
			t.Errorf("New(%+v): %v does not say how to fix it", cfg, err)
		}
	}
	for _, u := range []string{"http://x/v1", "http://x/v1/", "http://x/v1/chat/completions"} {
		c, err := New(&Config{URL: u, Model: "m"})
		if err != nil || c.Endpoint() != "http://x/v1/chat/completions" {
			t.Errorf("New(%q): %v, %v", u, c, err)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"-3", 0}, {"12", 12 * time.Second}, {"999999", MaxRetryAfter}, {"soon", 0},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second}, {now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := retryAfter(tt.in, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
