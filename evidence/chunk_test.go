package evidence_test

import (
	"testing"

	"github.com/recallhq/recall/checkpoint"
)

func TestStoredChunkTypes(t *testing.T) {
	tests := []struct {
		in   string
		want checkpoint.Role
	}{
		{`{"type":"AIMessageChunk","data":{"content":"hi","id":"a"}}`, checkpoint.RoleAssistant},
		{`{"type":"HumanMessageChunk","data":{"content":"hi"}}`, checkpoint.RoleUser},
		{`{"type":"ai","data":{"content":"hi"}}`, checkpoint.RoleAssistant},
	}
	for _, tt := range tests {
		m, err := checkpoint.DecodeMessage([]byte(tt.in))
		if err != nil || m.Role != tt.want {
			t.Errorf("%s: role %q, err %v; want %q", tt.in, m.Role, err, tt.want)
		}
	}
}
