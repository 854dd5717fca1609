package faults

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/internal/apiclient"
)

const jwtSecret = "faults-secret-5f1d2c0e9a8b7c6d5e4f3a2b1c0d9e8f"

// signJWT builds a JWT with the given header and claims, signed with
// HMAC-SHA256 (or SHA-512 for HS512) and secret; alg "none" gets no
// signature.
func signJWT(header, claims map[string]any, secret string) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(header) + "." + enc(claims)
	var h func() hash.Hash
	switch header["alg"] {
	case "HS256", "RS256", "ES256":
		h = sha256.New
	case "HS512":
		h = sha512.New
	default:
		return in + "."
	}
	mac := hmac.New(h, []byte(secret))
	mac.Write([]byte(in))
	return in + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func hs256(claims map[string]any) string {
	return signJWT(map[string]any{"alg": "HS256", "typ": "JWT"}, claims, jwtSecret)
}

func userClaims(sub string) map[string]any {
	return map[string]any{"sub": sub, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
}

// secretOf is what only user u's conversations carry.
func secretOf(u string) string { return "SECRETOF" + strings.ToUpper(u) + "42" }

// TestIsolation walks every route of the read API of a `recall run`
// process with other users' tokens, tampered tokens, alg none, expired
// tokens and tokens without exp: each answers 401 or 403 and never a body
// with another user's data. It then scans the process's logs, /metrics
// and every error body for the marker every message carries.
func TestIsolation(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "", "RECALL_JWT_SECRET="+jwtSecret, "RECALL_HTTP_ADDR=127.0.0.1:0", "RECALL_GAP_TIMEOUT=1s")
	srv := c.start("run", "run")
	addr := srv.waitLog(t, "read API listening", 60*time.Second)["addr"].(string)
	base := "http://" + addr

	// Alice's and Bob's conversations, each with its owner's secret and
	// the marker in every message, and poison events that carry the marker
	// too (so rejections, which log, are part of the scan).
	users := []string{"alice", "bob"}
	var convs []*conversation
	for _, u := range users {
		for k := range 2 {
			cv := &conversation{User: u, Conv: fmt.Sprintf("%s-c%d", u, k)}
			texts := []string{"We must ship by Friday.", "Agreed: we'll use Postgres.", "TODO: draft the schema.", "Thanks."}
			for i, tx := range texts {
				role := "user"
				if i%2 == 1 {
					role = "assistant"
				}
				cv.History = append(cv.History, raw(map[string]any{"id": fmt.Sprintf("m%d", i), "role": role,
					"content": fmt.Sprintf("%s %s %s", tx, Marker, secretOf(u))}))
			}
			cv.History = append(cv.History, raw(map[string]any{"id": "m4", "role": "user", "content": "Next? " + Marker + " " + secretOf(u)}))
			cv.Snapshots = []int{len(cv.History)}
			cv.Oracle = cv.oracle(t)
			convs = append(convs, cv)
			id := cv.Conv + "-e0"
			if _, err := c.pub.publish(t.Context(), id, snapshotEvent(id, cv.User, cv.Conv, cv.History)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, p := range poisonCorpus(0) {
		if p.want == "too_large" {
			continue // big, and covered by the poison scenario
		}
		if _, err := c.pub.publish(t.Context(), fmt.Sprintf("iso-bad-%d", i), p.data); err != nil {
			t.Fatal(err)
		}
	}
	gapEv := raw(map[string]any{"schema": "recall.checkpoint.v1", "event_id": "iso-gap", "user_id": "bob", "conversation_id": "bob-c0",
		"offset": 50, "prefix_digest": strings.Repeat("cd", 32), "messages": []any{map[string]any{"role": "user", "content": Marker}}})
	if _, err := c.pub.publish(t.Context(), "iso-gap", gapEv); err != nil {
		t.Fatal(err)
	}
	v, _ := waitConverged(t, c.pool, convs, time.Minute)
	requireOracle(t, v)
	waitStreamDone(t, c.js, time.Minute)

	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var errorBodies []string
	do := func(method, target, auth string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			errorBodies = append(errorBodies, string(b))
		}
		return resp.StatusCode, string(b)
	}

	// Positive controls: each user reads their own; a service token reads
	// anyone's.
	alice := "Bearer " + hs256(userClaims("alice"))
	service := "Bearer " + hs256(map[string]any{"sub": "svc", "scope": apiclient.ServiceScope, "exp": time.Now().Add(time.Hour).Unix()})
	if code, body := do("GET", "/v1/users/alice/conversations/alice-c0/evidence", alice); code != 200 || !strings.Contains(body, secretOf("alice")) {
		t.Fatalf("alice reading her own conversation: %d %s", code, clip(body, 300))
	}
	if code, body := do("GET", "/v1/users/bob/conversations/bob-c0/evidence", service); code != 200 || !strings.Contains(body, secretOf("bob")) {
		t.Fatalf("a service token reading bob's conversation: %d %s", code, clip(body, 300))
	}

	// Everything below targets bob's conversations without bob's right.
	exp := time.Now().Add(time.Hour).Unix()
	aliceTok := hs256(userClaims("alice"))
	parts := strings.Split(aliceTok, ".")
	bobPayload := base64.RawURLEncoding.EncodeToString(raw(userClaims("bob")))
	flip := func(s string) string {
		b := []byte(s)
		if b[len(b)-2] == 'A' {
			b[len(b)-2] = 'B'
		} else {
			b[len(b)-2] = 'A'
		}
		return string(b)
	}
	tokens := []struct {
		name string
		auth string
		want int
	}{
		{"no Authorization", "", 401},
		{"empty bearer", "Bearer ", 401},
		{"Basic scheme", "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:bob")), 401},
		{"garbage", "Bearer not.a.jwt", 401},
		{"another user's token", alice, 403},
		{"tampered payload (sub=bob, alice's signature)", "Bearer " + parts[0] + "." + bobPayload + "." + parts[2], 401},
		{"tampered signature", "Bearer " + hs256(userClaims("bob"))[:len(aliceTok)-3] + "xyz", 401},
		{"flipped signature bit", "Bearer " + flip(hs256(userClaims("bob"))), 401},
		{"alg none", "Bearer " + signJWT(map[string]any{"alg": "none", "typ": "JWT"}, userClaims("bob"), ""), 401},
		{"alg None", "Bearer " + signJWT(map[string]any{"alg": "None"}, userClaims("bob"), ""), 401},
		{"alg none with a signature", "Bearer " + signJWT(map[string]any{"alg": "none"}, userClaims("bob"), "")[:0] + strings.TrimSuffix(signJWT(map[string]any{"alg": "none"}, userClaims("bob"), ""), ".") + "." + parts[2], 401},
		{"alg HS512 with the secret", "Bearer " + signJWT(map[string]any{"alg": "HS512", "typ": "JWT"}, userClaims("bob"), jwtSecret), 401},
		{"alg RS256 header, HMAC signature", "Bearer " + signJWT(map[string]any{"alg": "RS256", "typ": "JWT"}, userClaims("bob"), jwtSecret), 401},
		{"wrong secret", "Bearer " + signJWT(map[string]any{"alg": "HS256"}, userClaims("bob"), "not-the-secret"), 401},
		{"expired", "Bearer " + hs256(map[string]any{"sub": "bob", "exp": time.Now().Add(-time.Minute).Unix()}), 401},
		{"expired service token", "Bearer " + hs256(map[string]any{"sub": "svc", "scope": apiclient.ServiceScope, "exp": time.Now().Add(-time.Minute).Unix()}), 401},
		{"missing exp", "Bearer " + hs256(map[string]any{"sub": "bob"}), 401},
		{"missing exp, service scope", "Bearer " + hs256(map[string]any{"sub": "svc", "scope": apiclient.ServiceScope}), 401},
		{"exp not a date", "Bearer " + hs256(map[string]any{"sub": "bob", "exp": "tomorrow"}), 401},
		{"exp null", "Bearer " + hs256(map[string]any{"sub": "bob", "exp": nil}), 401},
		{"not valid yet", "Bearer " + hs256(map[string]any{"sub": "bob", "exp": exp, "nbf": time.Now().Add(time.Hour).Unix()}), 401},
		{"no sub, no scope", "Bearer " + hs256(map[string]any{"exp": exp}), 401},
		{"sub a number", "Bearer " + hs256(map[string]any{"sub": 42, "exp": exp}), 401},
		{"sub differs in case", "Bearer " + hs256(userClaims("Bob")), 403},
		{"sub with a trailing space", "Bearer " + hs256(userClaims("bob ")), 403},
		{"look-alike scope", "Bearer " + hs256(map[string]any{"sub": "alice", "scope": "recall:servicex recall:", "exp": exp}), 403},
		{"scope list without service", "Bearer " + hs256(map[string]any{"sub": "alice", "scope": []string{"recall:read", "recall"}, "exp": exp}), 403},
	}
	routes := []struct{ method, target string }{
		{"GET", "/v1/users/bob/conversations/bob-c0/evidence"},
		{"GET", "/v1/users/bob/conversations/bob-c1/evidence?max_tokens=60"},
		{"GET", "/v1/users/bob/conversations/bob-c0/evidence?min_cursor=99&wait=2s"},
		{"GET", "/v1/users/bob/conversations/unknown/evidence"},
		{"GET", "/v1/users/%62ob/conversations/bob-c0/evidence"},
		{"GET", "/v1/users/alice%2F..%2Fbob/conversations/bob-c0/evidence"},
		{"GET", "/v1/users/bob/conversations/" + strings.Repeat("x", 300) + "/evidence"},
		{"DELETE", "/v1/users/bob/conversations/bob-c0"},
		{"DELETE", "/v1/users/bob/conversations/bob-c1"},
	}
	checked := 0
	for _, tok := range tokens {
		for _, r := range routes {
			want := tok.want
			code, body := do(r.method, r.target, tok.auth)
			checked++
			if code != want {
				t.Errorf("%s %s with %s: status %d, want %d: %s", r.method, r.target, tok.name, code, want, clip(body, 200))
			}
			if strings.Contains(body, secretOf("bob")) || strings.Contains(body, Marker) {
				t.Errorf("%s %s with %s: the body carries bob's data: %s", r.method, r.target, tok.name, clip(body, 300))
			}
			var eb struct {
				Error struct{ Code, Message string }
			}
			if json.Unmarshal([]byte(body), &eb) != nil || eb.Error.Code == "" {
				t.Errorf("%s %s with %s: not an error body: %s", r.method, r.target, tok.name, clip(body, 200))
			}
		}
	}
	// Paths that leave the routes: no redirect or 404 leaks data either.
	for _, target := range []string{
		"/v1/users/alice/../bob/conversations/bob-c0/evidence",
		"/v1/users/bob/conversations/bob-c0/evidence/",
		"/v1/users/bob/conversations/bob-c0",
		"/v1/users/bob/conversations",
		"/v1/users/bob/conversations/bob-c0/evidence?access_token=" + url.QueryEscape(hs256(userClaims("bob"))),
	} {
		code, body := do("GET", target, alice)
		checked++
		if code < 300 || strings.Contains(body, secretOf("bob")) || strings.Contains(body, Marker) {
			t.Errorf("GET %s with alice's token: %d %s", target, code, clip(body, 300))
		}
	}
	// Bob's data is intact after all those DELETEs, and bob still reads it.
	v, _ = waitConverged(t, c.pool, convs, 5*time.Second)
	requireOracle(t, v)
	bob := "Bearer " + hs256(userClaims("bob"))
	if code, body := do("GET", "/v1/users/bob/conversations/bob-c0/evidence", bob); code != 200 || !strings.Contains(body, secretOf("bob")) {
		t.Errorf("bob reading his own conversation: %d %s", code, clip(body, 300))
	}
	// And a delete by the owner works: the fault is in the others.
	if code, _ := do("DELETE", "/v1/users/alice/conversations/alice-c1", alice); code != 204 {
		t.Errorf("alice deleting her own conversation: %d", code)
	}

	// The log scan: no marker and no secret in any log line, in /metrics or
	// in any error body.
	code, metrics := do("GET", "/metrics", "")
	if code != 200 || !strings.Contains(metrics, "recall_") {
		t.Errorf("/metrics: %d", code)
	}
	for _, s := range []string{Marker, secretOf("alice"), secretOf("bob")} {
		if strings.Contains(metrics, s) {
			t.Errorf("/metrics carries message text (%s)", s)
		}
		for _, b := range errorBodies {
			if strings.Contains(b, s) {
				t.Errorf("an error body carries message text (%s): %s", s, clip(b, 300))
			}
		}
	}
	srvCode, took, err := srv.term(15 * time.Second)
	if err != nil || srvCode != 0 {
		t.Errorf("recall run drain: exit %d after %s (%v)", srvCode, took, err)
	}
	logs := c.scanLogs()
	requireCleanLogs(t, logs)
	for _, s := range []string{secretOf("alice"), secretOf("bob")} {
		_ = scanLog(srv.logPath, func(_ map[string]any, line []byte) {
			if strings.Contains(string(line), s) {
				t.Errorf("a log line carries message text: %s", clip(string(line), 300))
			}
		})
	}
	t.Logf("%d unauthorised requests checked, %d error bodies scanned, %d log lines scanned, /metrics %d bytes; outcomes %v",
		checked, len(errorBodies), logs.Lines, len(metrics), logs.Outcomes)
	results.add(t, row{
		Scenario: "6 isolation and log scan", Published: c.pub.accepted(), Accepted: c.pub.accepted(),
		States: v.States, Matching: v.Matching, Dups: v.Dups, Lost: v.Lost,
		Note: fmt.Sprintf("%d unauthorised requests: all 401/403, no data; marker in 0 of %d log lines, 0 error bodies, /metrics", checked, logs.Lines),
	})
}
