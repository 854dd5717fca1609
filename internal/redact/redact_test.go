package redact_test

import (
	"strings"
	"testing"

	"github.com/recallhq/recall/internal/redact"
)

func TestConnString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"postgres URL with a password", "postgres://app:s3cret@db:5432/recall?sslmode=disable", "postgres://app:xxxxx@db:5432/recall?sslmode=disable"},
		{"postgres URL without a password", "postgres://postgres@127.0.0.1:5432/recall?sslmode=disable", "postgres://postgres@127.0.0.1:5432/recall?sslmode=disable"},
		{"postgres URL with a password parameter", "postgres://app@db/recall?password=s3cret&sslmode=require", "postgres://app@db/recall?password=xxxxx&sslmode=require"},
		{"NATS URL with a token", "nats://s3cret@127.0.0.1:4222", "nats://xxxxx@127.0.0.1:4222"},
		{"NATS URL with user and password", "nats://recall:s3cret@nats:4222", "nats://recall:xxxxx@nats:4222"},
		{"NATS URL without credentials", "nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"keyword/value", "host=db user=app password=s3cret dbname=recall", "host=db user=app password=xxxxx dbname=recall"},
		{"keyword/value quoted", "host=db password='s3 cr\\'et' dbname=recall", "host=db password=xxxxx dbname=recall"},
		{"keyword/value spaced", "host = db  password = s3cret", "host=db password=xxxxx"},
		{"keyword/value sslpassword", "host=db sslpassword=s3cret", "host=db sslpassword=xxxxx"},
		{"keyword/value unterminated quote", "host=db password='s3cret", "(an unparsable connection string)"},
		{"unparsable URL", "postgres://app:s3cret@db:port/x", "(an unparsable URL)"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := redact.ConnString(tt.in)
			if got != tt.want {
				t.Errorf("ConnString(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if strings.Contains(got, "s3") {
				t.Errorf("ConnString(%q) = %q keeps the secret", tt.in, got)
			}
		})
	}
}

func FuzzConnString(f *testing.F) {
	for _, s := range []string{"postgres://a:s3cret@h/d", "host=h password=s3cret", "password='s3cret' host=h", "nats://s3cret@h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := redact.ConnString(s)
		// A password given as a keyword is never printed.
		if i := strings.Index(s, " password=s3cret"); i >= 0 && !strings.Contains(s, "://") && strings.Contains(got, "s3cret") {
			t.Fatalf("ConnString(%q) = %q", s, got)
		}
	})
}
