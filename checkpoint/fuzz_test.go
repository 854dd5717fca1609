package checkpoint_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

func FuzzDecodeMessage(f *testing.F) {
	for _, tt := range decodeTests {
		f.Add([]byte(tt.in))
	}
	for _, tt := range decodeErrorTests {
		f.Add([]byte(tt.in))
	}
	for _, c := range checkpointtest.LoadCorpus(f) {
		for _, m := range c.Messages {
			f.Add([]byte(m))
		}
	}
	for _, v := range checkpointtest.LoadDigestVectors(f).Vectors {
		for _, m := range v.Messages {
			f.Add([]byte(m))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := checkpoint.DecodeMessage(data)
		if err != nil {
			var de *checkpoint.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is %T, want *DecodeError", err, err)
			}
			return
		}
		switch m.Role {
		case checkpoint.RoleUser, checkpoint.RoleAssistant, checkpoint.RoleSystem, checkpoint.RoleTool:
		default:
			t.Fatalf("role %q", m.Role)
		}
		if m.Type == "" || !json.Valid(m.Content) || m.Content[0] != '[' || !json.Valid(m.Artifact) {
			t.Fatalf("bad message: type %q content %s artifact %s", m.Type, m.Content, m.Artifact)
		}
		if !utf8.ValidString(m.Text) {
			t.Fatalf("text is not valid UTF-8")
		}
		d, err := m.Digest()
		if err != nil {
			var de *checkpoint.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Digest error %v is %T, want *DecodeError", err, err)
			}
			return
		}
		canon, err := m.Canonical()
		if err != nil {
			t.Fatalf("Digest succeeded but Canonical failed: %v", err)
		}
		if sha256.Sum256(canon) != d {
			t.Fatalf("digest is not SHA-256 of the canonical form")
		}
		// The canonical form is a fixed point of the jcs library: recall's
		// own writing of the outer object and its strings agrees with it.
		again, err := jcs.Transform(canon)
		if err != nil {
			t.Fatalf("canonical form %s does not canonicalise: %v", canon, err)
		}
		if !bytes.Equal(again, canon) {
			t.Fatalf("canonical form is not canonical:\n got %s\nwant %s", canon, again)
		}
	})
}

func FuzzParseEvent(f *testing.F) {
	for _, tt := range parseEventTests {
		if len(tt.in) < 1<<16 {
			f.Add([]byte(tt.in))
		}
	}
	for _, c := range checkpointtest.LoadCorpus(f) {
		f.Add(checkpointtest.CorpusEvent(c, c.Messages))
	}
	// Huge and hostile numbers where the event has numbers.
	for _, n := range []string{"9223372036854775807", "9223372036854775806", "-9223372036854775808", "2147483647", "2147483646",
		"2147483648", "4294967296", "1e308", "1e19", "-0", "0.0", "1E2", "18446744073709551615", "99999999999999999999999999999"} {
		f.Add([]byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","offset":` + n +
			`,"prefix_digest":"` + strings.Repeat("0", 64) + `","messages":[{"id":"m","role":"user","content":"x"}]}`))
	}
	limits := checkpoint.Limits{MaxEventBytes: 1 << 20, MaxMessages: 1000}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fast path answers as the general path would.
		checkSameParse(t, data, limits)
		ev, err := checkpoint.ParseEvent(data, limits)
		if err != nil {
			var re *checkpoint.RejectError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is %T, want *RejectError", err, err)
			}
			switch re.Reason {
			case checkpoint.ReasonMalformed, checkpoint.ReasonInvalid, checkpoint.ReasonUnsupportedSchema, checkpoint.ReasonTooLarge:
			default:
				t.Fatalf("reason %q", re.Reason)
			}
			if re.Detail == "" {
				t.Fatalf("no detail")
			}
			return
		}
		if err := checkpoint.ValidateKey("user_id", ev.UserID); err != nil {
			t.Fatal(err)
		}
		if err := checkpoint.ValidateKey("conversation_id", ev.ConversationID); err != nil {
			t.Fatal(err)
		}
		if ev.EventID == "" || ev.Schema != checkpoint.Schema || (ev.Kind != checkpoint.KindSnapshot && ev.Kind != checkpoint.KindDelete) {
			t.Fatalf("bad event %+v", ev)
		}
		if u, c, e := checkpoint.ProbeKey(data); u != ev.UserID || c != ev.ConversationID || e != ev.EventID {
			t.Fatalf("ProbeKey = %q %q %q, ParseEvent = %q %q %q", u, c, e, ev.UserID, ev.ConversationID, ev.EventID)
		}
		if end := ev.End(); end < ev.Offset || end > checkpoint.MaxHistoryLength {
			t.Fatalf("offset %d and %d messages: end %d", ev.Offset, len(ev.Messages), end)
		}
		if ev.Offset < 0 || ev.Kind == checkpoint.KindSnapshot && ev.Offset == 0 && ev.PrefixDigest != checkpoint.ChainStart() {
			t.Fatalf("offset %d with prefix %s", ev.Offset, ev.PrefixDigest)
		}
		if ev.Kind == checkpoint.KindDelete && len(ev.Messages) > 0 {
			t.Fatalf("delete with messages")
		}
		if len(ev.Digests) != len(ev.Messages) {
			t.Fatalf("%d digests for %d messages", len(ev.Digests), len(ev.Messages))
		}
	})
}
