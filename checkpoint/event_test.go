package checkpoint_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// eventJSON returns a valid snapshot event with changes applied: a value of
// deleteField removes the member.
func eventJSON(changes map[string]any) string {
	ev := map[string]any{
		"schema":          checkpoint.Schema,
		"kind":            "snapshot",
		"event_id":        "0f8c",
		"user_id":         "u-42",
		"conversation_id": "c-7",
		"offset":          0,
		"prefix_digest":   nil,
		"messages": []any{
			map[string]any{"id": "m0", "role": "user", "content": "We must ship by Friday."},
			map[string]any{"id": "m1", "role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "t1", "name": "search", "args": map[string]any{}}}},
			map[string]any{"id": "m2", "role": "tool", "tool_call_id": "t1", "content": "{}", "artifact": map[string]any{"rows": []any{}}},
			map[string]any{"id": "m3", "role": "assistant", "content": "Agreed: we'll use Postgres."},
			map[string]any{"id": "m4", "role": "user", "content": "Next, draft the schema."},
		},
	}
	for k, v := range changes {
		if v == deleteField {
			delete(ev, k)
			continue
		}
		ev[k] = v
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type deleteMarker struct{}

var deleteField = deleteMarker{}

var baseEventMessages = func() []checkpoint.Message {
	var raw struct{ Messages []json.RawMessage }
	if err := json.Unmarshal([]byte(eventJSON(nil)), &raw); err != nil {
		panic(err)
	}
	msgs, err := checkpoint.DecodeRawMessages(raw.Messages)
	if err != nil {
		panic(err)
	}
	return msgs
}()

// parseEventTests are shared with FuzzParseEvent as seeds.
var parseEventTests = []struct {
	name       string
	in         string
	limits     checkpoint.Limits
	wantReason checkpoint.Reason // "" for accepted
}{
	// Accepted.
	{name: "snapshot", in: eventJSON(nil)},
	{name: "kind absent", in: eventJSON(map[string]any{"kind": deleteField})},
	{name: "kind null", in: eventJSON(map[string]any{"kind": nil})},
	{name: "offset and prefix absent", in: eventJSON(map[string]any{"offset": deleteField, "prefix_digest": deleteField})},
	{name: "offset 0 with the start digest", in: eventJSON(map[string]any{"prefix_digest": checkpoint.ChainStart().String()})},
	{name: "empty snapshot", in: eventJSON(map[string]any{"messages": []any{}})},
	{name: "mixed forms", in: eventJSON(map[string]any{"messages": []any{
		map[string]any{"type": "human", "data": map[string]any{"content": "hi"}},
		map[string]any{"lc": 1, "type": "constructor", "id": []string{"AIMessage"}, "kwargs": map[string]any{"content": "yo"}},
	}})},
	{name: "delete", in: eventJSON(map[string]any{"kind": "delete", "messages": deleteField})},
	{name: "delete with empty messages", in: eventJSON(map[string]any{"kind": "delete", "messages": []any{}})},
	{name: "keys of 256 bytes", in: eventJSON(map[string]any{"user_id": strings.Repeat("é", 128), "conversation_id": strings.Repeat("x", 256)})},
	{name: "whitespace around", in: "\n  " + eventJSON(nil) + "\n"},
	{name: "unknown members ignored", in: eventJSON(map[string]any{"publisher": "x"})},

	// Malformed.
	{name: "not JSON", in: `{"schema":`, wantReason: checkpoint.ReasonMalformed},
	{name: "empty", in: ``, wantReason: checkpoint.ReasonMalformed},
	{name: "text", in: `hello ` + marker, wantReason: checkpoint.ReasonMalformed},
	{name: "two objects", in: eventJSON(nil) + `{}`, wantReason: checkpoint.ReasonMalformed},
	{name: "invalid UTF-8 in a string", in: strings.Replace(eventJSON(nil), "Friday", "Fri\xffday", 1), wantReason: checkpoint.ReasonMalformed},
	{name: "invalid UTF-8 in a key", in: strings.Replace(eventJSON(nil), `"user_id"`, "\"user_id\xc3\"", 1), wantReason: checkpoint.ReasonMalformed},
	{name: "surrogate bytes", in: strings.Replace(eventJSON(nil), "Friday", "\xed\xa0\x80", 1), wantReason: checkpoint.ReasonMalformed},

	// Invalid.
	{name: "a list", in: `[` + eventJSON(nil) + `]`, wantReason: checkpoint.ReasonInvalid},
	{name: "a string", in: `"x"`, wantReason: checkpoint.ReasonInvalid},
	{name: "null", in: `null`, wantReason: checkpoint.ReasonInvalid},
	{name: "schema missing", in: eventJSON(map[string]any{"schema": deleteField}), wantReason: checkpoint.ReasonInvalid},
	{name: "schema not a string", in: eventJSON(map[string]any{"schema": 1}), wantReason: checkpoint.ReasonInvalid},
	{name: "kind unknown", in: eventJSON(map[string]any{"kind": "append"}), wantReason: checkpoint.ReasonInvalid},
	{name: "kind not a string", in: eventJSON(map[string]any{"kind": true}), wantReason: checkpoint.ReasonInvalid},
	{name: "event_id missing", in: eventJSON(map[string]any{"event_id": deleteField}), wantReason: checkpoint.ReasonInvalid},
	{name: "event_id empty", in: eventJSON(map[string]any{"event_id": ""}), wantReason: checkpoint.ReasonInvalid},
	{name: "event_id a number", in: eventJSON(map[string]any{"event_id": 7}), wantReason: checkpoint.ReasonInvalid},
	{name: "event_id with NUL", in: eventJSON(map[string]any{"event_id": "a\x00b"}), wantReason: checkpoint.ReasonInvalid},
	{name: "user_id missing", in: eventJSON(map[string]any{"user_id": deleteField}), wantReason: checkpoint.ReasonInvalid},
	{name: "user_id null", in: eventJSON(map[string]any{"user_id": nil}), wantReason: checkpoint.ReasonInvalid},
	{name: "user_id empty", in: eventJSON(map[string]any{"user_id": ""}), wantReason: checkpoint.ReasonInvalid},
	{name: "user_id a number", in: eventJSON(map[string]any{"user_id": 42}), wantReason: checkpoint.ReasonInvalid},
	{name: "user_id a list", in: eventJSON(map[string]any{"user_id": []string{"u"}}), wantReason: checkpoint.ReasonInvalid},
	{name: "user_id of 257 bytes", in: eventJSON(map[string]any{"user_id": strings.Repeat("x", 257)}), wantReason: checkpoint.ReasonInvalid},
	{name: "user_id of 129 two-byte characters", in: eventJSON(map[string]any{"user_id": strings.Repeat("é", 129)}), wantReason: checkpoint.ReasonInvalid},
	{name: "user_id with NUL", in: eventJSON(map[string]any{"user_id": "u\x00"}), wantReason: checkpoint.ReasonInvalid},
	{name: "conversation_id missing", in: eventJSON(map[string]any{"conversation_id": deleteField}), wantReason: checkpoint.ReasonInvalid},
	{name: "conversation_id empty", in: eventJSON(map[string]any{"conversation_id": ""}), wantReason: checkpoint.ReasonInvalid},
	{name: "conversation_id of 257 bytes", in: eventJSON(map[string]any{"conversation_id": strings.Repeat("c", 257)}), wantReason: checkpoint.ReasonInvalid},
	{name: "conversation_id with NUL", in: eventJSON(map[string]any{"conversation_id": "\x00"}), wantReason: checkpoint.ReasonInvalid},
	{name: "conversation_id an object", in: eventJSON(map[string]any{"conversation_id": map[string]any{}}), wantReason: checkpoint.ReasonInvalid},
	{name: "offset negative", in: eventJSON(map[string]any{"offset": -1}), wantReason: checkpoint.ReasonInvalid},
	{name: "offset fractional", in: eventJSON(map[string]any{"offset": 1.5}), wantReason: checkpoint.ReasonInvalid},
	{name: "offset a string", in: eventJSON(map[string]any{"offset": "3"}), wantReason: checkpoint.ReasonInvalid},
	{name: "offset huge", in: strings.Replace(eventJSON(nil), `"offset":0`, `"offset":99999999999999999999999`, 1), wantReason: checkpoint.ReasonInvalid},
	{name: "offset the largest int64", in: eventJSON(map[string]any{"offset": int64(math.MaxInt64), "prefix_digest": strings.Repeat("0", 64)}), wantReason: checkpoint.ReasonInvalid},
	{name: "offset plus messages overflow int64", in: eventJSON(map[string]any{"offset": int64(math.MaxInt64 - 2), "prefix_digest": strings.Repeat("0", 64)}), wantReason: checkpoint.ReasonInvalid},
	{name: "offset beyond the longest history", in: eventJSON(map[string]any{"offset": int64(math.MaxInt32), "prefix_digest": strings.Repeat("0", 64)}), wantReason: checkpoint.ReasonInvalid},
	{name: "offset plus messages beyond the longest history", in: eventJSON(map[string]any{"offset": int64(math.MaxInt32 - 2), "prefix_digest": strings.Repeat("0", 64)}), wantReason: checkpoint.ReasonInvalid},
	{name: "append without prefix_digest", in: eventJSON(map[string]any{"offset": 3}), wantReason: checkpoint.ReasonInvalid},
	{name: "prefix_digest upper case", in: eventJSON(map[string]any{"offset": 3, "prefix_digest": strings.ToUpper(checkpoint.ChainStart().String())}), wantReason: checkpoint.ReasonInvalid},
	{name: "prefix_digest short", in: eventJSON(map[string]any{"offset": 3, "prefix_digest": "abc"}), wantReason: checkpoint.ReasonInvalid},
	{name: "prefix_digest not hex", in: eventJSON(map[string]any{"offset": 3, "prefix_digest": strings.Repeat("z", 64)}), wantReason: checkpoint.ReasonInvalid},
	{name: "prefix_digest a number", in: eventJSON(map[string]any{"offset": 3, "prefix_digest": 5}), wantReason: checkpoint.ReasonInvalid},
	{name: "prefix_digest other than the start at offset 0", in: eventJSON(map[string]any{"prefix_digest": strings.Repeat("0", 64)}), wantReason: checkpoint.ReasonInvalid},
	{name: "messages missing", in: eventJSON(map[string]any{"messages": deleteField}), wantReason: checkpoint.ReasonInvalid},
	{name: "messages null", in: eventJSON(map[string]any{"messages": nil}), wantReason: checkpoint.ReasonInvalid},
	{name: "messages an object", in: eventJSON(map[string]any{"messages": map[string]any{"role": "user"}}), wantReason: checkpoint.ReasonInvalid},
	{name: "messages a string", in: eventJSON(map[string]any{"messages": marker}), wantReason: checkpoint.ReasonInvalid},
	{name: "message with unknown role", in: eventJSON(map[string]any{"messages": []any{map[string]any{"role": marker, "content": marker}}}), wantReason: checkpoint.ReasonInvalid},
	{name: "message not an object", in: eventJSON(map[string]any{"messages": []any{marker}}), wantReason: checkpoint.ReasonInvalid},
	{name: "message with bad content", in: eventJSON(map[string]any{"messages": []any{map[string]any{"role": "user", "content": 7, "id": marker}}}), wantReason: checkpoint.ReasonInvalid},
	{name: "message that cannot be canonicalised", in: `{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[{"role":"tool","artifact":{"k":"` + marker + `","k":1}}]}`, wantReason: checkpoint.ReasonInvalid},
	{name: "delete with messages", in: eventJSON(map[string]any{"kind": "delete"}), wantReason: checkpoint.ReasonInvalid},

	// Unsupported schema.
	{name: "schema v2", in: eventJSON(map[string]any{"schema": "recall.checkpoint.v2"}), wantReason: checkpoint.ReasonUnsupportedSchema},
	{name: "schema empty", in: eventJSON(map[string]any{"schema": ""}), wantReason: checkpoint.ReasonUnsupportedSchema},
	{name: "schema other case", in: eventJSON(map[string]any{"schema": "Recall.Checkpoint.V1"}), wantReason: checkpoint.ReasonUnsupportedSchema},

	// Too large.
	{name: "too many bytes", in: eventJSON(nil), limits: checkpoint.Limits{MaxEventBytes: 100}, wantReason: checkpoint.ReasonTooLarge},
	{name: "too many bytes and not JSON", in: `{"x":"` + strings.Repeat("x", 200), limits: checkpoint.Limits{MaxEventBytes: 100}, wantReason: checkpoint.ReasonTooLarge},
	{name: "too many messages", in: eventJSON(nil), limits: checkpoint.Limits{MaxMessages: 4}, wantReason: checkpoint.ReasonTooLarge},
	{name: "as many messages as allowed", in: eventJSON(nil), limits: checkpoint.Limits{MaxMessages: 5}},
	{name: "as many bytes as allowed", in: eventJSON(nil), limits: checkpoint.Limits{MaxEventBytes: len(eventJSON(nil))}},
}

func TestParseEvent(t *testing.T) {
	t.Parallel()
	for _, tt := range parseEventTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev, err := checkpoint.ParseEvent([]byte(tt.in), tt.limits)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("ParseEvent: %v", err)
				}
				if len(ev.Digests) != len(ev.Messages) {
					t.Errorf("%d digests for %d messages", len(ev.Digests), len(ev.Messages))
				}
				var wire struct{ Messages json.RawMessage }
				if err := json.Unmarshal([]byte(tt.in), &wire); err != nil {
					t.Fatal(err)
				}
				var decoded []checkpoint.Message
				if len(ev.Messages) > 0 {
					if decoded, err = checkpoint.DecodeMessages(wire.Messages); err != nil {
						t.Fatal(err)
					}
				}
				for i := range decoded {
					if d, _ := decoded[i].Digest(); d != ev.Digests[i] {
						t.Errorf("Digests[%d] differs from the message's digest", i)
					}
					if ev.Messages[i].Content != nil || ev.Messages[i].Artifact != nil || ev.Messages[i].ToolCalls != nil {
						t.Errorf("Messages[%d] keeps its content after digesting", i)
					}
				}
				return
			}
			var re *checkpoint.RejectError
			if !errors.As(err, &re) {
				t.Fatalf("ParseEvent error = %v (%T), want *RejectError %s", err, err, tt.wantReason)
			}
			if ev != nil {
				t.Errorf("ParseEvent returned an event with an error")
			}
			if re.Reason != tt.wantReason {
				t.Errorf("Reason = %s (%s), want %s", re.Reason, re.Detail, tt.wantReason)
			}
			if strings.Contains(err.Error(), marker) {
				t.Errorf("error %q quotes message text", err)
			}
			if re.Detail == "" || !strings.HasPrefix(err.Error(), string(re.Reason)+": ") {
				t.Errorf("Error() = %q, want the reason and a detail", err)
			}
		})
	}
}

func TestParseEventFields(t *testing.T) {
	t.Parallel()
	prefix3 := checkpointtest.ChainOf(t, baseEventMessages, 3)
	tests := []struct {
		name string
		in   string
		want checkpoint.Event
	}{
		{
			name: "snapshot",
			in:   eventJSON(nil),
			want: checkpoint.Event{Schema: checkpoint.Schema, Kind: checkpoint.KindSnapshot, EventID: "0f8c", UserID: "u-42", ConversationID: "c-7", PrefixDigest: checkpoint.ChainStart(), Messages: released(baseEventMessages)},
		},
		{
			name: "append",
			in:   eventJSON(map[string]any{"event_id": "e2", "offset": 3, "prefix_digest": prefix3.String(), "messages": []any{map[string]any{"id": "m3", "role": "assistant", "content": "Agreed: we'll use Postgres."}, map[string]any{"id": "m4", "role": "user", "content": "Next, draft the schema."}}}),
			want: checkpoint.Event{Schema: checkpoint.Schema, Kind: checkpoint.KindSnapshot, EventID: "e2", UserID: "u-42", ConversationID: "c-7", Offset: 3, PrefixDigest: prefix3, Messages: released(baseEventMessages[3:])},
		},
		{
			name: "delete",
			in:   eventJSON(map[string]any{"kind": "delete", "messages": deleteField, "offset": 9}),
			want: checkpoint.Event{Schema: checkpoint.Schema, Kind: checkpoint.KindDelete, EventID: "0f8c", UserID: "u-42", ConversationID: "c-7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev, err := checkpoint.ParseEvent([]byte(tt.in), checkpoint.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got := *ev
			got.Digests = nil
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) })); diff != "" {
				t.Errorf("event mismatch (-want +got):\n%s", diff)
			}
			if got, want := ev.End(), tt.want.Offset+len(tt.want.Messages); got != want {
				t.Errorf("End() = %d, want %d", got, want)
			}
		})
	}

	// An append event's chain continues its prefix digest to the digest of
	// the whole history.
	ev, err := checkpoint.ParseEvent([]byte(eventJSON(map[string]any{"offset": 3, "prefix_digest": prefix3.String(), "messages": []any{map[string]any{"id": "m3", "role": "assistant", "content": "Agreed: we'll use Postgres."}}})), checkpoint.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ev.PrefixDigest.Next(ev.Digests[0]), checkpointtest.ChainOf(t, baseEventMessages, 4); got != want {
		t.Errorf("prefix digest extended by the event = %s, want %s", got, want)
	}
}

func TestParseEventDefaultLimits(t *testing.T) {
	t.Parallel()
	event := func(pad string, messages int) []byte {
		return []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","pad":"` + pad +
			`","messages":[` + strings.TrimSuffix(strings.Repeat(`{"role":"user"},`, messages), ",") + `]}`)
	}
	if big := event(strings.Repeat("x", checkpoint.DefaultMaxEventBytes), 1); !isReason(parseErr(big), checkpoint.ReasonTooLarge) {
		t.Errorf("event of %d bytes: error %v, want too_large", len(big), parseErr(big))
	}
	if fits := event(strings.Repeat("x", checkpoint.DefaultMaxEventBytes-200), 1); parseErr(fits) != nil {
		t.Errorf("event of %d bytes: %v", len(fits), parseErr(fits))
	}
	if many := event("", checkpoint.DefaultMaxMessages+1); !isReason(parseErr(many), checkpoint.ReasonTooLarge) {
		t.Errorf("event of %d messages: error %v, want too_large", checkpoint.DefaultMaxMessages+1, parseErr(many))
	}
	if !testing.Short() {
		if err := parseErr(event("", checkpoint.DefaultMaxMessages)); err != nil {
			t.Errorf("event of %d messages: %v", checkpoint.DefaultMaxMessages, err)
		}
	}
}

func parseErr(data []byte) error {
	_, err := checkpoint.ParseEvent(data, checkpoint.Limits{})
	return err
}

func isReason(err error, r checkpoint.Reason) bool {
	var re *checkpoint.RejectError
	return errors.As(err, &re) && re.Reason == r
}

func TestReasons(t *testing.T) {
	t.Parallel()
	want := []checkpoint.Reason{"malformed", "invalid", "unsupported_schema", "too_large", "prefix_mismatch", "gap", "deleted"}
	if diff := cmp.Diff(want, checkpoint.Reasons); diff != "" {
		t.Errorf("Reasons (-want +got):\n%s", diff)
	}
}

func TestValidateKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{name: "plain", in: "u-42"},
		{name: "unicode", in: "ユーザー"},
		{name: "256 bytes", in: strings.Repeat("x", 256)},
		{name: "empty", in: "", wantErr: true},
		{name: "257 bytes", in: strings.Repeat("x", 257), wantErr: true},
		{name: "NUL", in: "a\x00", wantErr: true},
		{name: "invalid UTF-8", in: "a\xff", wantErr: true},
	}
	for _, tt := range tests {
		err := checkpoint.ValidateKey("user_id", tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: ValidateKey error = %v, want error %v", tt.name, err, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "user_id") {
			t.Errorf("%s: error %q does not name the field", tt.name, err)
		}
	}
}

func TestProbeKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                          string
		in                            string
		wantUser, wantConv, wantEvent string
	}{
		{name: "valid", in: eventJSON(nil), wantUser: "u-42", wantConv: "c-7", wantEvent: "0f8c"},
		{name: "invalid event with strings", in: `{"user_id":"u","conversation_id":"c","event_id":"e","schema":9}`, wantUser: "u", wantConv: "c", wantEvent: "e"},
		{name: "wrong types", in: `{"user_id":1,"conversation_id":["c"],"event_id":"e"}`, wantEvent: "e"},
		{name: "not JSON", in: `{"user_id":"u"`},
		{name: "invalid UTF-8", in: "{\"user_id\":\"u\xff\"}"},
		{name: "a list", in: `[1]`},
	}
	for _, tt := range tests {
		u, c, e := checkpoint.ProbeKey([]byte(tt.in))
		if u != tt.wantUser || c != tt.wantConv || e != tt.wantEvent {
			t.Errorf("%s: ProbeKey = %q, %q, %q; want %q, %q, %q", tt.name, u, c, e, tt.wantUser, tt.wantConv, tt.wantEvent)
		}
	}
}

// released returns msgs as ParseEvent leaves them: content, artifact and
// tool calls released once digested.
func released(msgs []checkpoint.Message) []checkpoint.Message {
	out := make([]checkpoint.Message, len(msgs))
	for i, m := range msgs {
		m.Content, m.Artifact, m.ToolCalls = nil, nil, nil
		out[i] = m
	}
	return out
}

// TestParseEventDepth: an event nested deeper than MaxEventDepth is
// malformed with a detail that says so; one nested exactly that deep is
// accepted, and brackets inside strings do not count.
func TestParseEventDepth(t *testing.T) {
	t.Parallel()
	// The event, its messages and a message are three levels; x adds n.
	event := func(x string) []byte {
		return []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[{"role":"user","content":"hi","x":` + x + `}]}`)
	}
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepDetail := fmt.Sprintf("event is nested deeper than %d levels", checkpoint.MaxEventDepth)
	tests := []struct {
		name       string
		in         []byte
		wantDetail string // "" accepts
	}{
		{"as deep as allowed", event(nested(checkpoint.MaxEventDepth - 3)), ""},
		{"one level deeper", event(nested(checkpoint.MaxEventDepth - 2)), deepDetail},
		{"objects", event(strings.Repeat(`{"a":`, checkpoint.MaxEventDepth) + "1" + strings.Repeat("}", checkpoint.MaxEventDepth)), deepDetail},
		{"never closed", []byte(strings.Repeat("[", 2*checkpoint.MaxEventDepth)), deepDetail},
		{"brackets in a string", event(`"` + strings.Repeat(`[\"{`, checkpoint.MaxEventDepth) + `"`), ""},
		{"brackets in a string, not JSON", []byte(`{"x":"` + strings.Repeat("[", 2*checkpoint.MaxEventDepth) + `",}`), "event is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := checkpoint.ParseEvent(tt.in, checkpoint.Limits{})
			if tt.wantDetail == "" {
				if err != nil {
					t.Fatalf("ParseEvent: %v", err)
				}
				return
			}
			var re *checkpoint.RejectError
			if !errors.As(err, &re) || re.Reason != checkpoint.ReasonMalformed || re.Detail != tt.wantDetail {
				t.Fatalf("ParseEvent: %v, want malformed: %s", err, tt.wantDetail)
			}
		})
	}
}
