package api_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/evidence"
)

// memorySource serves every conversation as unknown.
type memorySource struct{}

func (memorySource) Evidence(_ context.Context, userID, conversationID string) (evidence.Record, error) {
	return evidence.Record{UserID: userID, ConversationID: conversationID}, nil
}

func (m memorySource) Search(ctx context.Context, userID, conversationID, _ string) (evidence.Record, error) {
	return m.Evidence(ctx, userID, conversationID)
}

func (memorySource) DeleteConversation(context.Context, string, string) error { return nil }

// quietNotifier never wakes anyone.
type quietNotifier struct{}

func (quietNotifier) Subscribe(string, string) (<-chan struct{}, func()) { return nil, func() {} }

func ExampleNew() {
	secret := []byte("a secret of at least thirty-two bytes")
	h, err := api.New(memorySource{}, &api.Config{JWTSecret: secret, Notifier: quietNotifier{}})
	if err != nil {
		panic(err)
	}
	token, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "u-42", "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString(secret)

	r := httptest.NewRequest("GET", "/v1/users/u-42/conversations/c-7/evidence", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code)
	fmt.Println(w.Body.String())

	r = httptest.NewRequest("GET", "/v1/users/u-43/conversations/c-7/evidence", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code)
	fmt.Print(w.Body.String())
	// Output:
	// 200
	// {"user_id":"u-42","conversation_id":"c-7","version":0,"cursor":0,"message_count":0,"prefix_digest":"2588d5921143b5518ddd013e05cb0ff78e55e360b0dae2bcbd6187db54f2b9ed","omitted_entries":0,"estimated_tokens":0,"buckets":{"constraints":[],"decisions":[],"open_work":[],"recent_context":[]},"message":null,"updated_at":null,"lagging":false}
	// 403
	// {"error":{"code":"forbidden","message":"the token may act only for the user named by its sub claim (or needs the recall:service scope)"}}
}
