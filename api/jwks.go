package api

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/internal/redact"
)

// Defaults of an IdentityProviderConfig.
const (
	// DefaultJWKSRefreshInterval is the age after which the keys are
	// fetched again, at the next token of the identity provider.
	DefaultJWKSRefreshInterval = time.Hour
	// DefaultJWKSMinRefreshInterval is the least time between two fetches
	// of the JWKS, however many tokens name a key it does not hold.
	DefaultJWKSMinRefreshInterval = 5 * time.Second
	// DefaultJWKSTimeout bounds one fetch of the JWKS.
	DefaultJWKSTimeout = 10 * time.Second
)

// maxJWKSBytes bounds a JWKS document; a larger answer is not a key set.
const maxJWKSBytes = 1 << 20

// maxWarnedKeys bounds the key ids an IdentityProvider remembers having
// warned about.
const maxWarnedKeys = 256

// IdentityProviderConfig configures an IdentityProvider.
type IdentityProviderConfig struct {
	// JWKSURL is the http or https URL of the identity provider's JSON Web
	// Key Set (RECALL_JWKS_URL). Defaults to none: it must be set.
	JWKSURL string
	// Issuer, when set, is the iss claim the provider's tokens must carry
	// (RECALL_JWT_ISSUER). Defaults to "": iss is not checked.
	Issuer string
	// Audience, when set, must be among the aud claim of the provider's
	// tokens (RECALL_JWT_AUDIENCE). Defaults to "": aud is not checked.
	Audience string
	// Client fetches the JWKS. Defaults to a client whose requests time out
	// after Timeout.
	Client *http.Client
	// Timeout bounds one fetch of the JWKS. Defaults to 10s.
	Timeout time.Duration
	// RefreshInterval is the age after which the keys are fetched again, at
	// the next token of the provider, so that a key the provider withdrew
	// stops verifying. Defaults to 1h.
	RefreshInterval time.Duration
	// MinRefreshInterval is the least time between two fetches: a token
	// that names a key the set does not hold makes recall fetch the set
	// again (the provider rotated its keys), at most once per interval.
	// Defaults to 5s.
	MinRefreshInterval time.Duration
	// Logger receives a warning when the JWKS cannot be read or holds a key
	// recall cannot use, once until that changes; never token text.
	// Defaults to a logger that discards.
	Logger *slog.Logger
}

// WithDefaults returns a copy of c (which may be nil) with every zero
// field that has a default set to it.
func (c *IdentityProviderConfig) WithDefaults() *IdentityProviderConfig {
	var out IdentityProviderConfig
	if c != nil {
		out = *c
	}
	out.Timeout = cmp.Or(out.Timeout, DefaultJWKSTimeout)
	out.RefreshInterval = cmp.Or(out.RefreshInterval, DefaultJWKSRefreshInterval)
	out.MinRefreshInterval = cmp.Or(out.MinRefreshInterval, DefaultJWKSMinRefreshInterval)
	if out.Client == nil {
		out.Client = &http.Client{Timeout: out.Timeout}
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return &out
}

// validate reports the first field of a defaulted IdentityProviderConfig
// that cannot work, saying how to fix it.
func (c *IdentityProviderConfig) validate() error {
	if c.JWKSURL == "" {
		return errors.New("api: IdentityProviderConfig.JWKSURL must be set: set RECALL_JWKS_URL to the identity provider's JWKS URL (its jwks_uri)")
	}
	u, err := url.Parse(c.JWKSURL)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Errorf("api: RECALL_JWKS_URL %q is not an http or https URL: set it to the identity provider's JWKS URL (its jwks_uri)", redact.ConnString(c.JWKSURL))
	case c.Timeout < 0:
		return fmt.Errorf("api: IdentityProviderConfig.Timeout is %v: it must be positive, or 0 for the default %v", c.Timeout, DefaultJWKSTimeout)
	case c.RefreshInterval < 0:
		return fmt.Errorf("api: IdentityProviderConfig.RefreshInterval is %v: it must be positive, or 0 for the default %v", c.RefreshInterval, DefaultJWKSRefreshInterval)
	case c.MinRefreshInterval < 0:
		return fmt.Errorf("api: IdentityProviderConfig.MinRefreshInterval is %v: it must be positive, or 0 for the default %v", c.MinRefreshInterval, DefaultJWKSMinRefreshInterval)
	}
	return nil
}

// IdentityProvider verifies the tokens of an identity provider with the
// RS256, ES256 and EdDSA keys of its JWKS. It fetches the set when it is
// made, again when a token names a key the set does not hold (at most once
// per MinRefreshInterval) and when the keys are older than RefreshInterval.
// It starts no goroutine. Pass it to [New] in Config.IdentityProvider.
type IdentityProvider struct {
	url      string
	issuer   string
	audience string
	client   *http.Client
	timeout  time.Duration
	maxAge   time.Duration
	minAge   time.Duration
	logger   *slog.Logger

	keys    jwkset.Storage // the usable keys of the last set read
	keyfunc keyfunc.Keyfunc
	// fetched is when the set was last fetched or tried (Unix nanoseconds).
	fetched atomic.Int64

	mu      sync.Mutex // serialises fetches and guards the fields below
	failing bool       // a warning says the set cannot be read
	warned  map[string]bool
}

// NewIdentityProvider fetches the identity provider's JWKS and returns an
// IdentityProvider that verifies its tokens. A JWKS that cannot be fetched
// (no answer, or a status other than 200) is an error: the API refuses to
// start without the keys it was told to trust. A JWKS that answers
// something other than a key set, or keys recall cannot use, is logged
// once; tokens that would need those keys are refused.
func NewIdentityProvider(ctx context.Context, cfg *IdentityProviderConfig) (*IdentityProvider, error) {
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	p := &IdentityProvider{
		url: c.JWKSURL, issuer: c.Issuer, audience: c.Audience,
		client: c.Client, timeout: c.Timeout, maxAge: c.RefreshInterval, minAge: c.MinRefreshInterval,
		logger: c.Logger,
		keys:   jwkset.NewMemoryStorage(),
		warned: make(map[string]bool),
	}
	kf, err := keyfunc.New(keyfunc.Options{
		Storage:      refreshingStorage{Storage: p.keys, p: p},
		UseWhitelist: []jwkset.USE{jwkset.UseSig, ""},
	})
	if err != nil {
		return nil, fmt.Errorf("api: identity provider: %w", err)
	}
	p.keyfunc = kf
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fetched.Store(time.Now().UnixNano())
	body, err := p.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("api: cannot fetch the identity provider's JWKS at %s (RECALL_JWKS_URL): %w; "+
			"recall does not start without the keys it was told to trust: check the URL and that this host reaches it",
			redact.ConnString(p.url), err)
	}
	p.install(ctx, body)
	return p, nil
}

// get fetches the JWKS document. Its errors say that the set could not be
// fetched at all.
func (p *IdentityProvider) get(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		// The url.Error quotes the URL, which may hold credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxJWKSBytes))
		return nil, fmt.Errorf("it answered %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	return body, nil
}

// install reads a fetched document and, when it is a key set, replaces the
// keys with its usable ones. The caller holds p.mu.
func (p *IdentityProvider) install(ctx context.Context, body []byte) {
	keys, err := p.parse(ctx, body)
	if err != nil {
		p.fail(ctx, err)
		return
	}
	if err := p.keys.KeyReplaceAll(ctx, keys); err != nil {
		p.fail(ctx, err)
		return
	}
	if p.failing {
		p.failing = false
		p.logger.InfoContext(ctx, "api: the identity provider's JWKS is readable again",
			slog.String("jwks_url", redact.ConnString(p.url)), slog.Int("keys", len(keys)))
	}
}

// fail logs, once until the set is read again, that it cannot be. The
// caller holds p.mu.
func (p *IdentityProvider) fail(ctx context.Context, err error) {
	if p.failing {
		return
	}
	p.failing = true
	p.logger.WarnContext(ctx, "api: cannot read the identity provider's JWKS: tokens are verified with the keys read before, if any, and the others refused",
		slog.String("jwks_url", redact.ConnString(p.url)), slog.String("error", err.Error()))
}

// parse returns the usable keys of a JWKS document, or an error when the
// document is not a key set. Keys recall cannot use are left out, with a
// warning once per key.
func (p *IdentityProvider) parse(ctx context.Context, body []byte) ([]jwkset.JWK, error) {
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("the answer is larger than %d bytes", maxJWKSBytes)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("the answer is not a JWK set: %w", err)
	}
	if doc.Keys == nil {
		return nil, errors.New(`the answer is not a JWK set: it has no "keys" list`)
	}
	keys := make([]jwkset.JWK, 0, len(doc.Keys))
	for i, raw := range doc.Keys {
		var m jwkset.JWKMarshal
		if err := json.Unmarshal(raw, &m); err != nil {
			p.warnKey(ctx, fmt.Sprintf("#%d", i), "", fmt.Errorf("not a JWK: %w", err))
			continue
		}
		switch {
		case m.USE == jwkset.UseEnc:
			continue // an encryption key: not for tokens, nothing to warn about
		case m.KTY == jwkset.KtyOct:
			p.warnKey(ctx, m.KID, string(m.KTY), errors.New("a shared secret: recall verifies the identity provider's tokens with public keys only"))
			continue
		}
		jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err == nil {
			err = usableKey(jwk)
		}
		if err != nil {
			p.warnKey(ctx, m.KID, string(m.KTY), err)
			continue
		}
		keys = append(keys, jwk)
	}
	return keys, nil
}

// warnKey logs once per key id that a key of the set cannot be used.
func (p *IdentityProvider) warnKey(ctx context.Context, kid, kty string, err error) {
	if p.warned[kid] || len(p.warned) >= maxWarnedKeys {
		return
	}
	p.warned[kid] = true
	p.logger.WarnContext(ctx, "api: the identity provider's JWKS holds a key recall cannot use; tokens signed with it are refused",
		slog.String("jwks_url", redact.ConnString(p.url)), slog.String("kid", kid), slog.String("kty", kty), slog.String("error", err.Error()))
}

// usableKey reports why a key of the set cannot verify tokens: recall
// takes RSA keys of at least 2048 bits (RS256), P-256 keys (ES256) and
// Ed25519 keys (EdDSA), and, where the key names its algorithm, only that
// one.
func usableKey(jwk jwkset.JWK) error {
	alg, ok := keyAlg(jwk.Key())
	if !ok {
		return fmt.Errorf("unsupported key: recall verifies RS256 (RSA), ES256 (P-256) and EdDSA (Ed25519) keys, not %T", jwk.Key())
	}
	if k, ok := jwk.Key().(*rsa.PublicKey); ok && k.N.BitLen() < 2048 {
		return fmt.Errorf("an RSA key of %d bits: at least 2048 are needed", k.N.BitLen())
	}
	if a := jwk.Marshal().ALG.String(); a != "" && a != alg {
		return fmt.Errorf("the key is for %q, which recall does not verify with a key of this type (it takes %s)", a, alg)
	}
	return nil
}

// keyAlg returns the algorithm a key verifies: the algorithm follows the
// key, and a token must name it.
func keyAlg(key any) (string, bool) {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return jwt.SigningMethodRS256.Alg(), true
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return jwt.SigningMethodES256.Alg(), true
		}
	case ed25519.PublicKey:
		return jwt.SigningMethodEdDSA.Alg(), true
	}
	return "", false
}

// refresh fetches the set again when it is due: when the keys are older
// than RefreshInterval, or, for a token that names a key the set does not
// hold, when the last fetch is older than MinRefreshInterval. Concurrent
// callers share one fetch, and a token whose key is unknown waits for a
// fetch under way, which may bring its key. A set that cannot be fetched
// or read keeps the keys read before.
func (p *IdentityProvider) refresh(ctx context.Context, unknownKey bool) {
	due := func() bool {
		age := time.Since(time.Unix(0, p.fetched.Load()))
		return age >= p.maxAge || (unknownKey && age >= p.minAge)
	}
	if !unknownKey && !due() {
		return // the common case: a known key, keys fresh enough
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !due() { // another request fetched it meanwhile
		return
	}
	p.fetched.Store(time.Now().UnixNano())
	// The fetch serves every later token: a client that goes away does not
	// cut it short.
	ctx = context.WithoutCancel(ctx)
	body, err := p.get(ctx)
	if err != nil {
		p.fail(ctx, fmt.Errorf("fetch: %w", err))
		return
	}
	p.install(ctx, body)
}

// key returns the key that verifies t, a token whose algorithm the parser
// admitted as the provider's (RS256, ES256 or EdDSA): the key its kid
// names, or, without a kid, every key of the set. The key's type must fit
// the token's algorithm.
func (p *IdentityProvider) key(ctx context.Context, t *jwt.Token) (any, error) {
	p.refresh(ctx, false)
	key, err := p.keyfunc.KeyfuncCtx(ctx)(t)
	if err != nil {
		return nil, err
	}
	alg := t.Method.Alg()
	if set, ok := key.(jwt.VerificationKeySet); ok {
		set.Keys = slices.DeleteFunc(set.Keys, func(k jwt.VerificationKey) bool {
			a, ok := keyAlg(k)
			return !ok || a != alg
		})
		return set, nil
	}
	if a, ok := keyAlg(key); !ok || a != alg {
		return nil, errKeyMismatch
	}
	return key, nil
}

// errKeyMismatch is a token whose algorithm does not fit its key.
var errKeyMismatch = errors.New("the token's algorithm does not fit its key")

// checkClaims checks the claims the provider's tokens must carry.
func (p *IdentityProvider) checkClaims(c *claims) error {
	if p.issuer != "" && c.Issuer != p.issuer {
		return errors.New("its issuer (iss) is not the identity provider's")
	}
	if p.audience != "" && !slices.Contains(c.Audience, p.audience) {
		return errors.New("its audience (aud) does not name this API")
	}
	return nil
}

// refreshingStorage is the key storage keyfunc reads: the keys of the last
// set read, fetched again when a token names a key they do not hold.
type refreshingStorage struct {
	jwkset.Storage
	p *IdentityProvider
}

func (s refreshingStorage) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	jwk, err := s.Storage.KeyRead(ctx, kid)
	if errors.Is(err, jwkset.ErrKeyNotFound) {
		s.p.refresh(ctx, true)
		jwk, err = s.Storage.KeyRead(ctx, kid)
	}
	return jwk, err
}
