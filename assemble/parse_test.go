package assemble

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseJSON checks the parser against encoding/json: it accepts
// exactly what json.Valid accepts, and a container's bytes are the input's.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[1,-2.5e+3,true,false,null,"x\u00e9\n"]}`, ` [ {"k" : "v"} , 0 ] `,
		`{"a":}`, `[1,]`, `01`, `-`, `1.`, `1e`, `"\x"`, "\"a\tb\"", `"\ud800"`, `{"a":1}x`, `nul`, "\"\xff\"",
		`[[[[[[[[]]]]]]]]`, `{"a":{"b":{"c":[{"d":"e"}]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, ok, release := parseJSON(data)
		defer release()
		if want := json.Valid(data); ok != want {
			t.Fatalf("parseJSON ok = %v, json.Valid = %v for %q", ok, want, data)
		}
		if ok && n.kind != 0 && n.kind != '"' && !bytes.Equal(n.raw, bytes.TrimSpace(data)) {
			t.Fatalf("container bytes %q, input %q", n.raw, data)
		}
	})
}

func TestParseJSONDepth(t *testing.T) {
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		deep := append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
		if _, ok, _ := parseJSON(deep); ok != json.Valid(deep) {
			t.Errorf("nesting %d: parseJSON ok = %v, json.Valid = %v", depth, ok, !ok)
		}
	}
}
