package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/testutil/proctest"
)

// fakeUsers is an in-memory UserSource. Each user's records are kept
// ordered by conversation id, as a store lists them.
type fakeUsers struct {
	mu         sync.Mutex
	records    map[string][]evidence.Record
	entries    map[string][]api.ExportEntry
	rejections map[string][]api.Rejection
	deleted    []string

	// failAt, when set, makes the sequence named by failIn ("records",
	// "entries" or "rejections") yield err in place of its failAt-th item
	// (1 for the first).
	failIn string
	failAt int
	err    error
	// onEntry, when set, runs before each entry is yielded, with its
	// number (1 for the first).
	onEntry func(n int)
}

func newFakeUsers() *fakeUsers {
	return &fakeUsers{records: map[string][]evidence.Record{}, entries: map[string][]api.ExportEntry{}, rejections: map[string][]api.Rejection{}}
}

func (f *fakeUsers) addRecord(rec evidence.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := append(f.records[rec.UserID], rec)
	slices.SortFunc(rs, func(a, b evidence.Record) int { return strings.Compare(a.ConversationID, b.ConversationID) })
	f.records[rec.UserID] = rs
}

func (f *fakeUsers) UserConversations(_ context.Context, userID, after string, limit int) ([]api.ConversationSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []api.ConversationSummary
	for _, rec := range f.records[userID] {
		if rec.ConversationID > after && len(out) < limit {
			out = append(out, api.ConversationSummary{ConversationID: rec.ConversationID, Version: rec.Version, Cursor: rec.Cursor,
				MessageCount: rec.MessageCount, UpdatedAt: rec.UpdatedAt})
		}
	}
	return out, nil
}

// seq yields items, failing as failIn and failAt say.
func seq[T any](f *fakeUsers, name string, items []T, before func(int)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for i, v := range items {
			if f.failIn == name && f.failAt == i+1 {
				var zero T
				yield(zero, f.err)
				return
			}
			if before != nil {
				before(i + 1)
			}
			if !yield(v, nil) {
				return
			}
		}
	}
}

func (f *fakeUsers) UserRecords(_ context.Context, userID string) iter.Seq2[evidence.Record, error] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return seq(f, "records", slices.Clone(f.records[userID]), nil)
}

func (f *fakeUsers) UserEntries(_ context.Context, userID string) iter.Seq2[api.ExportEntry, error] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return seq(f, "entries", slices.Clone(f.entries[userID]), f.onEntry)
}

func (f *fakeUsers) UserRejections(_ context.Context, userID string) iter.Seq2[api.Rejection, error] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return seq(f, "rejections", slices.Clone(f.rejections[userID]), nil)
}

func (f *fakeUsers) DeleteUser(_ context.Context, userID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	delete(f.records, userID)
	delete(f.entries, userID)
	delete(f.rejections, userID)
	f.deleted = append(f.deleted, userID)
	return nil
}

// userText is in u-43's excerpts only: no answer for u-42 may carry it.
const userText = "u43-private-words"

// fillUsers gives u-42 three conversations (a focus fold whose buckets
// also make its archive, a seed fold, and one with held messages but no
// evidence yet) and two rejections, and u-43 one conversation with
// userText in its archive and a rejection.
func fillUsers(t *testing.T, f *fakeUsers) {
	t.Helper()
	focus, _ := foldFocus(t, history)
	seed, _ := fold(t, sentinelHistory)
	f.addRecord(recordOf("u-42", "c-1", &focus))
	f.addRecord(recordOf("u-42", "c-2", &seed))
	f.addRecord(evidence.Record{UserID: "u-42", ConversationID: "c-3", MessageCount: 3, PrefixDigest: checkpoint.ChainStart(), UpdatedAt: updatedAt})
	for b := evidence.Constraints; b <= evidence.RecentContext; b++ {
		for _, e := range *focus.Buckets.Get(b) {
			f.entries["u-42"] = append(f.entries["u-42"], api.ExportEntry{ConversationID: "c-1", Bucket: b, Entry: e})
		}
	}
	f.rejections["u-42"] = []api.Rejection{
		{ID: 1, Reason: "gap", Detail: "messages before offset 4 never arrived", EventID: "e1", UserID: "u-42", ConversationID: "c-1", ReceivedAt: updatedAt},
		{ID: 3, Reason: "deleted", Detail: "the conversation was deleted", EventID: "e3", UserID: "u-42", ConversationID: "c-9", ReceivedAt: updatedAt},
	}
	other, _ := foldFocus(t, `[{"id":"m0","role":"user","content":"We must keep the `+userText+` secret."},
 {"id":"m1","role":"assistant","content":"Noted."},{"id":"m2","role":"user","content":"Thanks."}]`)
	f.addRecord(recordOf("u-43", "c-1", &other))
	f.entries["u-43"] = []api.ExportEntry{{ConversationID: "c-1", Bucket: evidence.Constraints,
		Entry: evidence.Entry{Role: checkpoint.RoleUser, MessageID: "m0", Excerpt: "We must keep the " + userText + " secret.", Span: evidence.Span{0, 40}}}}
	f.rejections["u-43"] = []api.Rejection{{ID: 2, Reason: "invalid", EventID: "e-u43", UserID: "u-43", ConversationID: "c-1", ReceivedAt: updatedAt}}
}

type usersBundle struct {
	h     *api.Handler
	users *fakeUsers
	logs  *proctest.Buffer
}

func setupUsers(t *testing.T) *usersBundle {
	t.Helper()
	users := newFakeUsers()
	fillUsers(t, users)
	src := newFakeSource()
	logs := &proctest.Buffer{}
	h, err := api.New(src, &api.Config{JWTSecret: secret, Notifier: src, Users: users,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &usersBundle{h: h, users: users, logs: logs}
}

type conversationList struct {
	Conversations []map[string]any `json:"conversations"`
	Next          *string          `json:"next"`
}

func TestUserConversations(t *testing.T) {
	t.Parallel()
	b := setupUsers(t)
	for i := range 5 {
		b.users.addRecord(stateAt("u-7", fmt.Sprintf("c-%d", i), i+1, int64(i+1)))
	}
	const path = "/v1/users/u-7/conversations"
	user, other, service := userToken(t, "u-7"), userToken(t, "u-42"), serviceToken(t)
	tests := []struct {
		name       string
		target     string
		token      string
		wantStatus int
		wantCode   string
		wantIDs    []string
		wantNext   string // "" for null
	}{
		{"default limit", path, user, 200, "", []string{"c-0", "c-1", "c-2", "c-3", "c-4"}, ""},
		{"first page", path + "?limit=2", user, 200, "", []string{"c-0", "c-1"}, "c-1"},
		{"next page", path + "?limit=2&after=c-1", user, 200, "", []string{"c-2", "c-3"}, "c-3"},
		{"last page, full", path + "?limit=1&after=c-3", user, 200, "", []string{"c-4"}, ""},
		{"last page", path + "?limit=2&after=c-3", service, 200, "", []string{"c-4"}, ""},
		{"after the last", path + "?after=c-4", user, 200, "", []string{}, ""},
		{"limit 1000", path + "?limit=1000", user, 200, "", []string{"c-0", "c-1", "c-2", "c-3", "c-4"}, ""},
		{"empty after", path + "?after=", user, 200, "", []string{"c-0", "c-1", "c-2", "c-3", "c-4"}, ""},
		{"unknown user", "/v1/users/u-none/conversations", service, 200, "", []string{}, ""},
		{"limit 0", path + "?limit=0", user, 400, api.CodeInvalidLimit, nil, ""},
		{"negative limit", path + "?limit=-1", user, 400, api.CodeInvalidLimit, nil, ""},
		{"limit over 1000", path + "?limit=1001", user, 400, api.CodeInvalidLimit, nil, ""},
		{"limit not a number", path + "?limit=ten", user, 400, api.CodeInvalidLimit, nil, ""},
		{"after over 256 bytes", path + "?after=" + strings.Repeat("x", 257), user, 400, api.CodeInvalidAfter, nil, ""},
		{"after not UTF-8", path + "?after=%ff", user, 400, api.CodeInvalidAfter, nil, ""},
		{"user id over 256 bytes", "/v1/users/" + strings.Repeat("u", 257) + "/conversations", service, 400, api.CodeInvalidID, nil, ""},
		{"another user's token", path, other, 403, api.CodeForbidden, nil, ""},
		{"no token", path, "", 401, api.CodeUnauthorized, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := do(t, b.h, http.MethodGet, tt.target, tt.token)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body.String())
			}
			if tt.wantCode != "" {
				if code, _ := errorOf(t, w); code != tt.wantCode {
					t.Errorf("code %q, want %q", code, tt.wantCode)
				}
				return
			}
			var body conversationList
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Conversations == nil {
				t.Fatalf("body %s: want {\"conversations\":[…],\"next\":…}", w.Body.String())
			}
			ids := []string{}
			for _, c := range body.Conversations {
				ids = append(ids, c["conversation_id"].(string))
				if len(c) != 5 || c["updated_at"] != updatedAt.Format(time.RFC3339Nano) {
					t.Errorf("conversation %v: want conversation_id, version, cursor, message_count, updated_at", c)
				}
			}
			if !slices.Equal(ids, tt.wantIDs) {
				t.Errorf("ids %v, want %v", ids, tt.wantIDs)
			}
			if got := deref(body.Next); got != tt.wantNext {
				t.Errorf("next %q, want %q", got, tt.wantNext)
			}
			if !strings.Contains(w.Body.String(), `"next":`) {
				t.Errorf("body %s has no next", w.Body.String())
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// exportLines splits an export into its lines, each decoded.
func exportLines(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	if len(body) == 0 || body[len(body)-1] != '\n' {
		t.Fatalf("export %q does not end with a newline", body)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestUserExport checks an export's lines: every kind, in order, each with
// exactly its fields (checked against docs/openapi.yaml too), the end
// line's counts, and nothing of another user.
func TestUserExport(t *testing.T) {
	t.Parallel()
	b := setupUsers(t)
	o := loadOpenAPI(t)
	lineSchema := o.schemaAt(t, "/components/schemas/ExportLine")

	w := do(t, b.h, http.MethodGet, "/v1/users/u-42/export", userToken(t, "u-42"))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q, want application/x-ndjson", ct)
	}
	o.checkExchange(t, http.MethodGet, "/v1/users/u-42/export", nil, w)
	if strings.Contains(w.Body.String(), userText) || strings.Contains(w.Body.String(), "e-u43") {
		t.Errorf("u-42's export carries u-43's data:\n%s", w.Body.String())
	}
	lines := exportLines(t, w.Body.Bytes())
	for _, raw := range bytes.Split(bytes.TrimSuffix(w.Body.Bytes(), []byte("\n")), []byte("\n")) {
		validateJSON(t, lineSchema, raw, "an export line")
	}

	var types []string
	counts := map[string]float64{}
	for _, l := range lines {
		typ := l["type"].(string)
		if len(types) == 0 || types[len(types)-1] != typ {
			types = append(types, typ)
		}
		counts[typ]++
	}
	if want := []string{"conversation", "entry", "rejection", "end"}; !slices.Equal(types, want) {
		t.Fatalf("line types in the order %v, want %v", types, want)
	}
	end := lines[len(lines)-1]
	wantEnd := map[string]any{"type": "end", "conversations": counts["conversation"], "entries": counts["entry"], "rejections": counts["rejection"]}
	if diff := cmp.Diff(wantEnd, end); diff != "" {
		t.Errorf("end line (-want +got):\n%s", diff)
	}
	if counts["conversation"] != 3 || counts["entry"] != float64(len(b.users.entries["u-42"])) || counts["rejection"] != 2 || counts["end"] != 1 {
		t.Errorf("counts %v, want 3 conversations, %d entries, 2 rejections, 1 end", counts, len(b.users.entries["u-42"]))
	}

	// Conversations: by id, each with the evidence's buckets.
	focus, _ := foldFocus(t, history)
	var convIDs []string
	for _, l := range lines[:3] {
		convIDs = append(convIDs, l["conversation_id"].(string))
		if diff := cmp.Diff([]string{"buckets", "conversation_id", "cursor", "message_count", "omitted_entries", "prefix_digest", "type", "updated_at", "version"}, keysOf(l)); diff != "" {
			t.Errorf("conversation line keys (-want +got):\n%s", diff)
		}
	}
	if want := []string{"c-1", "c-2", "c-3"}; !slices.Equal(convIDs, want) {
		t.Errorf("conversations %v, want %v", convIDs, want)
	}
	var first struct {
		Version      int64            `json:"version"`
		Cursor       int              `json:"cursor"`
		PrefixDigest string           `json:"prefix_digest"`
		Buckets      evidence.Buckets `json:"buckets"`
	}
	firstLine, _ := json.Marshal(lines[0])
	if err := json.Unmarshal(firstLine, &first); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(focus.Buckets, first.Buckets); diff != "" {
		t.Errorf("c-1's buckets (-want +got):\n%s", diff)
	}
	if first.Version != focus.Version || first.Cursor != focus.Cursor || first.PrefixDigest != focus.PrefixDigest.String() {
		t.Errorf("c-1: %+v, want the state's version %d, cursor %d, prefix %s", first, focus.Version, focus.Cursor, focus.PrefixDigest)
	}
	// A conversation with held messages and no evidence yet.
	if l := lines[2]; l["version"] != 0.0 || l["message_count"] != 3.0 || l["prefix_digest"] != checkpoint.ChainStart().String() || l["omitted_entries"] != 0.0 {
		t.Errorf("c-3 line %v: want version 0, 3 messages, the chain start and empty buckets", l)
	}

	// Entries, in the source's order, with their bucket's name.
	entries := lines[3 : 3+len(b.users.entries["u-42"])]
	for i, l := range entries {
		want := b.users.entries["u-42"][i]
		if diff := cmp.Diff([]string{"bucket", "conversation_id", "excerpt", "index", "message_id", "role", "span", "truncated", "type"}, keysOf(l)); diff != "" {
			t.Errorf("entry line keys (-want +got):\n%s", diff)
		}
		if l["bucket"] != want.Bucket.String() || l["excerpt"] != want.Entry.Excerpt || l["conversation_id"] != "c-1" {
			t.Errorf("entry %d: %v, want %+v", i, l, want)
		}
	}

	// Rejections, without payload or detail.
	for _, l := range lines[len(lines)-3 : len(lines)-1] {
		if diff := cmp.Diff([]string{"conversation_id", "event_id", "reason", "received_at", "type"}, keysOf(l)); diff != "" {
			t.Errorf("rejection line keys (-want +got):\n%s", diff)
		}
	}
}

// TestUserExportAccess: the user's own token or a service token; another
// user's is refused; an unknown user's export is its end line alone.
func TestUserExportAccess(t *testing.T) {
	t.Parallel()
	b := setupUsers(t)
	tests := []struct {
		name       string
		target     string
		token      string
		wantStatus int
		wantBody   string
	}{
		{"service token", "/v1/users/u-43/export", serviceToken(t), 200, ""},
		{"own token", "/v1/users/u-43/export", userToken(t, "u-43"), 200, ""},
		{"unknown user", "/v1/users/u-none/export", userToken(t, "u-none"), 200, `{"type":"end","conversations":0,"entries":0,"rejections":0}` + "\n"},
		{"another user's token", "/v1/users/u-42/export", userToken(t, "u-43"), 403, ""},
		{"no token", "/v1/users/u-42/export", "", 401, ""},
		{"bad user id", "/v1/users/" + strings.Repeat("u", 257) + "/export", serviceToken(t), 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := do(t, b.h, http.MethodGet, tt.target, tt.token)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body.String())
			}
			switch {
			case tt.wantStatus != 200:
				errorOf(t, w)
				if strings.Contains(w.Body.String(), userText) {
					t.Errorf("the refusal carries the user's text: %s", w.Body.String())
				}
			case tt.wantBody != "":
				if w.Body.String() != tt.wantBody {
					t.Errorf("body %q, want %q", w.Body.String(), tt.wantBody)
				}
			default:
				lines := exportLines(t, w.Body.Bytes())
				if lines[len(lines)-1]["type"] != "end" {
					t.Errorf("the export ends with %v", lines[len(lines)-1])
				}
			}
		})
	}
}

// countingWriter is a ResponseWriter that keeps only how much was written
// and flushed.
type countingWriter struct {
	mu      sync.Mutex
	header  http.Header
	status  int
	written int
	flushed int // bytes written as of the last flush
	last    []byte
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written += len(p)
	w.last = append(w.last[:0], p[max(0, len(p)-200):]...)
	return len(p), nil
}

func (w *countingWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushed = w.written
}

func (w *countingWriter) flushedBytes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushed
}

// TestUserExportStreams: a large export is written and flushed while the
// source is still being read, so that what the handler holds stays
// bounded (a batch of about 32 KiB), whatever the export's size.
func TestUserExportStreams(t *testing.T) {
	t.Parallel()
	b := setupUsers(t)
	excerpt := strings.Repeat("word ", 40) // 200 bytes
	const n = 20000                        // 4 MB of excerpts
	big := make([]api.ExportEntry, n)
	for i := range big {
		big[i] = api.ExportEntry{ConversationID: "c-1", Bucket: evidence.RecentContext,
			Entry: evidence.Entry{Role: checkpoint.RoleUser, MessageID: "m", Index: i, Excerpt: excerpt, Span: evidence.Span{0, 200}}}
	}
	b.users.entries["u-big"] = big
	w := &countingWriter{header: http.Header{}}
	var lagging int // the most bytes of lines produced but not yet flushed
	b.users.onEntry = func(i int) {
		// Each entry line before i holds the excerpt: at least this much
		// was produced.
		produced := (i - 1) * len(excerpt)
		lagging = max(lagging, produced-w.flushedBytes())
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/users/u-big/export", nil)
	r.Header.Set("Authorization", "Bearer "+serviceToken(t))
	b.h.ServeHTTP(w, r)
	if w.status != http.StatusOK || w.written < n*len(excerpt) {
		t.Fatalf("status %d, %d bytes written; want 200 and at least %d", w.status, w.written, n*len(excerpt))
	}
	if lagging > 64<<10 {
		t.Errorf("up to %d bytes of lines were held before being flushed; want a bounded batch (about 32 KiB)", lagging)
	}
	if want := fmt.Sprintf(`{"type":"end","conversations":0,"entries":%d,"rejections":0}`+"\n", n); !strings.HasSuffix(string(w.last), want) {
		t.Errorf("the export ends with %q, want %q", w.last, want)
	}
	if w.flushedBytes() != w.written {
		t.Errorf("%d of %d bytes flushed at the end", w.flushedBytes(), w.written)
	}
}

// TestUserExportFailure: a failure before anything was sent is answered
// as usual; one after the first lines were sent cuts the stream short,
// without its end line, and is logged without any text of the user's.
func TestUserExportFailure(t *testing.T) {
	t.Parallel()
	t.Run("before the first line", func(t *testing.T) {
		t.Parallel()
		b := setupUsers(t)
		b.users.failIn, b.users.failAt, b.users.err = "records", 1, errors.New("connection reset")
		w := do(t, b.h, http.MethodGet, "/v1/users/u-42/export", userToken(t, "u-42"))
		if w.Code != http.StatusInternalServerError {
			t.Fatalf("status %d, want 500: %s", w.Code, w.Body.String())
		}
		if code, _ := errorOf(t, w); code != api.CodeInternal {
			t.Errorf("code %q, want internal", code)
		}
	})
	t.Run("after lines were sent", func(t *testing.T) {
		t.Parallel()
		b := setupUsers(t)
		// Enough entries to fill a batch or two, then a failure.
		var many []api.ExportEntry
		for i := range 1000 {
			many = append(many, api.ExportEntry{ConversationID: "c-1", Bucket: evidence.Decisions,
				Entry: evidence.Entry{Role: checkpoint.RoleUser, MessageID: "m", Index: i, Excerpt: "We agreed on the " + userText + " plan.", Span: evidence.Span{0, 30}}})
		}
		b.users.entries["u-43"] = many
		b.users.failIn, b.users.failAt, b.users.err = "entries", 900, errors.New("read timeout")
		w := do(t, b.h, http.MethodGet, "/v1/users/u-43/export", userToken(t, "u-43"))
		if w.Code != http.StatusOK {
			t.Fatalf("status %d, want 200 (sent before the failure)", w.Code)
		}
		lines := exportLines(t, w.Body.Bytes())
		if len(lines) == 0 || len(lines) >= 900 {
			t.Fatalf("%d lines, want some and fewer than the 900 before the failure", len(lines))
		}
		for _, l := range lines {
			if l["type"] == "end" {
				t.Fatal("a stream cut short carries its end line")
			}
		}
		logs := b.logs.String()
		if !strings.Contains(logs, "export cut short") || !strings.Contains(logs, "read timeout") {
			t.Errorf("the failure is not logged: %q", logs)
		}
		if strings.Contains(logs, userText) || strings.Contains(logs, "u-43") {
			t.Errorf("the log carries the user's text or id: %q", logs)
		}
	})
}

func TestDeleteUser(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		target      string
		token       string
		wantStatus  int
		wantDeleted []string
	}{
		{"own token", "/v1/users/u-42", userToken(t, "u-42"), 204, []string{"u-42"}},
		{"service token", "/v1/users/u-42", serviceToken(t), 204, []string{"u-42"}},
		{"unknown user", "/v1/users/u-none", userToken(t, "u-none"), 204, []string{"u-none"}},
		{"another user's token", "/v1/users/u-42", userToken(t, "u-43"), 403, nil},
		{"no token", "/v1/users/u-42", "", 401, nil},
		{"bad user id", "/v1/users/" + strings.Repeat("u", 257), serviceToken(t), 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupUsers(t)
			w := do(t, b.h, http.MethodDelete, tt.target, tt.token)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body.String())
			}
			if tt.wantStatus == 204 && w.Body.Len() != 0 {
				t.Errorf("204 with a body: %q", w.Body.String())
			}
			if tt.wantStatus != 204 {
				errorOf(t, w)
			}
			if !slices.Equal(b.users.deleted, tt.wantDeleted) {
				t.Errorf("deleted users %v, want %v", b.users.deleted, tt.wantDeleted)
			}
			if len(b.users.records["u-43"]) != 1 {
				t.Error("u-43's conversation is gone")
			}
		})
	}
	t.Run("failure", func(t *testing.T) {
		t.Parallel()
		b := setupUsers(t)
		b.users.err = context.DeadlineExceeded
		if w := do(t, b.h, http.MethodDelete, "/v1/users/u-42", serviceToken(t)); w.Code != http.StatusServiceUnavailable {
			t.Errorf("status %d, want 503: %s", w.Code, w.Body.String())
		}
	})
}

// TestUserRoutesWithoutUsers: a handler with no UserSource answers the
// user routes 503 (after checking the token), never 404.
func TestUserRoutesWithoutUsers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, r := range []struct{ method, target string }{
		{http.MethodGet, "/v1/users/u-42/conversations"},
		{http.MethodGet, "/v1/users/u-42/export"},
		{http.MethodDelete, "/v1/users/u-42"},
	} {
		if w := do(t, b.h, r.method, r.target, userToken(t, "u-42")); w.Code != http.StatusServiceUnavailable {
			t.Errorf("%s %s: status %d, want 503", r.method, r.target, w.Code)
		}
		if w := do(t, b.h, r.method, r.target, userToken(t, "u-43")); w.Code != http.StatusForbidden {
			t.Errorf("%s %s with another user's token: status %d, want 403", r.method, r.target, w.Code)
		}
	}
}

// notesUsers is a fakeUsers that holds model notes (api.UserNoteSource).
type notesUsers struct {
	*fakeUsers
	notes []api.ExportNote
}

func (n notesUsers) UserNotes(_ context.Context, userID string) iter.Seq2[api.ExportNote, error] {
	var mine []api.ExportNote
	if userID == "u-42" {
		mine = n.notes
	}
	return seq(n.fakeUsers, "notes", mine, nil)
}

// TestUserExportNotes: with the model lane, an export lists the notes
// after the archive's entries, each with exactly its fields, and counts
// them in its end line.
func TestUserExportNotes(t *testing.T) {
	t.Parallel()
	users := newFakeUsers()
	fillUsers(t, users)
	ns := notesUsers{fakeUsers: users, notes: []api.ExportNote{
		{ConversationID: "c-1", Note: evidence.Note{Bucket: evidence.Decisions, Role: checkpoint.RoleUser, MessageID: "m0", Index: 0, Text: "Ship by Friday."}},
		{ConversationID: "c-1", Note: evidence.Note{Bucket: evidence.OpenWork, Role: checkpoint.RoleAssistant, MessageID: "m1", Index: 1, Ord: 0, Text: "Draft the schema", Truncated: true}},
	}}
	src := newFakeSource()
	h, err := api.New(src, &api.Config{JWTSecret: secret, Notifier: src, Users: ns})
	if err != nil {
		t.Fatal(err)
	}
	w := do(t, h, http.MethodGet, "/v1/users/u-42/export", userToken(t, "u-42"))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	o := loadOpenAPI(t)
	lineSchema := o.schemaAt(t, "/components/schemas/ExportLine")
	for _, raw := range bytes.Split(bytes.TrimSuffix(w.Body.Bytes(), []byte("\n")), []byte("\n")) {
		validateJSON(t, lineSchema, raw, "an export line")
	}
	lines := exportLines(t, w.Body.Bytes())
	var types []string
	for _, l := range lines {
		if typ := l["type"].(string); len(types) == 0 || types[len(types)-1] != typ {
			types = append(types, typ)
		}
	}
	if want := []string{"conversation", "entry", "note", "rejection", "end"}; !slices.Equal(types, want) {
		t.Fatalf("line types in the order %v, want %v", types, want)
	}
	var note map[string]any
	for _, l := range lines {
		if l["type"] == "note" {
			note = l
			break
		}
	}
	want := map[string]any{"type": "note", "conversation_id": "c-1", "bucket": "decisions", "role": "user", "message_id": "m0",
		"index": 0.0, "text": "Ship by Friday.", "truncated": false}
	if diff := cmp.Diff(want, note); diff != "" {
		t.Errorf("note line (-want +got):\n%s", diff)
	}
	if end := lines[len(lines)-1]; end["notes"] != 2.0 {
		t.Errorf("end line %v, want notes 2", end)
	}
}

// forgetfulUsers deletes a user's conversations from the fake source
// without waking anyone, as another process's deletion does for this one.
type forgetfulUsers struct {
	*fakeUsers
	src *fakeSource
}

func (f forgetfulUsers) DeleteUser(ctx context.Context, userID string) error {
	f.src.mu.Lock()
	for k := range f.src.recs {
		if k.user == userID {
			delete(f.src.recs, k)
		}
	}
	f.src.mu.Unlock()
	return f.fakeUsers.DeleteUser(ctx, userID)
}

// TestDeleteUserAnswersWaiters checks that a request waiting on one of a
// user's conversations when the user is deleted through this process
// answers what a read after the deletion gives, not what it read before.
func TestDeleteUserAnswersWaiters(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	src.set(stateAt("u-7", "c-1", 2, 1))
	h, err := api.New(src, &api.Config{JWTSecret: secret, Notifier: src, Users: forgetfulUsers{newFakeUsers(), src}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	got := make(chan response, 1)
	go func() {
		r, err := get(t.Context(), t, srv, "/v1/users/u-7/conversations/c-1/evidence?min_cursor=9&wait=2s", userToken(t, "u-7"))
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	waitReads(t, src, 1)
	if w := do(t, h, http.MethodDelete, "/v1/users/u-7", userToken(t, "u-7")); w.Code != http.StatusNoContent {
		t.Fatalf("DELETE: status %d", w.Code)
	}
	if r := <-got; r.Cursor != 0 {
		t.Errorf("the waiter answered cursor %d after the user's deletion, want the deleted key's (0)", r.Cursor)
	}
}
