// Package token signs recall's bearer tokens: HS256 JWTs signed with
// RECALL_JWT_SECRET, whose sub is the user the token acts for, with exp, and
// whose scope holds recall:service when the token may act for any user.
// The CLI (recall token, recall dev, recall publish --wait), the benchmarks
// and the tests sign through it; the API verifies them (package api).
package token

import (
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ServiceScope is the scope of a token that acts for any user.
const ServiceScope = "recall:service"

// Options are the optional parts of a token.
type Options struct {
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
func Sign(secret []byte, subject string, ttl time.Duration, opts *Options) (string, error) {
	if len(secret) == 0 {
		return "", errors.New("token: the secret is empty: set RECALL_JWT_SECRET")
	}
	var o Options
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
