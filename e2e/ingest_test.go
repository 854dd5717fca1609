package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/examples"
	"github.com/recallhq/recall/testutil/pgtest"
)

// TestHTTPIngest publishes a sample conversation through POST
// /v1/checkpoints of recall dev (real NATS, real Postgres) with the user's
// own token, and reads the evidence the worker extracted from it.
func TestHTTPIngest(t *testing.T) {
	d := startDev(t, devConfig{DatabaseURL: pgtest.UncreatedDatabase(t)})
	c := sample(t, "planning")
	secret := devSecret(t, d.dataDir)
	own := sign(t, secret, c.UserID, time.Hour)
	other := sign(t, secret, "someone-else", time.Hour)

	data, err := examples.Conversation("planning")
	if err != nil {
		t.Fatal(err)
	}
	var conv struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &conv); err != nil {
		t.Fatal(err)
	}
	event, _ := json.Marshal(map[string]any{
		"schema": "recall.checkpoint.v1", "event_id": "ingest-e2e-1",
		"user_id": c.UserID, "conversation_id": c.ConversationID,
		"offset": 0, "prefix_digest": nil, "messages": conv.Messages,
	})
	endpoint := strings.TrimRight(d.APIURL, "/") + "/v1/checkpoints"

	status, body := postJSON(t, endpoint, other, event)
	if status != http.StatusForbidden {
		t.Fatalf("another user's token: %d %s, want 403", status, body)
	}
	status, body = postJSON(t, endpoint, own, []byte(`{"schema":"recall.checkpoint.v1","event_id":"x","user_id":"`+c.UserID+`"}`))
	if status != http.StatusBadRequest || !strings.Contains(string(body), `"invalid"`) {
		t.Fatalf("an invalid event: %d %s, want 400 invalid", status, body)
	}

	var first struct {
		StreamSeq uint64 `json:"stream_seq"`
		Duplicate bool   `json:"duplicate"`
	}
	status, body = postJSON(t, endpoint, own, event)
	if status != http.StatusAccepted {
		t.Fatalf("POST /v1/checkpoints: %d %s, want 202", status, body)
	}
	if err := json.Unmarshal(body, &first); err != nil || first.StreamSeq == 0 || first.Duplicate {
		t.Fatalf("answer %s: want a stream_seq and duplicate false", body)
	}
	// Neither rejected event reached the stream: this one is its first.
	if first.StreamSeq != 1 {
		t.Errorf("stream_seq %d, want 1: a rejected event was published", first.StreamSeq)
	}
	status, body = postJSON(t, endpoint, own, event)
	if status != http.StatusAccepted || string(bytes.TrimSpace(body)) != `{"stream_seq":`+strconv.FormatUint(first.StreamSeq, 10)+`,"duplicate":true}` {
		t.Errorf("the same event again: %d %s, want 202 with the same stream_seq and duplicate true", status, body)
	}

	status, body = get(t, evidenceURL(d.APIURL, c.UserID, c.ConversationID)+"?min_cursor="+strconv.Itoa(c.Want.Cursor)+"&wait=30s", own)
	if status != http.StatusOK {
		t.Fatalf("GET evidence: %d %s", status, body)
	}
	requireEvidence(t, body, c)
	d.interrupt()
}

// postJSON posts body with token and returns the status and answer.
func postJSON(t *testing.T, rawURL, token string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 40 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
