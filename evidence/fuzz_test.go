package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/gowebpki/jcs"
)

// Seeds come from the table tests, the digest vectors and the sample
// conversations. Crashers the fuzzer found are kept under
// testdata/fuzz/<FuzzName> and run as regression cases by `go test`.

func FuzzDecodeMessage(f *testing.F) {
	for _, tt := range decodeTests {
		f.Add([]byte(tt.in))
	}
	for _, tt := range decodeErrorTests {
		f.Add([]byte(tt.in))
	}
	for _, c := range loadCorpus(f) {
		for _, m := range c.Messages {
			f.Add([]byte(m))
		}
	}
	for _, v := range loadDigestVectors(f).Vectors {
		for _, m := range v.Messages {
			f.Add([]byte(m))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMessage(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is %T, want *DecodeError", err, err)
			}
			return
		}
		switch m.Role {
		case RoleUser, RoleAssistant, RoleSystem, RoleTool:
		default:
			t.Fatalf("role %q", m.Role)
		}
		if m.Type == "" || !json.Valid(m.Content) || m.Content[0] != '[' || !json.Valid(m.Artifact) {
			t.Fatalf("bad message: type %q content %s artifact %s", m.Type, m.Content, m.Artifact)
		}
		if !utf8.ValidString(m.Text) {
			t.Fatalf("text is not valid UTF-8")
		}
		excerpt, _ := Excerpt(m.Text, DefaultMaxExcerptBytes)
		if len(excerpt) > DefaultMaxExcerptBytes || !utf8.ValidString(excerpt) {
			t.Fatalf("bad excerpt of %d bytes", len(excerpt))
		}
		_ = defaultClassifier.Classify(m.Text)
		d, err := m.Digest()
		if err != nil {
			var de *DecodeError
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
	for _, c := range loadCorpus(f) {
		f.Add(corpusEvent(c, c.Messages))
	}
	// Huge and hostile numbers where the event has numbers.
	for _, n := range []string{"9223372036854775807", "9223372036854775806", "-9223372036854775808", "2147483647", "2147483646",
		"2147483648", "4294967296", "1e308", "1e19", "-0", "0.0", "1E2", "18446744073709551615", "99999999999999999999999999999"} {
		f.Add([]byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","offset":` + n +
			`,"prefix_digest":"` + strings.Repeat("0", 64) + `","messages":[{"id":"m","role":"user","content":"x"}]}`))
	}
	limits := Limits{MaxEventBytes: 1 << 20, MaxMessages: 1000}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fast path answers as the general path would.
		checkSameParse(t, data, limits)
		ev, err := ParseEvent(data, limits)
		if err != nil {
			var re *RejectError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is %T, want *RejectError", err, err)
			}
			switch re.Reason {
			case ReasonMalformed, ReasonInvalid, ReasonUnsupportedSchema, ReasonTooLarge:
			default:
				t.Fatalf("reason %q", re.Reason)
			}
			if re.Detail == "" {
				t.Fatalf("no detail")
			}
			return
		}
		if err := ValidateKey("user_id", ev.UserID); err != nil {
			t.Fatal(err)
		}
		if err := ValidateKey("conversation_id", ev.ConversationID); err != nil {
			t.Fatal(err)
		}
		if ev.EventID == "" || ev.Schema != Schema || (ev.Kind != KindSnapshot && ev.Kind != KindDelete) {
			t.Fatalf("bad event %+v", ev)
		}
		if u, c, e := ProbeKey(data); u != ev.UserID || c != ev.ConversationID || e != ev.EventID {
			t.Fatalf("ProbeKey = %q %q %q, ParseEvent = %q %q %q", u, c, e, ev.UserID, ev.ConversationID, ev.EventID)
		}
		if end := ev.End(); end < ev.Offset || end > MaxHistoryLength {
			t.Fatalf("offset %d and %d messages: end %d", ev.Offset, len(ev.Messages), end)
		}
		if ev.Offset < 0 || ev.Kind == KindSnapshot && ev.Offset == 0 && ev.PrefixDigest != ChainStart() {
			t.Fatalf("offset %d with prefix %s", ev.Offset, ev.PrefixDigest)
		}
		if ev.Kind == KindDelete && len(ev.Messages) > 0 {
			t.Fatalf("delete with messages")
		}
		if len(ev.Digests) != len(ev.Messages) {
			t.Fatalf("%d digests for %d messages", len(ev.Digests), len(ev.Messages))
		}
		if ev.Offset == 0 {
			s, _, err := Fold(NewState(), ev.Messages, seedConfig)
			if err != nil {
				t.Fatalf("Fold of a parsed event: %v", err)
			}
			checkBounds(t, &s)
		}
	})
}

// FuzzFold folds a history in one step and in growing snapshots cut where
// cuts says, and checks the bounds, coalescing invariance and the reference
// model.
func FuzzFold(f *testing.F) {
	add := func(msgs []json.RawMessage) {
		b, err := json.Marshal(msgs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint64(0x9e3779b97f4a7c15))
	}
	for _, c := range loadCorpus(f) {
		add(c.Messages)
	}
	for _, v := range loadDigestVectors(f).Vectors[:2] {
		add(v.Messages)
	}
	for seed := range uint64(8) {
		_, raws := randomHistory(f, rand.New(rand.NewPCG(seed, 1)), 5+int(seed)*5)
		add(raws)
	}
	var table []json.RawMessage
	for _, tt := range classifyTests {
		table = append(table, json.RawMessage(flat("user", tt.name, tt.text)))
	}
	add(table)
	f.Fuzz(func(t *testing.T, data []byte, cuts uint64) {
		history, err := DecodeMessages(data)
		if err != nil || len(history) > 300 {
			return
		}
		one, _, err := Fold(NewState(), history, seedConfig)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Fold error %v is %T, want *DecodeError", err, err)
			}
			return
		}
		checkBounds(t, &one)
		k := max(0, NewestRequest(history))
		if diff := cmp.Diff(referenceFold(history, k), one, ignoreVersion); diff != "" {
			t.Fatalf("fold differs from the reference model (-want +got):\n%s", diff)
		}
		var points []int
		for c := cuts; c != 0 && len(history) > 0; c >>= 8 {
			points = append(points, int(c&0xff)%(len(history)+1))
		}
		slices.Sort(points)
		s := NewState()
		for _, p := range append(points, len(history)) {
			next, _, err := Fold(s, history[:p], seedConfig)
			if err != nil {
				t.Fatalf("Fold(history[:%d]): %v", p, err)
			}
			if next.Cursor < s.Cursor || next.Version < s.Version {
				t.Fatalf("cursor or version moved back")
			}
			checkBounds(t, &next)
			s = next
		}
		if diff := cmp.Diff(one, s, ignoreVersion); diff != "" {
			t.Fatalf("growing snapshots at %v differ from one fold (-one +growing):\n%s", points, diff)
		}
	})
}

// FuzzFirstWord holds firstWord, which reads a text field by field, to the
// first of splitWords over the whole text.
func FuzzFirstWord(f *testing.F) {
	for _, s := range []string{"", " August 2024", "  — März,", "...\t'  ", "x", " 'tis", "\u00a0juni", "3. mai", "-- -- oktober"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := ""
		if words := splitWords(s, nil); len(words) > 0 {
			want = words[0]
		}
		if got := firstWord(s); got != want {
			t.Errorf("firstWord(%q) = %q, want %q", s, got, want)
		}
	})
}
