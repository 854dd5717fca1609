package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
	"github.com/recallhq/recall/worker"
)

// usersRun is `recall run` (worker and API) on a database and a NATS
// server of the test's own.
type usersRun struct {
	t      *testing.T
	base   string
	secret string
	pool   *pgxpool.Pool
	js     jetstream.JetStream
	nc     *nats.Conn
}

func startUsersRun(t *testing.T) *usersRun {
	t.Helper()
	ns := natstest.Start(t)
	cfg := runConfig(pgtest.NewDatabase(t), ns.URL())
	secret := cfg.JWTSecret
	a := startApp(t, cfg, roles{worker: true, api: true})
	pool := pgtest.Pool(t, cfg.DatabaseURL)
	nc, js := natstest.Connect(t, ns.URL())
	return &usersRun{t: t, base: "http://" + a.Addr, secret: secret, pool: pool, js: js, nc: nc}
}

func (u *usersRun) token(sub string, service bool) string {
	u.t.Helper()
	tok, err := apiclient.Sign([]byte(u.secret), sub, time.Hour, &apiclient.TokenOptions{Service: service})
	if err != nil {
		u.t.Fatal(err)
	}
	return tok
}

// call sends a request as sub and returns the status and body.
func (u *usersRun) call(method, path, sub string) (int, []byte) {
	u.t.Helper()
	req, _ := http.NewRequestWithContext(u.t.Context(), method, u.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+u.token(sub, sub == "svc"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		u.t.Fatal(err)
	}
	return res.StatusCode, b
}

// publish publishes a snapshot of a three-message conversation (two user
// turns, so that the first two are summarised) that carries marker.
func (u *usersRun) publish(eventID, userID, conversationID, marker string) {
	u.t.Helper()
	msgs := []json.RawMessage{
		json.RawMessage(fmt.Sprintf(`{"id":"m0","role":"user","content":"We must keep %s in the plan. The budget is 100 euros."}`, marker)),
		json.RawMessage(fmt.Sprintf(`{"id":"m1","role":"assistant","content":"Agreed: %s stays, and we decided on Postgres."}`, marker)),
		json.RawMessage(`{"id":"m2","role":"user","content":"What next?"}`),
	}
	u.publishRaw(eventID, pt.Event(eventID, userID, conversationID, msgs))
}

func (u *usersRun) publishRaw(eventID string, data []byte) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.t.Context(), 10*time.Second)
	defer cancel()
	if _, err := u.js.PublishMsg(ctx, &nats.Msg{Subject: worker.DefaultSubject, Data: data, Header: nats.Header{"Nats-Msg-Id": []string{eventID}}}); err != nil {
		u.t.Fatalf("publish %s: %v", eventID, err)
	}
}

// waitCursor waits until the conversation's evidence reaches cursor 2.
func (u *usersRun) waitCursor(userID, conversationID string) {
	u.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body := u.call(http.MethodGet, fmt.Sprintf("/v1/users/%s/conversations/%s/evidence?min_cursor=2&wait=5s", userID, conversationID), "svc")
		var ev struct{ Cursor int }
		if status == http.StatusOK && json.Unmarshal(body, &ev) == nil && ev.Cursor >= 2 {
			return
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("%s/%s: no cursor 2 after 30s: %d %s", userID, conversationID, status, body)
		}
	}
}

// waitRejection waits until the event is recorded as rejected and returns
// the reason.
func (u *usersRun) waitRejection(userID, conversationID, eventID string) string {
	u.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := u.call(http.MethodGet, fmt.Sprintf("/v1/users/%s/conversations/%s/rejections?event_id=%s", userID, conversationID, eventID), "svc")
		var r struct {
			Rejections []struct{ Reason string } `json:"rejections"`
		}
		if json.Unmarshal(body, &r) == nil && len(r.Rejections) > 0 {
			return r.Rejections[0].Reason
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("event %s: no rejection after 30s", eventID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scan counts where marker is: the rows of every column of every table
// (River's included) and the messages the stream still stores.
func (u *usersRun) scan(marker string) map[string]int {
	u.t.Helper()
	ctx := u.t.Context()
	rows, err := u.pool.Query(ctx, `
SELECT c.table_schema, c.table_name, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t USING (table_schema, table_name)
WHERE t.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		u.t.Fatal(err)
	}
	type column struct{ schema, table, name, typ string }
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (column, error) {
		var c column
		return c, r.Scan(&c.schema, &c.table, &c.name, &c.typ)
	})
	if err != nil || len(cols) == 0 {
		u.t.Fatalf("list columns: %d, %v", len(cols), err)
	}
	out := map[string]int{}
	for _, c := range cols {
		col := pgx.Identifier{c.name}.Sanitize()
		cond := fmt.Sprintf("strpos(%s::text, $1) > 0", col)
		if c.typ == "bytea" {
			cond = fmt.Sprintf("position(convert_to($1, 'UTF8') in %s) > 0", col)
		}
		var n int
		if err := u.pool.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", pgx.Identifier{c.schema, c.table}.Sanitize(), cond), marker).Scan(&n); err != nil {
			u.t.Fatalf("scan %s.%s: %v", c.table, c.name, err)
		}
		if n > 0 {
			out[c.table+"."+c.name] = n
		}
	}
	s, err := u.js.Stream(ctx, worker.DefaultStream)
	if err != nil {
		u.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		u.t.Fatal(err)
	}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		if m, err := s.GetMsg(ctx, seq); err == nil && bytes.Contains(m.Data, []byte(marker)) {
			out["stream"]++
		}
	}
	return out
}

// TestUserRoutes runs the user routes end to end on `recall run`: two
// users' conversations go through the stream and the worker; the listing
// pages through one user's, the export holds all of them (and nothing of
// the other user's), and after DELETE /v1/users/{user_id} no table nor
// the stream holds the user's text, each deleted key rejects later events
// as deleted, a new conversation id is accepted, and the other user's
// data is unchanged.
func TestUserRoutes(t *testing.T) {
	t.Parallel()
	u := startUsersRun(t)
	markerA, markerB := fmt.Sprintf("ALPHA%dX", time.Now().UnixNano()), fmt.Sprintf("BRAVO%dX", time.Now().UnixNano())

	for _, c := range []string{"c1", "c2", "c3"} {
		u.publish("e-a-"+c, "u-a", c, markerA)
	}
	u.publish("e-b-c1", "u-b", "c1", markerB)
	// An event the worker rejects (a role no message may have), recorded
	// with its payload, for a key that holds no conversation.
	bad := []byte(fmt.Sprintf(`{"schema":%q,"event_id":"e-a-bad","user_id":"u-a","conversation_id":"c-bad","messages":[{"role":"wizard","content":%q}]}`,
		checkpoint.Schema, markerA))
	u.publishRaw("e-a-bad", bad)
	for _, c := range []string{"c1", "c2", "c3"} {
		u.waitCursor("u-a", c)
	}
	u.waitCursor("u-b", "c1")
	if reason := u.waitRejection("u-a", "c-bad", "e-a-bad"); reason != string(checkpoint.ReasonInvalid) {
		t.Fatalf("the bad event was rejected as %s, want invalid", reason)
	}

	// The listing, a page at a time.
	type page struct {
		Conversations []struct {
			ConversationID string `json:"conversation_id"`
			Cursor         int    `json:"cursor"`
			MessageCount   int    `json:"message_count"`
		} `json:"conversations"`
		Next *string `json:"next"`
	}
	list := func(query, sub string) (page, int) {
		t.Helper()
		status, body := u.call(http.MethodGet, "/v1/users/u-a/conversations"+query, sub)
		var p page
		if status == http.StatusOK {
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("listing %s: %v", body, err)
			}
		}
		return p, status
	}
	p, status := list("?limit=2", "u-a")
	if status != http.StatusOK || len(p.Conversations) != 2 || p.Conversations[0].ConversationID != "c1" ||
		p.Conversations[1].ConversationID != "c2" || p.Next == nil || *p.Next != "c2" {
		t.Fatalf("first page: %d %+v; want c1, c2 and next c2", status, p)
	}
	if c := p.Conversations[0]; c.Cursor != 2 || c.MessageCount != 3 {
		t.Errorf("c1: %+v, want cursor 2 of 3 messages", c)
	}
	p, _ = list("?limit=2&after=c2", "u-a")
	if len(p.Conversations) != 1 || p.Conversations[0].ConversationID != "c3" || p.Next != nil {
		t.Fatalf("second page: %+v; want c3 and next null", p)
	}
	if _, status := list("", "u-b"); status != http.StatusForbidden {
		t.Errorf("u-b listing u-a's conversations: %d, want 403", status)
	}
	if _, status := list("?limit=1001", "u-a"); status != http.StatusBadRequest {
		t.Errorf("limit 1001: %d, want 400", status)
	}

	// The export: every kind of line, in order, and nothing of u-b's.
	status, body := u.call(http.MethodGet, "/v1/users/u-a/export", "u-a")
	if status != http.StatusOK {
		t.Fatalf("export: %d %s", status, body)
	}
	if bytes.Contains(body, []byte(markerB)) {
		t.Error("u-a's export carries u-b's text")
	}
	if !bytes.Contains(body, []byte(markerA)) {
		t.Error("u-a's export does not carry u-a's text")
	}
	var kinds []string
	counts := map[string]int{}
	var end struct{ Conversations, Entries, Rejections int }
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Type           string `json:"type"`
			ConversationID string `json:"conversation_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("export line %q: %v", sc.Bytes(), err)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != line.Type {
			kinds = append(kinds, line.Type)
		}
		counts[line.Type]++
		if line.Type == "end" {
			_ = json.Unmarshal(sc.Bytes(), &end)
		}
	}
	if want := []string{"conversation", "entry", "rejection", "end"}; !slices.Equal(kinds, want) {
		t.Fatalf("export lines in the order %v, want %v", kinds, want)
	}
	if counts["conversation"] != 3 || counts["rejection"] != 1 || counts["entry"] < 3 ||
		end.Conversations != counts["conversation"] || end.Entries != counts["entry"] || end.Rejections != counts["rejection"] {
		t.Errorf("export counts %v, end line %+v; want 3 conversations, entries, 1 rejection, and an end line that counts them", counts, end)
	}
	if status, _ := u.call(http.MethodGet, "/v1/users/u-a/export", "u-b"); status != http.StatusForbidden {
		t.Errorf("u-b exporting u-a: %d, want 403", status)
	}

	// The deletion.
	before := u.scan(markerA)
	for _, col := range []string{"recall_archive.excerpt", "recall_conversation.body", "recall_rejection.payload"} {
		if before[col] == 0 {
			t.Fatalf("before the deletion the scan finds u-a's text in %v, not in %s: it proves nothing", before, col)
		}
	}
	beforeB := u.scan(markerB)
	_, evidenceB := u.call(http.MethodGet, "/v1/users/u-b/conversations/c1/evidence", "u-b")
	if status, _ := u.call(http.MethodDelete, "/v1/users/u-a", "u-b"); status != http.StatusForbidden {
		t.Errorf("u-b deleting u-a: %d, want 403", status)
	}
	if status, body := u.call(http.MethodDelete, "/v1/users/u-a", "u-a"); status != http.StatusNoContent {
		t.Fatalf("DELETE /v1/users/u-a: %d %s", status, body)
	}
	if after := u.scan(markerA); len(after) != 0 {
		t.Errorf("after the deletion u-a's text is in %v", after)
	}
	if p, _ := list("", "svc"); len(p.Conversations) != 0 {
		t.Errorf("after the deletion u-a lists %+v", p.Conversations)
	}
	if status, body := u.call(http.MethodGet, "/v1/users/u-a/export", "u-a"); !bytes.HasPrefix(body, []byte(`{"type":"rejection"`)) ||
		bytes.Contains(body, []byte(`"type":"conversation"`)) || bytes.Contains(body, []byte(`"type":"entry"`)) {
		t.Errorf("after the deletion u-a's export is %d %s; want its rejection rows alone", status, body)
	}

	// Late events for the deleted keys are rejected as deleted, without a
	// trace of their text; a new conversation id is accepted.
	for _, c := range []string{"c1", "c-bad"} {
		u.publish("late-"+c, "u-a", c, markerA)
		if reason := u.waitRejection("u-a", c, "late-"+c); reason != string(checkpoint.ReasonDeleted) {
			t.Errorf("late event for u-a/%s: rejected as %s, want deleted", c, reason)
		}
	}
	u.publish("e-a-new", "u-a", "c-new", "fresh")
	u.waitCursor("u-a", "c-new")
	if p, _ := list("", "u-a"); len(p.Conversations) != 1 || p.Conversations[0].ConversationID != "c-new" {
		t.Errorf("after the deletion u-a lists %+v, want c-new alone", p.Conversations)
	}
	if after := u.scan(markerA); len(after) != 0 {
		t.Errorf("after the late events u-a's text is in %v", after)
	}

	// u-b is untouched.
	if afterB := u.scan(markerB); fmt.Sprint(afterB) != fmt.Sprint(beforeB) {
		t.Errorf("u-b's rows changed: %v before, %v after", beforeB, afterB)
	}
	if _, got := u.call(http.MethodGet, "/v1/users/u-b/conversations/c1/evidence", "u-b"); !bytes.Equal(got, evidenceB) {
		t.Errorf("u-b's evidence changed:\n%s\n%s", evidenceB, got)
	}
	if status, _ := u.call(http.MethodDelete, "/v1/users/u-none", "u-none"); status != http.StatusNoContent {
		t.Errorf("DELETE of an unknown user: %d, want 204", status)
	}
}
