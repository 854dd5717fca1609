package api_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/recallhq/recall/internal/contextload"
)

// The context benchmarks post the same 1 MB body (a 200-message checkpoint
// with ten large tool results) to the whole handler (routing, JWT, evidence
// read from the fake source, decoding, assembly, metrics, writing) and to a
// baseline handler that only decodes the body and writes it back. Compare
// their ns/op: the endpoint should stay within twice the baseline.

func BenchmarkContextEndpoint(b *testing.B) {
	bb := setup(b)
	s, _ := fold(b, history)
	bb.src.set(recordOf("u-42", "c-7", &s))
	tok := userToken(b, "u-42")
	body := string(contextload.Body())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		w := post(b, bb.h, contextPath, tok, body)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	}
}

func BenchmarkContextBaseline(b *testing.B) {
	h := contextload.EchoHandler()
	body := contextload.Body()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, contextPath, bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}
