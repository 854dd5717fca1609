// Package apiclient is the small client of recall's read API that the CLI,
// the benchmarks and the tests share: it signs bearer tokens (HS256 JWTs
// signed with RECALL_JWT_SECRET, whose sub is the user the token acts for,
// with exp, and whose scope holds recall:service when the token may act for
// any user; the API verifies them, package api), reads whom a token acts
// for without verifying it, and waits for a conversation's evidence to
// reach a cursor.
package apiclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ServiceScope is the scope of a token that acts for any user.
const ServiceScope = "recall:service"

// MinSecretBytes is the shortest secret Sign signs with, and the shortest
// the HTTP API accepts: a shorter one falls to an offline brute force from
// any token it signed.
const MinSecretBytes = 32

// TokenOptions are the optional parts of a token.
type TokenOptions struct {
	// Service adds the recall:service scope: the token acts for any user.
	// Defaults to false.
	Service bool
	// Now is the token's issue time (iat); exp is Now plus the TTL.
	// Defaults to time.Now().
	Now time.Time
}

// Sign returns an HS256 JWT for subject that expires ttl after it is
// issued. A negative ttl makes a token that has already expired (for
// tests).
func Sign(secret []byte, subject string, ttl time.Duration, opts *TokenOptions) (string, error) {
	switch {
	case len(secret) == 0:
		return "", errors.New("apiclient: the secret is empty: set RECALL_JWT_SECRET")
	case len(secret) < MinSecretBytes:
		return "", fmt.Errorf("apiclient: the secret is %d bytes: it must be at least %d (the API refuses shorter ones)", len(secret), MinSecretBytes)
	}
	var o TokenOptions
	if opts != nil {
		o = *opts
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	iat := o.Now
	if ttl < 0 {
		// An expired token was not issued after it expired.
		iat = o.Now.Add(ttl - time.Minute)
	}
	claims := jwt.MapClaims{
		"sub": subject,
		"iat": iat.Unix(),
		"exp": o.Now.Add(ttl).Unix(),
	}
	if o.Service {
		claims["scope"] = ServiceScope
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}

// Scopes is a token's scope claim: a space-separated string or a list of
// strings.
type Scopes []string

// UnmarshalJSON reads either form.
func (s *Scopes) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = strings.Fields(str)
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("scope must be a string or a list of strings")
	}
	*s = list
	return nil
}

// Claims are whom a token acts for.
type Claims struct {
	// Subject is the sub claim: the user the token acts for.
	Subject string
	// Service is true when the scope holds ServiceScope: the token acts
	// for any user.
	Service bool
}

// ReadClaims reads whom token acts for without verifying it: what a client
// of the API, which verifies the token, may learn of its own token (to
// default a user id, say). It fails for a string that is not a JWT.
func ReadClaims(token string) (Claims, error) {
	var c struct {
		jwt.RegisteredClaims
		Scope Scopes `json:"scope"`
	}
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil {
		return Claims{}, fmt.Errorf("apiclient: the token is not a JWT: %w", err)
	}
	return Claims{Subject: c.Subject, Service: slices.Contains(c.Scope, ServiceScope)}, nil
}
