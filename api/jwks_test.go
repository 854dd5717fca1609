package api_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/api"
)

// jwksServer is an identity provider's JWKS endpoint that counts its
// requests and whose answer a test changes.
type jwksServer struct {
	srv      *httptest.Server
	requests atomic.Int32
	mu       sync.Mutex
	body     []byte
}

func newJWKSServer(t *testing.T, body []byte) *jwksServer {
	t.Helper()
	s := &jwksServer{body: body}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		b := s.body
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *jwksServer) set(body []byte) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

// idpKeys are the keys of a test identity provider, generated per test.
type idpKeys struct {
	rsa     *rsa.PrivateKey
	ec      *ecdsa.PrivateKey
	ed      ed25519.PrivateKey
	rotated *rsa.PrivateKey // published only once the test rotates
}

func newIdPKeys(t *testing.T) idpKeys {
	t.Helper()
	var k idpKeys
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.rotated, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	return k
}

var b64 = base64.RawURLEncoding

// jwk encodes a public key as a JWK with kid (and alg, when not "").
func jwk(t *testing.T, kid, alg string, pub any) map[string]any {
	t.Helper()
	m := map[string]any{"kid": kid, "use": "sig"}
	if alg != "" {
		m["alg"] = alg
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64.EncodeToString(k.N.Bytes()), b64.EncodeToString(big.NewInt(int64(k.E)).Bytes())
	case *ecdsa.PublicKey:
		e, err := k.ECDH()
		if err != nil {
			t.Fatal(err)
		}
		pt := e.Bytes()[1:] // uncompressed: 0x04 || X || Y
		size := len(pt) / 2
		m["kty"], m["crv"], m["x"], m["y"] = "EC", k.Curve.Params().Name, b64.EncodeToString(pt[:size]), b64.EncodeToString(pt[size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64.EncodeToString(k)
	case []byte:
		m["kty"], m["k"] = "oct", b64.EncodeToString(k)
	default:
		t.Fatalf("jwk: %T", pub)
	}
	return m
}

func jwks(t *testing.T, keys ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keySet is the provider's usual set: one key of each type.
func (k idpKeys) keySet(t *testing.T) []byte {
	return jwks(t,
		jwk(t, "rsa-1", "RS256", &k.rsa.PublicKey),
		jwk(t, "ec-1", "ES256", &k.ec.PublicKey),
		jwk(t, "ed-1", "", k.ed.Public()),
	)
}

// signJWT signs claims with method and key, with kid in the header when
// it is not "".
func signJWT(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type idpBundle struct {
	h    *api.Handler
	jwks *jwksServer
	logs *bytes.Buffer
}

// setupIdP serves a handler that trusts the provider at a JWKS server
// answering body, and the HS256 test secret unless noSecret.
func setupIdP(t *testing.T, body []byte, cfg api.IdentityProviderConfig, noSecret bool) *idpBundle {
	t.Helper()
	b := &idpBundle{jwks: newJWKSServer(t, body), logs: &bytes.Buffer{}}
	cfg.JWKSURL = b.jwks.srv.URL + "/.well-known/jwks.json"
	cfg.Client = b.jwks.srv.Client()
	cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: b.logs}, nil))
	idp, err := api.NewIdentityProvider(t.Context(), &cfg)
	if err != nil {
		t.Fatalf("NewIdentityProvider: %v", err)
	}
	src := newFakeSource()
	acfg := &api.Config{JWTSecret: secret, Notifier: src, IdentityProvider: idp}
	if noSecret {
		acfg.JWTSecret = nil
	}
	if b.h, err = api.New(src, acfg); err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// status is the status of GET evidence of u-42/c-7 with token.
func (b *idpBundle) status(t *testing.T, token string) int {
	t.Helper()
	return do(t, b.h, http.MethodGet, "/v1/users/u-42/conversations/c-7/evidence", token).Code
}

// warnings counts the warnings logged.
func (b *idpBundle) warnings() int { return strings.Count(b.logs.String(), "level=WARN") }

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// TestIdentityProviderTokens: tokens of each key type of the JWKS verify,
// beside HS256 tokens of the secret; iss and aud are checked; and the
// algorithm follows the key.
func TestIdentityProviderTokens(t *testing.T) {
	t.Parallel()
	k := newIdPKeys(t)
	b := setupIdP(t, k.keySet(t), api.IdentityProviderConfig{Issuer: "https://idp.example", Audience: "recall"}, false)
	exp := time.Now().Add(time.Hour).Unix()
	good := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "u-42", "exp": exp, "iss": "https://idp.example", "aud": "recall"}
		for k, v := range extra {
			if v == nil {
				delete(c, k)
				continue
			}
			c[k] = v
		}
		return c
	}
	der, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		token      string
		wantStatus int
	}{
		{"RS256", signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", good(nil)), 200},
		{"ES256", signJWT(t, jwt.SigningMethodES256, k.ec, "ec-1", good(nil)), 200},
		{"EdDSA", signJWT(t, jwt.SigningMethodEdDSA, k.ed, "ed-1", good(nil)), 200},
		{"EdDSA without kid", signJWT(t, jwt.SigningMethodEdDSA, k.ed, "", good(nil)), 200},
		{"audience in a list", signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", good(jwt.MapClaims{"aud": []string{"other", "recall"}})), 200},
		{"service scope", signJWT(t, jwt.SigningMethodES256, k.ec, "ec-1", good(jwt.MapClaims{"sub": "backend", "scope": "recall:service"})), 200},
		{"HS256 with the secret beside", sign(t, jwt.MapClaims{"sub": "u-42", "exp": exp}), 200},
		{"other user", signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", good(jwt.MapClaims{"sub": "u-43"})), 403},
		{"wrong issuer", signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", good(jwt.MapClaims{"iss": "https://evil.example"})), 401},
		{"no issuer", signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", good(jwt.MapClaims{"iss": nil})), 401},
		{"wrong audience", signJWT(t, jwt.SigningMethodES256, k.ec, "ec-1", good(jwt.MapClaims{"aud": "another-api"})), 401},
		{"no audience", signJWT(t, jwt.SigningMethodEdDSA, k.ed, "ed-1", good(jwt.MapClaims{"aud": nil})), 401},
		{"expired", signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", good(jwt.MapClaims{"exp": time.Now().Add(-time.Minute).Unix()})), 401},
		{"no exp", signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", good(jwt.MapClaims{"exp": nil})), 401},
		{"signed by another key with a known kid", signJWT(t, jwt.SigningMethodRS256, other, "rsa-1", good(nil)), 401},
		{"HS256 with the RSA public key PEM as secret", signJWT(t, jwt.SigningMethodHS256, rsaPEM, "rsa-1", good(nil)), 401},
		{"HS256 with the RSA public key PEM, no kid", signJWT(t, jwt.SigningMethodHS256, rsaPEM, "", good(nil)), 401},
		{"RS256 naming the EC key", signJWT(t, jwt.SigningMethodRS256, k.rsa, "ec-1", good(nil)), 401},
		{"ES256 naming the RSA key", signJWT(t, jwt.SigningMethodES256, k.ec, "rsa-1", good(nil)), 401},
		{"RS512 with the RSA key", signJWT(t, jwt.SigningMethodRS512, k.rsa, "rsa-1", good(nil)), 401},
		{"PS256 with the RSA key", signJWT(t, jwt.SigningMethodPS256, k.rsa, "rsa-1", good(nil)), 401},
		{"alg none", signJWT(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "rsa-1", good(nil)), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(t, b.h, http.MethodGet, "/v1/users/u-42/conversations/c-7/evidence", tt.token)
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.wantStatus, w.Body.String())
			}
			if w.Code == 401 {
				if code, _ := errorOf(t, w); code != api.CodeUnauthorized {
					t.Errorf("code = %q, want %q", code, api.CodeUnauthorized)
				}
			}
		})
	}
	if n := b.jwks.requests.Load(); n != 1 {
		t.Errorf("%d JWKS requests, want 1 (tokens of known keys fetch nothing)", n)
	}
}

// TestIdentityProviderRotation: a token whose kid the set does not hold
// makes the provider fetch the set again, at most once per
// MinRefreshInterval however many such tokens come at once, and a key the
// provider has rotated in verifies after it.
func TestIdentityProviderRotation(t *testing.T) {
	t.Parallel()
	k := newIdPKeys(t)
	const minRefresh = 300 * time.Millisecond
	b := setupIdP(t, k.keySet(t), api.IdentityProviderConfig{MinRefreshInterval: minRefresh}, true)
	exp := time.Now().Add(time.Hour).Unix()
	// A jti each, so that no token is served from the token cache.
	claims := func(i int) jwt.MapClaims { return jwt.MapClaims{"sub": "u-42", "exp": exp, "jti": strconv.Itoa(i)} }
	if n := b.jwks.requests.Load(); n != 1 {
		t.Fatalf("%d JWKS requests at start, want 1", n)
	}
	// Right after the start, an unknown kid fetches nothing.
	if got := b.status(t, signJWT(t, jwt.SigningMethodRS256, k.rotated, "rsa-2", claims(100))); got != 401 {
		t.Fatalf("a key not published yet: status %d, want 401", got)
	}
	if n := b.jwks.requests.Load(); n != 1 {
		t.Fatalf("%d JWKS requests within MinRefreshInterval of the start, want 1", n)
	}

	// The provider rotates: rsa-2 in, rsa-1 out.
	b.jwks.set(jwks(t, jwk(t, "rsa-2", "RS256", &k.rotated.PublicKey), jwk(t, "ec-1", "ES256", &k.ec.PublicKey)))
	time.Sleep(minRefresh + 50*time.Millisecond)
	var wg sync.WaitGroup
	var statuses [8]int
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = b.status(t, signJWT(t, jwt.SigningMethodRS256, k.rotated, "rsa-2", claims(i)))
		})
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("rotated key, request %d: status %d, want 200", i, s)
		}
	}
	if n := b.jwks.requests.Load(); n != 2 {
		t.Fatalf("%d JWKS requests after 8 tokens of the rotated key at once, want 2 (one refresh)", n)
	}
	// Unknown kids right after: no fetch.
	for i := range 5 {
		if got := b.status(t, signJWT(t, jwt.SigningMethodRS256, k.rotated, "unknown", claims(i))); got != 401 {
			t.Errorf("unknown kid: status %d, want 401", got)
		}
	}
	if n := b.jwks.requests.Load(); n != 2 {
		t.Errorf("%d JWKS requests after unknown kids within MinRefreshInterval, want 2", n)
	}
	// The key the provider withdrew no longer verifies.
	if got := b.status(t, signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", claims(100))); got != 401 {
		t.Errorf("withdrawn key: status %d, want 401", got)
	}
	if got := b.status(t, signJWT(t, jwt.SigningMethodES256, k.ec, "ec-1", claims(100))); got != 200 {
		t.Errorf("kept key: status %d, want 200", got)
	}
	if w := b.warnings(); w != 0 {
		t.Errorf("%d warnings, want none:\n%s", w, b.logs.String())
	}
}

// TestIdentityProviderUnreachable: a JWKS that does not answer, or answers
// an error, at start is an error that names RECALL_JWKS_URL; so is a URL
// that is not http or https.
func TestIdentityProviderUnreachable(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	tests := []struct {
		name    string
		url     string
		wantErr string
	}{
		{"nothing listens", closedURL + "/jwks.json", "RECALL_JWKS_URL"},
		{"404", notFound.URL + "/jwks.json", "404"},
		{"not a URL", "jwks.json", "not an http or https URL"},
		{"another scheme", "file:///etc/jwks.json", "not an http or https URL"},
		{"unset", "", "RECALL_JWKS_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.NewIdentityProvider(t.Context(), &api.IdentityProviderConfig{JWKSURL: tt.url, Timeout: 2 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewIdentityProvider: %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}

// TestIdentityProviderGarbage: a JWKS that answers something other than a
// key set starts (the provider may recover), refuses the provider's tokens
// and logs one warning, without token text, however many tokens come.
func TestIdentityProviderGarbage(t *testing.T) {
	t.Parallel()
	k := newIdPKeys(t)
	b := setupIdP(t, []byte("<html>Service Unavailable</html>"), api.IdentityProviderConfig{MinRefreshInterval: 50 * time.Millisecond}, false)
	exp := time.Now().Add(time.Hour).Unix()
	var tokens []string
	for i := range 4 {
		tok := signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", jwt.MapClaims{"sub": "u-42", "exp": exp, "jti": strconv.Itoa(i)})
		tokens = append(tokens, tok)
		if got := b.status(t, tok); got != 401 {
			t.Errorf("token %d: status %d, want 401", i, got)
		}
		time.Sleep(60 * time.Millisecond) // each token may fetch the set again
	}
	if n := b.jwks.requests.Load(); n < 3 {
		t.Errorf("%d JWKS requests, want the set fetched again on unknown kids", n)
	}
	// HS256 keeps working beside it.
	if got := b.status(t, userToken(t, "u-42")); got != 200 {
		t.Errorf("HS256 token: status %d, want 200", got)
	}
	if w := b.warnings(); w != 1 {
		t.Errorf("%d warnings, want 1:\n%s", w, b.logs.String())
	}
	for _, tok := range tokens {
		for _, part := range strings.Split(tok, ".") {
			if strings.Contains(b.logs.String(), part) {
				t.Fatalf("a log line holds token text:\n%s", b.logs.String())
			}
		}
	}
	// Once the set is readable again, its keys verify.
	b.jwks.set(k.keySet(t))
	time.Sleep(60 * time.Millisecond)
	if got := b.status(t, tokens[0]); got != 200 {
		t.Errorf("after the JWKS recovered: status %d, want 200", got)
	}
}

// TestIdentityProviderUnsupportedKey: keys recall cannot use (an HMAC
// secret, a P-384 key, a short RSA key) are left out with one warning
// each, and tokens that name them are refused; the set's other keys work.
func TestIdentityProviderUnsupportedKey(t *testing.T) {
	t.Parallel()
	k := newIdPKeys(t)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hmacKey := []byte("an-hmac-key-in-the-jwks-32-bytes!!")
	set := jwks(t,
		jwk(t, "rsa-1", "RS256", &k.rsa.PublicKey),
		jwk(t, "oct-1", "HS256", hmacKey),
		jwk(t, "p384-1", "", &p384.PublicKey),
		jwk(t, "rsa-ps", "PS256", &k.rotated.PublicKey),
	)
	b := setupIdP(t, set, api.IdentityProviderConfig{MinRefreshInterval: 50 * time.Millisecond}, false)
	exp := time.Now().Add(time.Hour).Unix()
	claims := func(i int) jwt.MapClaims { return jwt.MapClaims{"sub": "u-42", "exp": exp, "jti": strconv.Itoa(i)} }
	for i := range 3 {
		for _, tok := range []string{
			signJWT(t, jwt.SigningMethodHS256, hmacKey, "oct-1", claims(i)),
			signJWT(t, jwt.SigningMethodES384, p384, "p384-1", claims(i)),
			signJWT(t, jwt.SigningMethodRS256, k.rotated, "rsa-ps", claims(i)),
		} {
			if got := b.status(t, tok); got != 401 {
				t.Errorf("a token of an unusable key: status %d, want 401", got)
			}
		}
		time.Sleep(60 * time.Millisecond)
	}
	if got := b.status(t, signJWT(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", claims(0))); got != 200 {
		t.Errorf("a token of the usable key: status %d, want 200", got)
	}
	if w := b.warnings(); w != 3 {
		t.Errorf("%d warnings, want 3 (one per unusable key):\n%s", w, b.logs.String())
	}
	for _, kid := range []string{"oct-1", "p384-1", "rsa-ps"} {
		if !strings.Contains(b.logs.String(), "kid="+kid) {
			t.Errorf("no warning names kid %s:\n%s", kid, b.logs.String())
		}
	}
}

// TestPreviousSecrets: during a rotation, tokens of the previous secrets
// verify beside the new one's; other secrets do not.
func TestPreviousSecrets(t *testing.T) {
	t.Parallel()
	current := []byte("the-new-secret-of-at-least-32-bytes!!")
	previous := [][]byte{[]byte("the-old-secret-of-at-least-32-bytes!!"), []byte("an-older-secret-of-at-least-32-bytes")}
	src := newFakeSource()
	h, err := api.New(src, &api.Config{JWTSecret: current, JWTPreviousSecrets: previous, Notifier: src})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Unix()
	tests := []struct {
		name       string
		key        []byte
		wantStatus int
	}{
		{"current", current, 200},
		{"previous", previous[0], 200},
		{"older", previous[1], 200},
		{"another", []byte("not-a-secret-of-this-api-32-bytes!!!"), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := signJWT(t, jwt.SigningMethodHS256, tt.key, "", jwt.MapClaims{"sub": "u-42", "exp": exp})
			if got := do(t, h, http.MethodGet, "/v1/users/u-42/conversations/c-7/evidence", tok).Code; got != tt.wantStatus {
				t.Errorf("status %d, want %d", got, tt.wantStatus)
			}
		})
	}
	if _, err := api.New(src, &api.Config{JWTSecret: current, JWTPreviousSecrets: [][]byte{nil}, Notifier: src}); err == nil ||
		!strings.Contains(err.Error(), "RECALL_JWT_PREVIOUS_SECRETS") {
		t.Errorf("an empty previous secret: %v, want an error naming RECALL_JWT_PREVIOUS_SECRETS", err)
	}
}

// TestIdentityProviderAlone: with an identity provider and no secret, the
// handler starts and refuses HS256 tokens.
func TestIdentityProviderAlone(t *testing.T) {
	t.Parallel()
	k := newIdPKeys(t)
	b := setupIdP(t, k.keySet(t), api.IdentityProviderConfig{}, true)
	exp := time.Now().Add(time.Hour).Unix()
	if got := b.status(t, signJWT(t, jwt.SigningMethodEdDSA, k.ed, "ed-1", jwt.MapClaims{"sub": "u-42", "exp": exp})); got != 200 {
		t.Errorf("EdDSA token: status %d, want 200", got)
	}
	if got := b.status(t, userToken(t, "u-42")); got != 401 {
		t.Errorf("HS256 token without a secret: status %d, want 401", got)
	}
}
