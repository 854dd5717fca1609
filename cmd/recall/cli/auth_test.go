package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
)

// testIdP serves a JWKS with one Ed25519 key, kid "ed-1".
func testIdP(t *testing.T) (url string, key ed25519.PrivateKey) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"ed-1","use":"sig","x":%q}]}`, base64.RawURLEncoding.EncodeToString(pub))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/jwks.json", key
}

// TestAPIAuthSettings: the API starts with the secret, the JWKS or both,
// and refuses settings that cannot work with a message that says what to
// set; an unreachable JWKS stops the start.
func TestAPIAuthSettings(t *testing.T) {
	t.Parallel()
	jwksURL, _ := testIdP(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL + "/jwks.json"
	gone.Close()
	noDB := []string{"--no-migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable"}
	secret := strings.Repeat("k", 32)
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"neither secret nor JWKS", []string{"api"}, nil, "RECALL_JWKS_URL"},
		{"issuer without JWKS", []string{"api"}, map[string]string{"RECALL_JWT_SECRET": secret, "RECALL_JWT_ISSUER": "https://idp.example"}, "set RECALL_JWKS_URL"},
		{"audience without JWKS", []string{"run"}, map[string]string{"RECALL_JWT_SECRET": secret, "RECALL_JWT_AUDIENCE": "recall"}, "set RECALL_JWKS_URL"},
		{"a short previous secret", []string{"api"}, map[string]string{"RECALL_JWT_SECRET": secret, "RECALL_JWT_PREVIOUS_SECRETS": secret + ",short"}, "RECALL_JWT_PREVIOUS_SECRETS: secret 2 of 2 is 5 bytes"},
		{"a weak secret beside the JWKS", []string{"api"}, map[string]string{"RECALL_JWT_SECRET": "x", "RECALL_JWKS_URL": jwksURL}, "at least 32 bytes"},
		{"an unreachable JWKS", append([]string{"api"}, noDB...), map[string]string{"RECALL_JWKS_URL": goneURL}, "cannot fetch the identity provider's JWKS"},
		{"an unreachable JWKS beside the secret", append([]string{"run"}, noDB...), map[string]string{"RECALL_JWT_SECRET": secret, "RECALL_JWKS_URL": goneURL}, "RECALL_JWKS_URL"},
		{"not a URL", append([]string{"api"}, noDB...), map[string]string{"RECALL_JWKS_URL": "idp.example/jwks"}, "not an http or https URL"},
		// Settings that pass go on to Postgres.
		{"the JWKS alone", append([]string{"api"}, noDB...), map[string]string{"RECALL_JWKS_URL": jwksURL}, "connect to Postgres"},
		{"the JWKS by flags", append([]string{"run", "-jwks-url", jwksURL, "-jwt-issuer", "https://idp.example", "-jwt-audience", "recall"}, noDB...), nil, "connect to Postgres"},
		{"secret, previous secrets and JWKS", append([]string{"run"}, noDB...), map[string]string{"RECALL_JWT_SECRET": secret,
			"RECALL_JWT_PREVIOUS_SECRETS": " " + strings.Repeat("a", 32) + " ,, " + strings.Repeat("b", 40), "RECALL_JWKS_URL": jwksURL}, "connect to Postgres"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCLI(t, tt.env, tt.args...)
			if code != 1 || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, tt.wantErr)
			}
			if strings.Contains(stderr, secret) {
				t.Errorf("a secret was printed: %q", stderr)
			}
		})
	}
	// recall token signs HS256 with the secret, JWKS or not.
	code, stdout, stderr := runCLI(t, map[string]string{"RECALL_JWT_SECRET": secret, "RECALL_JWKS_URL": goneURL}, "token", "u-1")
	if code != 0 {
		t.Fatalf("recall token beside a JWKS: exit %d: %s", code, stderr)
	}
	tok, err := jwt.Parse(strings.TrimSpace(stdout), func(*jwt.Token) (any, error) { return []byte(secret), nil }, jwt.WithValidMethods([]string{"HS256"}))
	if err != nil || !tok.Valid {
		t.Errorf("recall token: %v, want an HS256 token of the secret", err)
	}
}

// TestRunWithIdentityProvider: a running recall accepts the identity
// provider's tokens beside the HS256 tokens of the secret and of a
// previous secret.
func TestRunWithIdentityProvider(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	jwksURL, idpKey := testIdP(t)
	current, previous := strings.Repeat("n", 32), strings.Repeat("o", 32)
	cfg := runConfig(pgtest.NewDatabase(t), ns.URL())
	cfg.JWTSecret, cfg.JWTPreviousSecrets = current, []string{previous}
	cfg.JWKSURL, cfg.JWTIssuer, cfg.JWTAudience = jwksURL, "https://idp.example", "recall"
	if err := cfg.loadAPIAuth(); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, cfg, roles{api: true})
	hs := func(secret string) string {
		s, err := apiclient.Sign([]byte(secret), "u-1", time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	idp := func(claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
		tok.Header["kid"] = "ed-1"
		s, err := tok.SignedString(idpKey)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	exp := time.Now().Add(time.Hour).Unix()
	tests := []struct {
		name       string
		token      string
		wantStatus int
	}{
		{"the secret", hs(current), 200},
		{"the previous secret", hs(previous), 200},
		{"another secret", hs(strings.Repeat("x", 32)), 401},
		{"the identity provider", idp(jwt.MapClaims{"sub": "u-1", "exp": exp, "iss": "https://idp.example", "aud": "recall"}), 200},
		{"the identity provider, wrong audience", idp(jwt.MapClaims{"sub": "u-1", "exp": exp, "iss": "https://idp.example", "aud": "other"}), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+a.Addr+"/v1/users/u-1/conversations/c-1/evidence", nil)
			req.Header.Set("Authorization", "Bearer "+tt.token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d", res.StatusCode, tt.wantStatus)
			}
		})
	}
}
