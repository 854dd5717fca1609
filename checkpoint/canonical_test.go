package checkpoint_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// canonicalTests are documents for the fast path, checked against the jcs
// library; wantFast says whether the fast path must answer (rather than
// leave the document to the library).
var canonicalTests = []struct {
	name     string
	in       string
	wantFast bool
}{
	{name: "empty object", in: `{}`, wantFast: true},
	{name: "spaced empties", in: " { \"a\" : [ ] , \"b\" : { } } ", wantFast: true},
	{name: "python separators", in: `{"z": 1, "a": [true, false, null], "m": {"y": "x", "b": -2}}`, wantFast: true},
	{name: "sorted compact", in: `{"a":1,"b":[1,2,3],"c":{"d":"e"}}`, wantFast: true},
	{name: "nested reorder", in: `{"b":{"d":1,"c":{"f":2,"e":3}},"a":[{"y":1,"x":2}]}`, wantFast: true},
	{name: "key prefix order", in: `{"ab":1,"a":2,"":3,"a ":4}`, wantFast: true},
	{name: "escaped keys", in: `{"a\"b":1,"a\\b":2,"a\nb":3,"a\u0001":4,"\u0061":5,"é":6}`, wantFast: true},
	{name: "escapes in strings", in: `["\"\\\/\b\f\n\r\t\u0000\u001f\u007f\u0080\u00e9\u2028\ud83d\ude00\u0041"]`, wantFast: true},
	{name: "raw unicode", in: "[\"été 中文 😀 \u2028 \u007f\"]", wantFast: true},
	{name: "integers", in: `[0,-0,1,-1,123456789012345,-123456789012345]`, wantFast: true},
	{name: "floats", in: `[1.0,1.5,-0.0,0.1,1e21,1E-7,1e+2,123456789012345678,9007199254740993,0.000001,1e-6,5e-324,1.7976931348623157e308]`, wantFast: true},
	{name: "top-level scalars", in: ` "x" `, wantFast: true},
	{name: "top-level number", in: `42`, wantFast: true},
	{name: "top-level true", in: "true\n", wantFast: true},
	{name: "deep but allowed", in: strings.Repeat("[", 500) + strings.Repeat("]", 500), wantFast: true},
	{name: "uppercase hex escape", in: `["\u00C9\uD83D\uDE00"]`, wantFast: true},

	// Left to the library (which canonicalises or rejects them).
	{name: "duplicate keys", in: `{"a":1,"a":2}`},
	{name: "duplicate keys after escapes", in: `{"a":1,"\u0061":2}`},
	{name: "duplicate keys unsorted", in: `{"b":1,"a":1,"b":2}`},
	{name: "key above U+E000", in: `{"ﬁ":1,"😀":2}`},
	{name: "escaped key above U+E000", in: `{"\ufb01":1}`},
	{name: "lone high surrogate", in: `["\ud800"]`},
	{name: "lone low surrogate", in: `["\udc00"]`},
	{name: "high surrogate then other escape", in: `["\ud800\u0041"]`},
	{name: "invalid UTF-8", in: "[\"\xff\"]"},
	{name: "surrogate bytes", in: "[\"\xed\xa0\x80\"]"},
	{name: "raw control character", in: "[\"a\tb\"]"},
	{name: "number out of range", in: `[1e400]`},
	{name: "too deep", in: strings.Repeat("[", 600) + strings.Repeat("]", 600)},
	{name: "trailing comma", in: `[1,]`},
	{name: "trailing comma in object", in: `{"a":1,}`},
	{name: "leading zero", in: `[01]`},
	{name: "bad escape", in: `["\x"]`},
	{name: "short unicode escape", in: `["\u12"]`},
	{name: "bare word", in: `[nul]`},
	{name: "literal prefix", in: `[truex]`},
	{name: "two values", in: `1 2`},
	{name: "unterminated", in: `{"a":`},
	{name: "empty", in: ``},
	{name: "unquoted key", in: `{a:1}`},
	{name: "fraction without digits", in: `[1.]`},
	{name: "exponent without digits", in: `[1e]`},
	{name: "plus sign", in: `[+1]`},
	{name: "non-ASCII outside strings", in: "[1,\u00a01]"},
}

// checkCanonical checks the fast path against the library on in.
func checkCanonical(t *testing.T, in []byte) (fast bool) {
	t.Helper()
	prefix := []byte("prefix:")
	got, ok := checkpoint.AppendCanonicalJSON(bytes.Clone(prefix), in)
	want, err := jcs.Transform(in)
	if !ok {
		if !bytes.Equal(got, prefix) {
			t.Fatalf("the fast path gave up on %q but changed the buffer to %q", in, got)
		}
		return false
	}
	if err != nil {
		t.Fatalf("the fast path canonicalised %q to %q, the library rejects it: %v", in, got, err)
	}
	if !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("canonical form of %q:\n fast    %q\n library %q", in, got[len(prefix):], want)
	}
	return true
}

func TestAppendCanonicalJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range canonicalTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if fast := checkCanonical(t, []byte(tt.in)); fast != tt.wantFast {
				t.Errorf("fast path answered: %v, want %v", fast, tt.wantFast)
			}
		})
	}
}

// TestAppendCanonicalJSONRandom checks the fast path against the library on
// random documents written in random styles.
func TestAppendCanonicalJSONRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	keys := []string{"a", "b", "A", "aa", "", "é", "中", "a\"", "a\\", "a\n", "\u0001", "z", "10", "1", "-", "ﬁ", "😀"}
	strs := []string{"", "x", "é中😀", "\"\\/", "\b\f\n\r\t\x00\x1f\x7f", "\u2028<>&", "\ufffd"}
	nums := []string{"0", "-0", "1", "-17", "123456789012345", "1234567890123456", "1.5", "-0.0", "1e3", "2E-7", "1e21", "0.1", "100.000"}
	ws := func() string { return []string{"", "", " ", "\n  ", "\t"}[r.IntN(5)] }
	var gen func(depth int) string
	gen = func(depth int) string {
		switch n := r.IntN(10); {
		case depth > 4 || n < 3:
			switch r.IntN(4) {
			case 0:
				return nums[r.IntN(len(nums))]
			case 1:
				return []string{"true", "false", "null"}[r.IntN(3)]
			default:
				s := strs[r.IntN(len(strs))]
				var b []byte
				if r.IntN(2) == 0 {
					b, _ = json.Marshal(s) // escapes <, >, & and U+2028 as \u
				} else {
					b = checkpoint.AppendCanonicalString(nil, s)
				}
				return string(b)
			}
		case n < 6:
			var parts []string
			for range r.IntN(4) {
				parts = append(parts, ws()+gen(depth+1)+ws())
			}
			return "[" + strings.Join(parts, ",") + "]"
		default:
			var parts []string
			for range r.IntN(5) {
				k, _ := json.Marshal(keys[r.IntN(len(keys))])
				parts = append(parts, ws()+string(k)+ws()+":"+ws()+gen(depth+1))
			}
			return "{" + strings.Join(parts, ",") + ws() + "}"
		}
	}
	fast := 0
	for i := range 20000 {
		doc := ws() + gen(0) + ws()
		if checkCanonical(t, []byte(doc)) {
			fast++
		}
		if t.Failed() {
			t.Fatalf("document %d: %s", i, doc)
		}
	}
	if fast < 10000 {
		t.Errorf("the fast path answered only %d of 20000 documents", fast)
	}
	t.Logf("the fast path answered %d of 20000 documents", fast)
}

// FuzzCanonicalJSON checks the fast path against the jcs library: wherever
// the fast path answers, the library must agree byte for byte.
func FuzzCanonicalJSON(f *testing.F) {
	for _, tt := range canonicalTests {
		f.Add([]byte(tt.in))
	}
	for _, v := range checkpointtest.LoadDigestVectors(f).Vectors[:1] {
		for _, m := range v.Messages {
			f.Add([]byte(m))
		}
	}
	for i := range 3 {
		art := checkpointtest.BenchArtifact(rand.New(rand.NewPCG(uint64(i), 0)), 200)
		f.Add([]byte(art))
	}
	f.Add([]byte(fmt.Sprintf(`{"b":%s,"a":1}`, strings.Repeat(`{"x":[`, 3)+"1"+strings.Repeat(`]}`, 3))))
	f.Fuzz(func(t *testing.T, in []byte) {
		checkCanonical(t, in)
	})
}

// BenchmarkCanonicalJSON compares the fast path with the jcs library on a
// tool artifact as a Python publisher writes it.
func BenchmarkCanonicalJSON(b *testing.B) {
	art := checkpointtest.BenchArtifact(rand.New(rand.NewPCG(1, 1)), 32<<10)
	compact, err := jcs.Transform(art)
	if err != nil {
		b.Fatal(err)
	}
	for _, doc := range []struct {
		name string
		data []byte
	}{{"python", art}, {"canonical", compact}} {
		b.Run("fast/"+doc.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc.data)))
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var ok bool
				if buf, ok = checkpoint.AppendCanonicalJSON(buf[:0], doc.data); !ok {
					b.Fatal("the fast path gave up")
				}
			}
		})
		b.Run("jcs/"+doc.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jcs.Transform(doc.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
