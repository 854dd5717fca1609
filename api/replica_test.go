package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/evidence"
)

// replicaSource is a Source over a primary (a fakeSource, which also wakes
// waiters) and a replica frozen at an older record, with the FloorReader
// methods: it records each floor asked for.
type replicaSource struct {
	*fakeSource
	replica evidence.Record

	mu     sync.Mutex
	floors [][2]int64 // cursor, version
}

func (r *replicaSource) EvidenceAtLeast(ctx context.Context, userID, conversationID string, minCursor int, minVersion int64) (evidence.Record, error) {
	r.mu.Lock()
	r.floors = append(r.floors, [2]int64{int64(minCursor), minVersion})
	r.mu.Unlock()
	if r.replica.Cursor >= minCursor && r.replica.Version >= minVersion {
		return r.replica, nil
	}
	return r.fakeSource.Evidence(ctx, userID, conversationID)
}

func (r *replicaSource) SearchAtLeast(ctx context.Context, userID, conversationID, query string, minVersion int64) (evidence.Record, error) {
	return r.EvidenceAtLeast(ctx, userID, conversationID, 0, minVersion)
}

// Evidence and Search, without a floor, answer the replica's record.
func (r *replicaSource) Evidence(context.Context, string, string) (evidence.Record, error) {
	return r.replica, nil
}

func (r *replicaSource) Search(context.Context, string, string, string) (evidence.Record, error) {
	return r.replica, nil
}

// TestReplicaFloors: with a Source that reads a lagging copy, min_version
// and min_cursor (with or without a wait) reach it as the floor of the
// read, so the answer is never older than what the client has seen;
// without them the copy answers.
func TestReplicaFloors(t *testing.T) {
	t.Parallel()
	primary := newFakeSource()
	rec := func(version int64, cursor int) evidence.Record {
		s := evidence.NewState()
		s.Version, s.Cursor = version, cursor
		return recordOf("u", "c", &s)
	}
	src := &replicaSource{fakeSource: primary, replica: rec(1, 2)}
	primary.set(rec(3, 6))
	b := setupWith(t, src, primary, api.Config{})
	tok := userToken(t, "u")
	version := func(body []byte) int64 {
		t.Helper()
		var ans struct{ Version int64 }
		if err := json.Unmarshal(body, &ans); err != nil {
			t.Fatal(err)
		}
		return ans.Version
	}
	tests := []struct {
		name        string
		method      string
		target      string
		wantVersion int64
		wantFloor   [2]int64
	}{
		{"plain read: the replica", "GET", "/evidence", 1, [2]int64{-1, -1}},
		{"min_version: the primary", "GET", "/evidence?min_version=3", 3, [2]int64{0, 3}},
		{"min_version met by the replica", "GET", "/evidence?min_version=1", 1, [2]int64{0, 1}},
		{"min_cursor without wait", "GET", "/evidence?min_cursor=6", 3, [2]int64{6, 0}},
		{"min_cursor with a wait", "GET", "/evidence?min_cursor=6&wait=1s&min_version=2", 3, [2]int64{6, 2}},
		{"search with min_version", "POST", "/evidence/search?min_version=3", 3, [2]int64{0, 3}},
	}
	for _, tt := range tests {
		src.mu.Lock()
		src.floors = nil
		src.mu.Unlock()
		w := doBody(t, b.h, tt.method, "/v1/users/u/conversations/c"+tt.target, tok, `{"query":"the schema"}`)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: status %d %s", tt.name, w.Code, w.Body)
		}
		if got := version(w.Body.Bytes()); got != tt.wantVersion {
			t.Errorf("%s: version %d, want %d", tt.name, got, tt.wantVersion)
		}
		src.mu.Lock()
		floors := src.floors
		src.mu.Unlock()
		switch {
		case tt.wantFloor[0] < 0 && len(floors) > 0:
			t.Errorf("%s: read with floors %v, want none", tt.name, floors)
		case tt.wantFloor[0] >= 0 && (len(floors) == 0 || floors[len(floors)-1] != tt.wantFloor):
			t.Errorf("%s: floors %v, want the last %v", tt.name, floors, tt.wantFloor)
		}
	}
	for _, target := range []string{"/evidence?min_version=-1", "/evidence?min_version=x", "/evidence/search?min_version=1.5"} {
		method := "GET"
		if target[:len("/evidence/search")] == "/evidence/search" {
			method = "POST"
		}
		w := doBody(t, b.h, method, "/v1/users/u/conversations/c"+target, tok, `{"query":"q"}`)
		if code, _ := errorOf(t, w); w.Code != http.StatusBadRequest || code != api.CodeInvalidMinVersion {
			t.Errorf("%s: %d %s, want 400 %s", target, w.Code, code, api.CodeInvalidMinVersion)
		}
	}
}

func doBody(t *testing.T, h http.Handler, method, target, token, body string) *httptest.ResponseRecorder {
	t.Helper()
	var r *http.Request
	if method == http.MethodPost {
		r = httptest.NewRequest(method, target, strings.NewReader(body))
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
