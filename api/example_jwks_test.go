package api_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/api"
)

func ExampleNewIdentityProvider() {
	// An identity provider's signing key and its JWKS endpoint.
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	jwksBody := fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","use":"sig","x":%q}]}`,
		base64.RawURLEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))
	idpServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, jwksBody)
	}))
	defer idpServer.Close()

	idp, err := api.NewIdentityProvider(context.Background(), &api.IdentityProviderConfig{
		JWKSURL: idpServer.URL, Issuer: "https://idp.example", Audience: "recall",
	})
	if err != nil {
		panic(err)
	}
	h, err := api.New(memorySource{}, &api.Config{IdentityProvider: idp, Notifier: quietNotifier{}})
	if err != nil {
		panic(err)
	}
	for _, aud := range []string{"recall", "another-api"} {
		tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
			"sub": "u-42", "exp": time.Now().Add(time.Hour).Unix(), "iss": "https://idp.example", "aud": aud,
		})
		tok.Header["kid"] = "k1"
		token, _ := tok.SignedString(key)
		r := httptest.NewRequest("GET", "/v1/users/u-42/conversations/c-7/evidence", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(aud, w.Code)
	}
	// Output:
	// recall 200
	// another-api 401
}
