// Package fakemodel is a scripted OpenAI-compatible chat-completions
// endpoint (net/http/httptest) for the model lane's tests: each test says
// how it answers each request, and reads back what recall sent.
package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one request the server received.
type Request struct {
	// Body is the request body as sent.
	Body []byte
	// Authorization is the Authorization header.
	Authorization string
	// Model, System and User are the body's model and messages.
	Model, System, User string
	// Format is response_format.type ("" when absent).
	Format string
	// Sources are the indexes of the blocks inside <new_messages>.
	Sources []int
	// Roles maps each source to its role ("user" or "assistant").
	Roles map[int]string
	// Texts maps each block's index (context or new) to its text.
	Texts map[int]string
	// Ctx ends when the client abandons the request.
	Ctx context.Context
}

// Reply is how the server answers one request.
type Reply struct {
	// Status is the HTTP status. Defaults to 200.
	Status int
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Body is the response body, sent as it is when Content is empty.
	Body string
	// Content, when Body is empty, is the text of a chat completion with
	// usage TokensIn and TokensOut.
	Content             string
	TokensIn, TokensOut int
	// Delay holds the answer back (until the client gives up, if longer).
	Delay time.Duration
}

// Script answers the nth request (from 0).
type Script func(n int, r *Request) Reply

// Server is the fake endpoint.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   Script
	requests []*Request
	inFlight int
	maxIn    int
	arrived  chan struct{}
}

// Start starts a server that answers with script (NoteEach when nil).
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	s := &Server{script: script, arrived: make(chan struct{}, 1024)}
	if s.script == nil {
		s.script = NoteEach
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL returns the base URL to configure recall with (…/v1).
func (s *Server) URL() string { return s.Server.URL + "/v1" }

// SetScript replaces the script.
func (s *Server) SetScript(script Script) {
	s.mu.Lock()
	s.script = script
	s.mu.Unlock()
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// MaxInFlight returns the most requests the server held at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxIn
}

// WaitRequests waits until n requests have arrived.
func (s *Server) WaitRequests(t testing.TB, n int, timeout time.Duration) []*Request {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if r := s.Requests(); len(r) >= n {
			return r
		}
		select {
		case <-s.arrived:
		case <-deadline:
			t.Fatalf("fake model: %d requests after %s, want %d", len(s.Requests()), timeout, n)
		}
	}
}

// blockRE finds a transcript's blocks.
var blockRE = regexp.MustCompile(`(?s)<(user|assistant)_message index="(\d+)">\n(.*?)\n</(?:user|assistant)_message>\n`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	req := &Request{Body: body, Authorization: r.Header.Get("Authorization"), Roles: map[int]string{}, Texts: map[int]string{}, Ctx: r.Context()}
	var in struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat *struct {
			Type string `json:"type"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	req.Model = in.Model
	for _, m := range in.Messages {
		switch m.Role {
		case "system":
			req.System = m.Content
		case "user":
			req.User = m.Content
		}
	}
	if in.ResponseFormat != nil {
		req.Format = in.ResponseFormat.Type
	}
	_, fresh, _ := strings.Cut(req.User, "<new_messages>\n")
	for _, m := range blockRE.FindAllStringSubmatch(req.User, -1) {
		i, _ := strconv.Atoi(m[2])
		req.Texts[i] = m[3]
	}
	for _, m := range blockRE.FindAllStringSubmatch(fresh, -1) {
		i, _ := strconv.Atoi(m[2])
		req.Sources = append(req.Sources, i)
		req.Roles[i] = m[1]
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	s.inFlight++
	s.maxIn = max(s.maxIn, s.inFlight)
	script := s.script
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	rep := script(n, req)
	if rep.Delay > 0 {
		t := time.NewTimer(rep.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if rep.Body != "" || status != http.StatusOK {
		io.WriteString(w, rep.Body)
		return
	}
	io.WriteString(w, Completion(rep.Content, rep.TokensIn, rep.TokensOut))
}

// Completion returns a chat-completion body whose message's content is
// content, with usage.
func Completion(content string, in, out int) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
	return string(b)
}

// Note is a note as the model writes it.
type Note struct {
	Bucket string `json:"bucket"`
	Text   string `json:"text"`
	Source int    `json:"source"`
}

// Notes returns the JSON answer holding notes.
func Notes(notes ...Note) string {
	if notes == nil {
		notes = []Note{}
	}
	b, _ := json.Marshal(map[string]any{"notes": notes})
	return string(b)
}

// NoteText is the text NoteEach writes for the message of index i.
func NoteText(i int) string { return fmt.Sprintf("Model note on message %d.", i) }

// NoteEach answers every request with one decisions note per source
// (NoteText), and usage of 100 tokens in and 20 out.
func NoteEach(_ int, r *Request) Reply {
	var notes []Note
	for _, i := range r.Sources {
		notes = append(notes, Note{Bucket: "decisions", Text: NoteText(i), Source: i})
	}
	return Reply{Content: Notes(notes...), TokensIn: 100, TokensOut: 20}
}

// Hold returns a script that answers with then once release is called (or
// answers nothing once the client abandons the request), and release.
func Hold(then Script) (script Script, release func()) {
	ch := make(chan struct{})
	var once sync.Once
	return func(n int, r *Request) Reply {
			select {
			case <-ch:
			case <-r.Ctx.Done():
			}
			return then(n, r)
		}, func() {
			once.Do(func() { close(ch) })
		}
}
