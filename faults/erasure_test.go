package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/apiclient"
)

// markerCount is where a scan found a marker.
type markerCount struct {
	Rows   map[string]int // table.column → rows that carry it
	Stream int            // messages still stored in the stream
	Logs   int            // log lines
}

func (m markerCount) total() int {
	n := m.Stream + m.Logs
	for _, v := range m.Rows {
		n += v
	}
	return n
}

func (m markerCount) String() string {
	return fmt.Sprintf("rows %v, stream messages %d, log lines %d", m.Rows, m.Stream, m.Logs)
}

// scanDatabase counts, in every column of every table of the database
// (recall's and River's, the job table included), the rows that carry
// marker: bytea columns by their bytes, every other column by its text.
func scanDatabase(ctx context.Context, pool *pgxpool.Pool, marker string) (map[string]int, error) {
	rows, err := pool.Query(ctx, `
SELECT c.table_schema, c.table_name, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t USING (table_schema, table_name)
WHERE t.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
ORDER BY 1, 2, 3`)
	if err != nil {
		return nil, err
	}
	type column struct{ schema, table, name, typ string }
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (column, error) {
		var c column
		return c, r.Scan(&c.schema, &c.table, &c.name, &c.typ)
	})
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no columns found: the scan proves nothing")
	}
	out := map[string]int{}
	for _, c := range cols {
		ident := pgx.Identifier{c.schema, c.table}.Sanitize()
		col := pgx.Identifier{c.name}.Sanitize()
		cond := fmt.Sprintf("strpos(%s::text, $1) > 0", col)
		if c.typ == "bytea" {
			cond = fmt.Sprintf("position(convert_to($1, 'UTF8') in %s) > 0", col)
		}
		var n int
		if err := pool.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", ident, cond), marker).Scan(&n); err != nil {
			return nil, fmt.Errorf("scan %s.%s: %w", ident, col, err)
		}
		if n > 0 {
			out[c.table+"."+c.name] = n
		}
	}
	return out, nil
}

// scanStream counts the messages the stream still stores that carry marker.
func scanStream(ctx context.Context, js jetstream.JetStream, marker string) (int, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	if info.State.Msgs == 0 {
		return 0, nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted or acknowledged
		}
		if bytes.Contains(m.Data, []byte(marker)) {
			n++
		}
	}
	return n, nil
}

// scanAll scans the database, the stream and every log line.
func (c *cluster) scanAll(t *testing.T, marker string) markerCount {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var m markerCount
	var err error
	if m.Rows, err = scanDatabase(ctx, c.pool, marker); err != nil {
		t.Fatal(err)
	}
	if m.Stream, err = scanStream(ctx, c.js, marker); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	children := append([]*child(nil), c.children...)
	c.mu.Unlock()
	for _, ch := range children {
		_ = scanLog(ch.logPath, func(_ map[string]any, line []byte) {
			if bytes.Contains(line, []byte(marker)) {
				m.Logs++
			}
		})
	}
	return m
}

// TestErasure publishes conversations that carry a marker of this run, with
// bad events for the same keys, and deletes them (half through the API,
// half with delete events); then late events for the deleted keys arrive,
// valid and bad. A scan of every table (River's job table included), every
// message the stream still stores and every log line finds the marker
// before the deletion and 0 times after it.
func TestErasure(t *testing.T) {
	t.Parallel()
	convs, turns := 6, 4
	if long {
		convs, turns = 60, 8
	}
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	marker := "ERASE" + strings.ToUpper(hex.EncodeToString(rb[:]))
	c := newCluster(t, "", "RECALL_JWT_SECRET="+jwtSecret, "RECALL_HTTP_ADDR=127.0.0.1:0", "RECALL_GAP_TIMEOUT=1s",
		"RECALL_MAX_EVENT_BYTES=262144")
	// A first run creates the stream and the consumer; stopped, it leaves
	// the events published next in the stream, for the scan's positive
	// control.
	first := c.start("run", "run")
	first.waitLog(t, "read API listening", 60*time.Second)
	if code, _, err := first.term(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("first run: exit %d, %v", code, err)
	}

	w := newWorkload(t, 12, "erase", convs, turns)
	mark := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(Marker), []byte(marker)) }
	var events []event
	for _, e := range w.Events {
		events = append(events, event{ID: e.ID, Data: mark(e.Data), Conv: e.Conv})
	}
	// Bad events for the same keys, each with the marker in its payload.
	bad := func(tag string, cv *conversation) []event {
		id := func(s string) string { return fmt.Sprintf("%s-%s-%s", tag, cv.Conv, s) }
		return []event{
			{ID: id("invalid"), Data: raw(map[string]any{"schema": checkpoint.Schema, "event_id": id("invalid"), "user_id": cv.User, "conversation_id": cv.Conv,
				"messages": []any{map[string]any{"role": "wizard", "content": marker}}})},
			{ID: id("schema"), Data: raw(map[string]any{"schema": "recall.checkpoint.v9", "event_id": id("schema"), "user_id": cv.User, "conversation_id": cv.Conv,
				"messages": []any{map[string]any{"role": "user", "content": marker}}})},
			{ID: id("large"), Data: raw(map[string]any{"schema": checkpoint.Schema, "event_id": id("large"), "user_id": cv.User, "conversation_id": cv.Conv,
				"messages": []any{map[string]any{"role": "user", "content": marker + strings.Repeat(" "+marker, 300<<10/(len(marker)+1))}}})},
			{ID: id("gap"), Data: raw(map[string]any{"schema": checkpoint.Schema, "event_id": id("gap"), "user_id": cv.User, "conversation_id": cv.Conv,
				"offset": 500, "prefix_digest": strings.Repeat("ab", 32), "messages": []any{map[string]any{"role": "user", "content": marker}}})},
		}
	}
	for _, cv := range w.Convs {
		events = append(events, bad("early", cv)...)
	}
	ctx := context.Background()
	if err := c.pub.run(ctx, events, 0, 4); err != nil {
		t.Fatal(err)
	}
	inStream, err := scanStream(ctx, c.js, marker)
	if err != nil {
		t.Fatal(err)
	}
	if inStream == 0 {
		t.Fatal("the stream scan found no published event: it proves nothing")
	}

	srv := c.start("run", "run")
	addr := srv.waitLog(t, "read API listening", 60*time.Second)["addr"].(string)
	waitStreamDone(t, c.js, 2*time.Minute)
	before := c.scanAll(t, marker)
	if before.Rows["recall_rejection.payload"] == 0 || before.total() == 0 {
		t.Fatalf("before the deletion the scan finds %s: it must find the marker (rejection payloads, held messages, evidence)", before)
	}
	t.Logf("before the deletion: %s; %d events in the stream before the worker ran", before, inStream)

	// Delete: half through the API, half with delete events.
	client := &http.Client{Timeout: 30 * time.Second}
	service := "Bearer " + hs256(map[string]any{"sub": "svc", "scope": apiclient.ServiceScope, "exp": time.Now().Add(time.Hour).Unix()})
	var late []event
	for i, cv := range w.Convs {
		if i%2 == 0 {
			req, _ := http.NewRequest(http.MethodDelete, fmt.Sprintf("http://%s/v1/users/%s/conversations/%s", addr, cv.User, cv.Conv), nil)
			req.Header.Set("Authorization", service)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE %s/%s: %d", cv.User, cv.Conv, resp.StatusCode)
			}
		} else {
			id := "delete-" + cv.Conv
			if _, err := c.pub.publish(ctx, id, raw(map[string]any{"schema": checkpoint.Schema, "kind": "delete", "event_id": id,
				"user_id": cv.User, "conversation_id": cv.Conv})); err != nil {
				t.Fatal(err)
			}
		}
		// Late events: the newest snapshot again under a new id, and bad ones.
		n := cv.Snapshots[len(cv.Snapshots)-1]
		id := "late-" + cv.Conv
		late = append(late, event{ID: id, Data: mark(snapshotEvent(id, cv.User, cv.Conv, cv.History[:n]))})
		late = append(late, bad("late", cv)...)
	}
	if err := c.pub.run(ctx, late, 0, 4); err != nil {
		t.Fatal(err)
	}
	waitStreamDone(t, c.js, 2*time.Minute)
	// Wait for the deletes sent as events, then for the stream to hold
	// nothing (acknowledgements are asynchronous).
	deadline := time.Now().Add(time.Minute)
	var after markerCount
	for {
		after = c.scanAll(t, marker)
		if after.total() == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if after.total() != 0 {
		t.Errorf("after the deletion the marker is still found: %s", after)
	}
	var deleted, rejectedLate int
	if err := c.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM recall_conversation WHERE deleted_at IS NOT NULL),
    (SELECT count(*) FROM recall_rejection WHERE reason = 'deleted')`).Scan(&deleted, &rejectedLate); err != nil {
		t.Fatal(err)
	}
	if deleted != len(w.Convs) || rejectedLate != 5*len(w.Convs) {
		t.Errorf("%d tombstones (want %d), %d late events rejected as deleted (want %d)", deleted, len(w.Convs), rejectedLate, 5*len(w.Convs))
	}
	logs := c.scanLogs()
	requireCleanLogs(t, logs)
	results.add(t, row{Scenario: "7 erasure", Published: distinctIDs(events) + distinctIDs(late) + len(w.Convs)/2, Accepted: c.pub.accepted(),
		States: len(w.Convs), Matching: deleted, Note: fmt.Sprintf("marker before: %d places (%d in the stream); after: %d (rows %d, stream %d, logs %d)",
			before.total(), inStream, after.total(), after.total()-after.Stream-after.Logs, after.Stream, after.Logs)})
}
