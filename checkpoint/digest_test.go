package checkpoint_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/gowebpki/jcs"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

func TestDigestVectors(t *testing.T) {
	t.Parallel()
	vectors := checkpointtest.LoadDigestVectors(t)
	if got := checkpoint.ChainStart().String(); got != vectors.ChainStart {
		t.Errorf("ChainStart() = %s, want %s", got, vectors.ChainStart)
	}
	groupChain := map[string]string{}
	groupOf := map[string]string{}
	for _, tt := range vectors.Vectors {
		t.Run(tt.Group+"/"+tt.Form, func(t *testing.T) {
			msgs := make([]checkpoint.Message, len(tt.Messages))
			for i, raw := range tt.Messages {
				msgs[i] = checkpointtest.Decode(t, string(raw))
				canon, err := msgs[i].Canonical()
				if err != nil {
					t.Fatalf("message %d: Canonical: %v", i, err)
				}
				if diff := cmp.Diff(tt.Canonical[i], string(canon)); diff != "" {
					t.Errorf("message %d: canonical form mismatch (-want +got):\n%s", i, diff)
				}
				d, err := msgs[i].Digest()
				if err != nil {
					t.Fatalf("message %d: Digest: %v", i, err)
				}
				if got := d.String(); got != tt.MessageDigests[i] {
					t.Errorf("message %d: Digest() = %s, want %s", i, got, tt.MessageDigests[i])
				}
			}
			for k := range len(msgs) + 1 {
				if got := checkpointtest.ChainOf(t, msgs, k).String(); got != tt.Chain[k] {
					t.Errorf("PrefixDigest(k=%d) = %s, want %s", k, got, tt.Chain[k])
				}
			}
			// The streaming form: extend a stored prefix digest without the
			// messages before it.
			for k := range len(msgs) + 1 {
				prefix, err := checkpoint.ParseDigest(tt.Chain[k])
				if err != nil {
					t.Fatal(err)
				}
				got, err := checkpoint.Chain(prefix, msgs[k:])
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != tt.Chain[len(msgs)] {
					t.Errorf("Chain(c_%d, msgs[%d:]) = %s, want %s", k, k, got, tt.Chain[len(msgs)])
				}
			}
		})
		final := tt.Chain[len(tt.Chain)-1]
		if want, ok := groupChain[tt.Group]; ok && want != final {
			t.Errorf("%s/%s: chain %s differs from the group's %s: the same history in another form must have the same chain", tt.Group, tt.Form, final, want)
		}
		groupChain[tt.Group] = final
		if g, ok := groupOf[final]; ok && g != tt.Group {
			t.Errorf("groups %s and %s share a chain", g, tt.Group)
		}
		groupOf[final] = tt.Group
	}
	if len(groupChain) < 2 {
		t.Errorf("want several groups, got %d", len(groupChain))
	}
}

// TestDigestIgnoresMetadata checks that LangChain metadata never changes a
// digest, and that what the message means always does.
func TestDigestIgnoresMetadata(t *testing.T) {
	t.Parallel()
	base := `{"type":"ai","data":{"content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}]}}`
	tests := []struct {
		name     string
		in       string
		wantSame bool
	}{
		{name: "response_metadata", in: `{"type":"ai","data":{"content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}],"response_metadata":{"model":"x","logprobs":null}}}`, wantSame: true},
		{name: "usage_metadata", in: `{"type":"ai","data":{"content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}],"usage_metadata":{"input_tokens":1,"output_tokens":2}}}`, wantSame: true},
		{name: "additional_kwargs", in: `{"type":"ai","data":{"content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}],"additional_kwargs":{"tool_calls":[{"id":"t1","function":{"name":"f","arguments":"{\"a\":1}"}}],"refusal":null}}}`, wantSame: true},
		{name: "name", in: `{"type":"ai","data":{"content":"Agreed.","id":"m1","name":"bot","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}]}}`, wantSame: true},
		{name: "langchain type field and tool call type", in: `{"type":"ai","data":{"type":"ai","content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":1},"type":"tool_call"}],"invalid_tool_calls":[],"example":false}}`, wantSame: true},
		{name: "constructor form", in: `{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}]}}`, wantSame: true},
		{name: "flat form", in: `{"role":"assistant","content":[{"type":"text","text":"Agreed."}],"id":"m1","tool_calls":[{"id":"t1","function":{"name":"f","arguments":" {\"a\" : 1} "}}]}`, wantSame: true},
		{name: "whitespace and key order", in: ` { "data" : { "tool_calls" : [ { "args" : { "a" : 1 } , "name" : "f" , "id" : "t1" } ] , "id" : "m1" , "content" : "Agreed." } , "type" : "ai" } `, wantSame: true},
		{name: "content", in: `{"type":"ai","data":{"content":"Agreed!","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}]}}`},
		{name: "id", in: `{"type":"ai","data":{"content":"Agreed.","id":"m2","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}]}}`},
		{name: "role", in: `{"type":"human","data":{"content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}]}}`},
		{name: "args", in: `{"type":"ai","data":{"content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":2}}]}}`},
		{name: "args as a string", in: `{"type":"ai","data":{"content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":"{\"a\":1}"}]}}`},
		{name: "tool call id", in: `{"type":"ai","data":{"content":"Agreed.","id":"m1","tool_calls":[{"id":"t2","name":"f","args":{"a":1}}]}}`},
		{name: "artifact", in: `{"type":"ai","data":{"content":"Agreed.","id":"m1","artifact":{},"tool_calls":[{"id":"t1","name":"f","args":{"a":1}}]}}`},
		{name: "tool_call_id", in: `{"type":"ai","data":{"content":"Agreed.","id":"m1","tool_call_id":"x","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}]}}`},
		{name: "channel type", in: `{"role":"assistant","type":"thinking","content":"Agreed.","id":"m1","tool_calls":[{"id":"t1","name":"f","args":{"a":1}}]}`},
	}
	baseMsg := checkpointtest.Decode(t, base)
	want, err := baseMsg.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := checkpointtest.Decode(t, tt.in)
			got, err := m.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if same := got == want; same != tt.wantSame {
				canon, _ := m.Canonical()
				t.Errorf("digest equal to the base: %v, want %v (canonical %s)", same, tt.wantSame, canon)
			}
		})
	}
}

func TestCanonicalNumbersAndStrings(t *testing.T) {
	t.Parallel()
	// RFC 8785 §3.2.2.3 and appendix B: numbers take their ECMAScript form;
	// strings keep non-ASCII as UTF-8 and escape only what JSON requires.
	tests := []struct {
		name         string
		artifact     string
		wantArtifact string
	}{
		{name: "integer", artifact: `42`, wantArtifact: `42`},
		{name: "negative zero", artifact: `-0`, wantArtifact: `0`},
		{name: "float with zero fraction", artifact: `1.0`, wantArtifact: `1`},
		{name: "exponent", artifact: `1e21`, wantArtifact: `1e+21`},
		{name: "small exponent", artifact: `1E-7`, wantArtifact: `1e-7`},
		{name: "large integer", artifact: `9007199254740993`, wantArtifact: `9007199254740992`},
		{name: "leading zero integer fraction", artifact: `0.000001`, wantArtifact: `0.000001`},
		{name: "unicode escapes", artifact: `"\u00e9\u20ac\ud83d\ude00\/"`, wantArtifact: `"é€😀/"`},
		{name: "control escapes", artifact: `"\u0008\u000c\u001f\u007f\u2028"`, wantArtifact: "\"\\b\\f\\u001f\u007f\u2028\""},
		{name: "key order by UTF-16 code units", artifact: `{"\ud83d\ude00":1,"\ufb01":2,"a":3,"A":4,"10":5,"1":6}`, wantArtifact: `{"1":6,"10":5,"A":4,"a":3,"😀":1,"ﬁ":2}`},
		{name: "nested whitespace", artifact: " [ {\"b\" : [ true , false , null ] , \"a\" : { } } ] ", wantArtifact: `[{"a":{},"b":[true,false,null]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := checkpointtest.Decode(t, `{"role":"tool","artifact":`+tt.artifact+`}`)
			got, err := m.Canonical()
			if err != nil {
				t.Fatalf("Canonical: %v", err)
			}
			want := `{"artifact":` + tt.wantArtifact + `,"content":[],"id":"","role":"tool","tool_call_id":"","tool_calls":[],"type":"chat"}`
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("Canonical mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDigestErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range checkpointtest.DigestErrors() {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			m := checkpointtest.Decode(t, tt.In)
			_, err := m.Digest()
			var de *checkpoint.DecodeError
			if !errors.As(err, &de) || de.Field != tt.WantField {
				t.Fatalf("Digest error = %v, want *DecodeError for field %q", err, tt.WantField)
			}
			if strings.Contains(err.Error(), checkpointtest.Marker) {
				t.Errorf("error %q quotes message text", err)
			}
			if _, err := checkpoint.Chain(checkpoint.ChainStart(), []checkpoint.Message{checkpointtest.User("u", "x"), m}); err == nil {
				t.Errorf("Chain over the message succeeded, want an error")
			}
		})
	}
}

func TestParseDigest(t *testing.T) {
	t.Parallel()
	good := checkpoint.ChainStart().String()
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{name: "chain start", in: good},
		{name: "all zero", in: strings.Repeat("0", 64)},
		{name: "upper case", in: strings.ToUpper(good), wantErr: true},
		{name: "short", in: good[:63], wantErr: true},
		{name: "long", in: good + "0", wantErr: true},
		{name: "not hex", in: "g" + good[1:], wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "prefixed", in: "0x" + good[2:], wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := checkpoint.ParseDigest(tt.in)
			if tt.wantErr {
				if !errors.Is(err, checkpoint.ErrBadDigest) {
					t.Errorf("ParseDigest(%q) error = %v, want ErrBadDigest", tt.in, err)
				}
				var u checkpoint.Digest
				if err := u.UnmarshalText([]byte(tt.in)); err == nil {
					t.Errorf("UnmarshalText(%q) succeeded", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDigest(%q): %v", tt.in, err)
			}
			if got := d.String(); got != tt.in {
				t.Errorf("String() = %q, want %q", got, tt.in)
			}
			text, _ := d.MarshalText()
			var back checkpoint.Digest
			if err := back.UnmarshalText(text); err != nil || back != d {
				t.Errorf("text round trip = %v, %v; want %v", back, err, d)
			}
		})
	}
}

func TestChainDefinition(t *testing.T) {
	t.Parallel()
	if got, want := checkpoint.ChainStart(), checkpoint.Digest(sha256.Sum256([]byte("recall.v1"))); got != want {
		t.Errorf("ChainStart() = %s, want SHA-256(\"recall.v1\") = %s", got, want)
	}
	msgs := []checkpoint.Message{checkpointtest.User("m0", "hello"), checkpointtest.Assistant("m1", "hi")}
	c := checkpoint.ChainStart()
	for _, m := range msgs {
		canon, err := m.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		md := sha256.Sum256(canon)
		c = sha256.Sum256(append(c[:len(c):len(c)], md[:]...))
	}
	if got := checkpointtest.ChainOf(t, msgs, 2); got != c {
		t.Errorf("PrefixDigest = %s, want SHA-256(c ‖ SHA-256(JCS(m))) = %s", got, c)
	}
	if got := checkpointtest.ChainOf(t, msgs, 0); got != checkpoint.ChainStart() {
		t.Errorf("PrefixDigest(k=0) = %s, want ChainStart()", got)
	}
}

// TestAppendCanonicalStringMatchesJCS checks recall's own string writer
// against the jcs library on random strings.
func TestAppendCanonicalStringMatchesJCS(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', 'Z', '0', ' ', '"', '\\', '/', '\b', '\f', '\n', '\r', '\t', 0, 1, 0x1f, 0x7f, 0x80, 'é', '€', 0x2028, 0x2029, 0xfeff, 0xfffd, '😀', '<', '>', '&'}
	for range 2000 {
		var b strings.Builder
		for range r.IntN(20) {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		enc, _ := json.Marshal(s)
		want, err := jcs.Transform(enc)
		if err != nil {
			t.Fatalf("jcs.Transform(%s): %v", enc, err)
		}
		if got := checkpoint.AppendCanonicalString(nil, s); string(got) != string(want) {
			t.Fatalf("appendCanonicalString(%q) = %s, want %s", s, got, want)
		}
	}
	// Invalid UTF-8, which decoded JSON never holds, becomes U+FFFD.
	if got, want := string(checkpoint.AppendCanonicalString(nil, "a\xffb")), "\"a\uFFFDb\""; got != want {
		t.Errorf("appendCanonicalString(invalid) = %q, want %q", got, want)
	}
	if !utf8.Valid(checkpoint.AppendCanonicalString(nil, "\xed\xa0\x80")) {
		t.Errorf("appendCanonicalString(surrogate bytes) is not valid UTF-8")
	}
}
