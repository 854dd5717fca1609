package evidence_test

import (
	"github.com/recallhq/recall/evidence"
	"testing"
)

func TestStoredChunkTypes(t *testing.T) {
	tests := []struct {
		in   string
		want evidence.Role
	}{
		{`{"type":"AIMessageChunk","data":{"content":"hi","id":"a"}}`, evidence.RoleAssistant},
		{`{"type":"HumanMessageChunk","data":{"content":"hi"}}`, evidence.RoleUser},
		{`{"type":"ai","data":{"content":"hi"}}`, evidence.RoleAssistant},
	}
	for _, tt := range tests {
		m, err := evidence.DecodeMessage([]byte(tt.in))
		if err != nil || m.Role != tt.want {
			t.Errorf("%s: role %q, err %v; want %q", tt.in, m.Role, err, tt.want)
		}
	}
}
