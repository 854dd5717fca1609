package apiclient_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/internal/apiclient"
)

func TestSign(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Now().Truncate(time.Second)
	tests := []struct {
		name      string
		subject   string
		ttl       time.Duration
		opts      *apiclient.TokenOptions
		wantScope any
		wantValid bool
	}{
		{"user", "u-42", 2 * time.Minute, nil, nil, true},
		{"service", "svc", time.Hour, &apiclient.TokenOptions{Service: true}, "recall:service", true},
		{"expired", "u-42", -time.Minute, nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			if opts == nil {
				opts = &apiclient.TokenOptions{}
			}
			opts.Now = now
			s, err := apiclient.Sign(secret, tt.subject, tt.ttl, opts)
			if err != nil {
				t.Fatal(err)
			}
			claims := jwt.MapClaims{}
			_, err = jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired()).
				ParseWithClaims(s, claims, func(*jwt.Token) (any, error) { return secret, nil })
			if (err == nil) != tt.wantValid {
				t.Fatalf("parse: %v, want valid %v", err, tt.wantValid)
			}
			if claims["sub"] != tt.subject || claims["scope"] != tt.wantScope {
				t.Errorf("claims %v, want sub %q scope %v", claims, tt.subject, tt.wantScope)
			}
			if exp := int64(claims["exp"].(float64)); exp != now.Add(tt.ttl).Unix() {
				t.Errorf("exp %d, want %d", exp, now.Add(tt.ttl).Unix())
			}
		})
	}
	if _, err := apiclient.Sign(nil, "u", time.Minute, nil); err == nil {
		t.Error("an empty secret signed a token")
	}
	if _, err := apiclient.Sign(secret[:apiclient.MinSecretBytes-1], "u", time.Minute, nil); err == nil {
		t.Errorf("a secret of %d bytes signed a token", apiclient.MinSecretBytes-1)
	}
}

func TestReadClaims(t *testing.T) {
	t.Parallel()
	secret := []byte(strings.Repeat("k", apiclient.MinSecretBytes))
	user, err := apiclient.Sign(secret, "u-42", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	service, err := apiclient.Sign(secret, "svc", time.Hour, &apiclient.TokenOptions{Service: true})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "svc", "scope": []string{"read", apiclient.ServiceScope}}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		token   string
		want    apiclient.Claims
		wantErr bool
	}{
		{"user", user, apiclient.Claims{Subject: "u-42"}, false},
		{"service, scope a string", service, apiclient.Claims{Subject: "svc", Service: true}, false},
		{"service, scope a list", listed, apiclient.Claims{Subject: "svc", Service: true}, false},
		{"not a JWT", "opaque-token", apiclient.Claims{}, true},
	}
	for _, tt := range tests {
		got, err := apiclient.ReadClaims(tt.token)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%s: ReadClaims = %+v, %v; want %+v, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}
