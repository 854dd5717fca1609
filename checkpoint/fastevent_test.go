package checkpoint_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// parseGeneral is ParseEvent without its fast path.
func parseGeneral(data []byte, limits checkpoint.Limits) (*checkpoint.Event, error) {
	limits = limits.WithDefaults()
	if len(data) > limits.MaxEventBytes {
		return nil, checkpoint.Reject(checkpoint.ReasonTooLarge, "event is %d bytes, more than the limit of %d", len(data), limits.MaxEventBytes)
	}
	if !utf8.Valid(data) {
		return nil, checkpoint.Reject(checkpoint.ReasonMalformed, "event is not valid UTF-8")
	}
	return checkpoint.ParseEventGeneral(bytes.TrimSpace(data), limits)
}

// checkSameParse fails unless ParseEvent and the general path agree on data:
// the same error, or the same event, message for message and digest for
// digest. It reports whether the fast path answered.
func checkSameParse(t *testing.T, data []byte, limits checkpoint.Limits) bool {
	t.Helper()
	got, gotErr := checkpoint.ParseEvent(data, limits)
	want, wantErr := parseGeneral(data, limits)
	if diff := cmp.Diff(fmt.Sprint(wantErr), fmt.Sprint(gotErr)); diff != "" {
		t.Fatalf("%.300q: errors differ (-general +ParseEvent):\n%s", data, diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%.300q: events differ (-general +ParseEvent):\n%s", data, diff)
	}
	trimmed := bytes.TrimSpace(data)
	if gotErr != nil || len(trimmed) > limits.WithDefaults().MaxEventBytes || !utf8.Valid(trimmed) {
		return false
	}
	_, fast := checkpoint.ParseEventFast(trimmed, limits.WithDefaults(), false)
	return fast
}

// TestParseEventFastPath checks that the fast path answers for the events
// senders write, and answers as the general path does.
func TestParseEventFastPath(t *testing.T) {
	t.Parallel()
	_, bench := checkpointtest.BenchHistory(t, 6, 4<<10)
	_, random := checkpointtest.RandomHistory(t, rand.New(rand.NewPCG(7, 7)), 60)
	var flatOnly []json.RawMessage
	for _, raw := range random {
		if bytes.Contains(raw, []byte(`"role"`)) {
			flatOnly = append(flatOnly, raw)
		}
	}
	tests := []struct {
		name     string
		data     []byte
		wantFast bool
	}{
		{"bench history", checkpointtest.CorpusEvent(checkpointtest.CorpusFile{Name: "e", UserID: "u", ConvID: "c"}, bench), true},
		{"flat random messages", checkpointtest.CorpusEvent(checkpointtest.CorpusFile{Name: "e", UserID: "u", ConvID: "c"}, flatOnly), true},
		{"all forms", checkpointtest.CorpusEvent(checkpointtest.CorpusFile{Name: "e", UserID: "u", ConvID: "c"}, random), true},
		{"no messages", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[]}`), true},
		{"spaces and unknown members", []byte(` { "x" : [1, {"a": null}] , "schema" : "recall.checkpoint.v1", "kind": null, "event_id": "e", "user_id": "u", "conversation_id": "c", "offset": 0, "prefix_digest": null, "messages": [ {"role": "user", "content": "hi \"there\"\n\u00e9\ud83d\ude00\ud800x", "x": {"y": [true, false, -1.5e3]}} ] } `), true},
		{"offset and prefix", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","offset":3,"prefix_digest":"` + strings.Repeat("ab", 32) + `","messages":[{"role":"ai","content":null,"id":null}]}`), true},
		{"delete", []byte(`{"schema":"recall.checkpoint.v1","kind":"delete","event_id":"e","user_id":"u","conversation_id":"c"}`), false},
		{"escaped key", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[{"r\u006fle":"user","content":"x"}]}`), true},
		{"escaped id", []byte(`{"schema":"recall.checkpoint.v1","event_id":"\u0065","user_id":"u","conversation_id":"c","messages":[]}`), false},
		{"escape after a multi-byte character", []byte(`{"schema":"recall.checkpoint.v1","event_id":"é\u0041","user_id":"u","conversation_id":"c","messages":[{"role":"user","content":"é\u0041"}]}`), false},
		{"field in capitals", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","Messages":[],"messages":[{"role":"user"}]}`), false},
		{"duplicate member", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[{"role":"user","content":"a","content":"b"}]}`), true},
		{"duplicate messages", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[],"messages":[{"role":"user"}]}`), false},
		{"bad message", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[{"role":"robot"}]}`), false},
		{"trailing garbage", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[]} x`), false},
		{"raw control character", []byte("{\"schema\":\"recall.checkpoint.v1\",\"event_id\":\"e\",\"user_id\":\"u\",\"conversation_id\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":\"a\tb\"}]}"), false},
		{"bad number", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[{"role":"user","x":01}]}`), false},
		{"offset not an integer", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","offset":1e2,"messages":[]}`), false},
		{"artifact with duplicate keys", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[{"role":"tool","artifact":{"a":1,"a":2}}]}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if fast := checkSameParse(t, tt.data, checkpoint.Limits{}); fast != tt.wantFast {
				t.Errorf("fast path answered: %v, want %v", fast, tt.wantFast)
			}
		})
	}
}

// TestParseEventFastPathRandom compares the fast path with the general one
// on random events and on random damage done to them.
func TestParseEventFastPathRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(13, 13))
	fast := 0
	const n = 400
	for i := range n {
		_, raws := checkpointtest.RandomHistory(t, r, r.IntN(12))
		data := checkpointtest.CorpusEvent(checkpointtest.CorpusFile{Name: fmt.Sprint(i), UserID: "u", ConvID: "c"}, raws)
		switch r.IntN(4) {
		case 0: // as written
		case 1: // re-indented
			var b bytes.Buffer
			if err := json.Indent(&b, data, " ", "\t"); err != nil {
				t.Fatal(err)
			}
			data = b.Bytes()
		default: // damaged: a byte changed, dropped or repeated
			if len(data) > 0 {
				p := r.IntN(len(data))
				switch r.IntN(3) {
				case 0:
					const alphabet = `{}[]",:\ 0123456789-eE.tfnul` + "\x01\xc3"
					data[p] = alphabet[r.IntN(len(alphabet))]
				case 1:
					data = append(data[:p], data[p+1:]...)
				case 2:
					data = append(data[:p+1], data[p:]...)
				}
			}
		}
		if checkSameParse(t, data, checkpoint.Limits{MaxMessages: 8}) {
			fast++
		}
	}
	t.Logf("the fast path answered for %d of %d events", fast, n)
	if fast < n/4 {
		t.Errorf("the fast path answered for %d of %d events, want at least a quarter", fast, n)
	}
}

// TestUnquote compares unquote with encoding/json on escapes and surrogates.
func TestUnquote(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u00E9"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`,
		`"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, `"\u0000"`, `"é😀\u2028"`, `"a\\u0041"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got, ok := checkpoint.StringValue([]byte(in))
		if !ok || got != want {
			t.Errorf("stringValue(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestDigestOfStringContent checks that a content decoded from a string is
// canonical as it is: the digest that skips its canonicalisation is the
// digest.
func TestDigestOfStringContent(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 5))
	for range 500 {
		text := checkpointtest.RandomText(r, 30)
		for _, extra := range []string{"\x00\x1f\x7f", "\u2028\ufeff", `\u00e9`} {
			raw, _ := json.Marshal(map[string]any{"role": "user", "content": text + extra})
			m, err := checkpoint.DecodeMessage(raw)
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.ExportDigest(false)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := m.ExportDigest(m.StringContent); err != nil || got != want {
				t.Fatalf("%s: digest %s, %v; want %s", raw, got, err, want)
			}
		}
	}
}

// TestParseEventInPlace checks that ParseEventInPlace decodes as ParseEvent
// does, and that the texts it shares with the event are those without
// escapes.
func TestParseEventInPlace(t *testing.T) {
	t.Parallel()
	_, raws := checkpointtest.RandomHistory(t, rand.New(rand.NewPCG(3, 3)), 80)
	raws = append(raws, json.RawMessage(`{"role":"user","content":"plain text"}`), json.RawMessage(`{"role":"user","content":"line\nbreak"}`))
	data := checkpointtest.CorpusEvent(checkpointtest.CorpusFile{Name: "e", UserID: "u", ConvID: "c"}, raws)
	want, err := checkpoint.ParseEvent(data, checkpoint.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.ParseEventInPlace(data, checkpoint.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events differ (-ParseEvent +ParseEventInPlace):\n%s", diff)
	}
	inside := func(s string) bool {
		p, q := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(data)))
		return len(s) > 0 && p >= q && p < q+uintptr(len(data))
	}
	n := len(got.Messages)
	if plain, escaped := got.Messages[n-2].Text, got.Messages[n-1].Text; !inside(plain) || inside(escaped) {
		t.Errorf("plain text shared: %v, want true; text with an escape shared: %v, want false", inside(plain), inside(escaped))
	}
	for i := range want.Messages {
		if inside(want.Messages[i].Text) {
			t.Fatalf("ParseEvent: message %d's text shares the event's memory", i)
		}
	}
}

func TestPlainString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{`""`, true}, {`"abc"`, true}, {`"é中😀 x"`, true}, {`"a\n"`, false}, {`"é\u0041"`, false},
		{"\"a\x01\"", false}, {"\"\xff\"", false}, {`"é"x`, false}, {`12`, false}, {`"`, false},
	}
	for _, tt := range tests {
		body, ok := checkpoint.PlainString([]byte(tt.in))
		if ok != tt.want || ok && `"`+string(body)+`"` != tt.in {
			t.Errorf("plainString(%q) = %q, %v; want %v", tt.in, body, ok, tt.want)
		}
	}
}

// FuzzDecodeString checks decodeString against encoding/json on any JSON
// string, valid UTF-8 or not.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\u00e9\n"`, "\"\xff\"", `"é\u0041"`, `null`, `12`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var want string
		wantErr := json.Unmarshal(data, &want)
		got, err := checkpoint.DecodeString(data)
		if (err != nil) != (wantErr != nil) || got != want {
			t.Fatalf("decodeString(%q) = %q, %v; json.Unmarshal: %q, %v", data, got, err, want, wantErr)
		}
		if body, ok := checkpoint.PlainString(data); ok && string(body) != want {
			t.Fatalf("plainString(%q) = %q, want %q", data, body, want)
		}
	})
}
