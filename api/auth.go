package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/internal/apiclient"
)

// ServiceScope is the scope that lets a token act for any user; the one
// recall's token minting writes.
const ServiceScope = apiclient.ServiceScope

// claims are the JWT claims the API reads.
type claims struct {
	jwt.RegisteredClaims
	Scope apiclient.Scopes `json:"scope"`
}

// Caller is who a verified bearer token acts for.
type Caller struct {
	// Subject is the token's sub claim: the user it acts for.
	Subject string
	// Service is true when the token's scope holds recall:service: it
	// acts for any user.
	Service bool
}

// MayActFor reports whether c may read and delete userID's conversations.
func (c Caller) MayActFor(userID string) bool {
	return c.Service || (c.Subject != "" && c.Subject == userID)
}

var errNoToken = &Error{
	Status: http.StatusUnauthorized, Code: CodeUnauthorized,
	Message: "missing bearer token: send Authorization: Bearer <JWT>",
}

// authenticate verifies the request's bearer token: exp required, HS256
// with the configured secrets or RS256, ES256 and EdDSA with the identity
// provider's keys.
func (h *Handler) authenticate(r *http.Request) (Caller, error) {
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Caller{}, errNoToken
	}
	return h.verify(r.Context(), strings.TrimSpace(token))
}

// RequireService serves next only to requests that carry a token with the
// recall:service scope: as a bearer token, or as the password of HTTP basic
// authentication (any user name), so that a browser can ask for it. Others
// get 401 (with a basic-authentication challenge) or 403. It guards the
// operators' pages, such as the River UI.
func (h *Handler) RequireService(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p Caller
		var err error
		if _, password, ok := r.BasicAuth(); ok {
			p, err = h.verify(r.Context(), password)
		} else {
			p, err = h.authenticate(r)
		}
		if err == nil && !p.Service {
			err = newError(http.StatusForbidden, CodeForbidden, "this page needs a token with the "+ServiceScope+" scope")
		}
		if err != nil {
			status, code, message := toStatus(err)
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Basic realm="recall operators", charset="UTF-8"`)
			}
			writeErrorBody(w, status, code, message)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// verify verifies a token. The algorithm follows the key: an HS256 token
// is verified with the secrets only, a token of another algorithm with the
// identity provider's keys only, and only with a key of its algorithm's
// type.
func (h *Handler) verify(ctx context.Context, token string) (Caller, error) {
	if token == "" {
		return Caller{}, errNoToken
	}
	now := time.Now()
	if p, ok := h.tokens.get(token, now); ok {
		return p, nil
	}
	var c claims
	var provider bool // the identity provider's key verified it
	key := func(t *jwt.Token) (any, error) {
		if t.Method == jwt.SigningMethodHS256 {
			if len(h.secrets) == 0 {
				return nil, errNoSecret
			}
			return jwt.VerificationKeySet{Keys: h.secrets}, nil
		}
		// The parser admits RS256, ES256 and EdDSA besides.
		if h.idp == nil {
			return nil, errNoProvider
		}
		provider = true
		return h.idp.key(ctx, t)
	}
	if _, err := h.parser.ParseWithClaims(token, &c, key); err != nil {
		return Caller{}, invalidToken(tokenProblem(err))
	}
	if provider {
		if err := h.idp.checkClaims(&c); err != nil {
			return Caller{}, invalidToken(err.Error())
		}
	}
	p := Caller{Subject: c.Subject, Service: slices.Contains(c.Scope, ServiceScope)}
	if !p.Service && p.Subject == "" {
		return Caller{}, &Error{
			Status: http.StatusUnauthorized, Code: CodeUnauthorized,
			Message: "invalid bearer token: no sub claim and no " + ServiceScope + " scope",
		}
	}
	// The parser requires exp, so it is set.
	h.tokens.put(token, p, c.ExpiresAt.Time, c.NotBefore)
	return p, nil
}

// maxCachedTokens bounds the verified-token cache.
const maxCachedTokens = 4096

// tokenCache remembers tokens that verified, so that a client that sends
// the same token with every request pays for HMAC and JSON once. Only
// verified tokens enter it, keyed by the whole token (signature included),
// and an entry serves only within the token's own validity.
type tokenCache struct {
	mu      sync.RWMutex
	entries map[string]cachedToken
}

type cachedToken struct {
	p         Caller
	notBefore time.Time
	expires   time.Time
}

func (c *tokenCache) get(token string, now time.Time) (Caller, bool) {
	c.mu.RLock()
	e, ok := c.entries[token]
	c.mu.RUnlock()
	if !ok || now.Before(e.notBefore) || !now.Before(e.expires) {
		return Caller{}, false
	}
	return e.p, true
}

func (c *tokenCache) put(token string, p Caller, expires time.Time, nbf *jwt.NumericDate) {
	e := cachedToken{p: p, expires: expires}
	if nbf != nil {
		e.notBefore = nbf.Time
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]cachedToken)
	}
	if len(c.entries) >= maxCachedTokens {
		// Drop expired entries, and if that frees nothing, an arbitrary
		// eighth: tokens are cheap to verify again.
		now := time.Now()
		for k, v := range c.entries {
			if !now.Before(v.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < maxCachedTokens*7/8 {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[token] = e
}

// Why a token has no key.
var (
	errNoSecret   = errors.New("no HS256 secret is configured")
	errNoProvider = errors.New("no identity provider is configured")
)

// tokenAlgorithms are the algorithms the API verifies: HS256 with its
// secrets, the others with the identity provider's keys.
var tokenAlgorithms = []string{
	jwt.SigningMethodHS256.Alg(),
	jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg(), jwt.SigningMethodEdDSA.Alg(),
}

// invalidToken is the 401 of a token that does not verify.
func invalidToken(problem string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: "invalid bearer token: " + problem}
}

// tokenProblem says what is wrong with a token in a few words, without
// echoing any of it.
func tokenProblem(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "exp is required"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "not valid yet"
	case errors.Is(err, errNoSecret):
		return "HS256, and this API has no HS256 secret"
	case errors.Is(err, errNoProvider):
		return "RS256, ES256 or EdDSA, and this API has no identity provider"
	case errors.Is(err, jwkset.ErrKeyNotFound):
		return "its kid names no key of the identity provider"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "bad signature, or an algorithm that does not fit the key (HS256 with the API's secret; RS256, ES256 or EdDSA with the identity provider's keys)"
	default:
		return "invalid claims"
	}
}
