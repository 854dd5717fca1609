package cli

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
)

// TestRiverUI serves the River UI on its own address, in an API-only
// process and in `recall run`, to tokens with the recall:service scope only:
// no token gets 401 with a basic-authentication challenge, a user's token
// 403, a service token (as a bearer token or a basic password) the UI and
// its API.
func TestRiverUI(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]roles{"api": {api: true}, "run": {worker: true, api: true}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := natstest.Start(t)
			cfg := runConfig(pgtest.NewDatabase(t), ns.URL())
			cfg.RiverUIAddr = "127.0.0.1:0"
			secret := cfg.JWTSecret
			a := startApp(t, cfg, r)
			if a.UIAddr == "" || a.UIAddr == a.Addr {
				t.Fatalf("River UI at %q, API at %q: want an address of its own", a.UIAddr, a.Addr)
			}
			service, err := apiclient.Sign([]byte(secret), "ops", time.Hour, &apiclient.TokenOptions{Service: true})
			if err != nil {
				t.Fatal(err)
			}
			user, err := apiclient.Sign([]byte(secret), "u", time.Hour, nil)
			if err != nil {
				t.Fatal(err)
			}
			get := func(path string, auth func(*http.Request)) (int, string, http.Header) {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+a.UIAddr+path, nil)
				if auth != nil {
					auth(req)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b), resp.Header
			}
			bearer := func(tok string) func(*http.Request) {
				return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
			}
			if code, _, h := get("/", nil); code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("no token: %d, WWW-Authenticate %q; want 401 with a basic challenge", code, h.Get("WWW-Authenticate"))
			}
			if code, _, _ := get("/", bearer(user)); code != http.StatusForbidden {
				t.Errorf("a user's token: %d, want 403", code)
			}
			if code, body, _ := get("/", bearer(service)); code != http.StatusOK || !strings.Contains(body, "<html") {
				t.Errorf("a service token: %d, want the UI's page", code)
			}
			if code, body, _ := get("/api/jobs?state=available", func(r *http.Request) { r.SetBasicAuth("ops", service) }); code != http.StatusOK || !strings.Contains(body, "data") {
				t.Errorf("the UI's API with a basic password: %d %.200s", code, body)
			}
		})
	}
}
