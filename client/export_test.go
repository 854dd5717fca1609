package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/client"
)

// These tests need answers recall gives only when something breaks: a
// stream cut short, a proxy's error page, a full waiter pool.

const (
	convLine = `{"type":"conversation","conversation_id":"c","version":1,"cursor":1,"message_count":2,"prefix_digest":"` +
		"0000000000000000000000000000000000000000000000000000000000000000" + `","omitted_entries":0,"buckets":{"constraints":[],"decisions":[],"open_work":[],"recent_context":[]},"updated_at":null}` + "\n"
	endLine = `{"type":"end","conversations":1,"entries":0,"rejections":0}` + "\n"
)

func TestExportIncomplete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		handler          http.HandlerFunc
		wantLines        int
		wantIncomplete   bool
		wantErrSubstring string
	}{
		{
			name: "complete",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, convLine+endLine)
			},
			wantLines: 2,
		},
		{
			name: "ends without the end line",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, convLine)
			},
			wantLines: 1, wantIncomplete: true,
		},
		{
			name: "connection dropped mid-line",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, convLine+endLine[:10])
				http.NewResponseController(w).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
			},
			wantLines: 1, wantIncomplete: true,
		},
		{
			name: "lines after the end line",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, convLine+endLine+convLine)
			},
			wantLines: 2, wantErrSubstring: "after its end line",
		},
		{
			name: "not JSON",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "<html>\n")
			},
			wantErrSubstring: "not JSON",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			c, err := client.New(srv.URL, "t")
			if err != nil {
				t.Fatal(err)
			}
			lines := 0
			var gotErr error
			for line, err := range c.Export(t.Context(), "u") {
				if err != nil {
					if gotErr != nil {
						t.Fatalf("a second error after %v: %v", gotErr, err)
					}
					gotErr = err
					continue
				}
				if gotErr != nil {
					t.Fatalf("a line after the error %v", gotErr)
				}
				if line == nil || line.Type == "" {
					t.Fatalf("line %d: %+v", lines, line)
				}
				lines++
			}
			if lines != tt.wantLines {
				t.Errorf("%d lines, want %d", lines, tt.wantLines)
			}
			switch {
			case tt.wantIncomplete:
				if !errors.Is(gotErr, client.ErrExportIncomplete) {
					t.Errorf("err = %v, want ErrExportIncomplete", gotErr)
				}
			case tt.wantErrSubstring != "":
				if gotErr == nil || !strings.Contains(gotErr.Error(), tt.wantErrSubstring) || errors.Is(gotErr, client.ErrExportIncomplete) {
					t.Errorf("err = %v, want one containing %q", gotErr, tt.wantErrSubstring)
				}
			case gotErr != nil:
				t.Errorf("err = %v, want none", gotErr)
			}
		})
	}
}

func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   client.APIError
	}{
		{
			name: "too many waiters", status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "3"},
			body: `{"error":{"code":"too_many_waiters","message":"retry"}}`,
			want: client.APIError{Status: 429, Code: "too_many_waiters", Message: "retry", RetryAfter: 3 * time.Second},
		},
		{
			name: "a proxy's page", status: http.StatusBadGateway, body: "<html>bad gateway</html>",
			want: client.APIError{Status: 502, Code: "http_502", Message: "Bad Gateway"},
		},
		{
			name: "unavailable without Retry-After", status: http.StatusServiceUnavailable,
			body: `{"error":{"code":"unavailable","message":"the store did not answer in time; retry"}}`,
			want: client.APIError{Status: 503, Code: "unavailable", Message: "the store did not answer in time; retry"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			c, err := client.New(srv.URL, "t")
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Evidence(t.Context(), "u", "c", &client.EvidenceOptions{MinCursor: 3, Wait: 2 * time.Second})
			got, ok := errors.AsType[*client.APIError](err)
			if !ok {
				t.Fatalf("err = %v, want *client.APIError", err)
			}
			if *got != tt.want {
				t.Fatalf("err = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// TestRequest checks what the client sends: the method, the escaped path,
// the query, the headers and the body.
func TestRequest(t *testing.T) {
	t.Parallel()
	var got *http.Request
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, gotBody = r, string(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"conversations":[],"next":null}`)
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL+"/prefix/", "tok", client.WithUserAgent("test-agent"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListConversations(t.Context(), "u/1", &client.ListOptions{Limit: 2, After: "a b"}); err != nil {
		t.Fatal(err)
	}
	if got.Method != http.MethodGet || got.URL.EscapedPath() != "/prefix/v1/users/u%2F1/conversations" ||
		got.URL.RawQuery != "after=a+b&limit=2" || got.Header.Get("Authorization") != "Bearer tok" || got.Header.Get("User-Agent") != "test-agent" {
		t.Fatalf("request %s %s?%s with %v", got.Method, got.URL.EscapedPath(), got.URL.RawQuery, got.Header)
	}
	if _, err := c.Search(t.Context(), "u", "c", "q", 7); err != nil && !errors.As(err, new(*client.APIError)) {
		// The answer is not an evidence, but it decodes: only the request matters here.
		t.Fatal(err)
	}
	if got.Method != http.MethodPost || got.URL.Path != "/prefix/v1/users/u/conversations/c/evidence/search" ||
		gotBody != `{"query":"q","max_tokens":7}` || got.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("search request %s %s with body %s", got.Method, got.URL.Path, gotBody)
	}
}
