package eval

import (
	"slices"
	"strings"
	"testing"
)

// probeFixture is a conversation for the probe validation tests: facts
// stated early, a tool result, a thinking message, and two later requests.
// Each test case adds its probes (and branches) after the messages.
const probeFixture = `{
  "user_id": "u", "conversation_id": "c",
  "messages": [
    {"id": "m0", "role": "user", "content": "The venue holds 120 people. Kemal owns the agenda."},
    {"id": "m1", "role": "assistant", "content": "Noted: 120 seats, and Kemal for the agenda."},
    {"id": "m2", "role": "assistant", "content": "", "tool_calls": [{"id": "t1", "name": "search", "args": {}}]},
    {"id": "m3", "role": "tool", "tool_call_id": "t1", "content": "Catering must be booked by Friday."},
    {"id": "m4", "role": "assistant", "type": "thinking", "content": "Count the chairs."},
    {"id": "m5", "role": "user", "content": "How many chairs should we rent?"},
    {"id": "m6", "role": "assistant", "content": "One per seat."},
    {"id": "m7", "role": "user", "type": "queue_cancel", "content": "stop"},
    {"id": "m8", "role": "user", "content": "Who sends the invitations? And how many chairs again?"}
  ],
  "required": [{"text": "holds 120 people"}]%s
}`

func withProbes(extra string) []byte {
	return []byte(strings.Replace(probeFixture, "%s", extra, 1))
}

func TestParseProbes(t *testing.T) {
	good := []struct {
		name, extra string
		// want is each conversation's probes' resolved request indexes.
		want [][]int
	}{
		{"none", ``, [][]int{nil}},
		{"one", `, "probes": [{"request": "How many chairs should we rent?", "facts": ["holds 120 people"], "why": "chairs = seats"}]`, [][]int{{5}}},
		{"assistant restatement and a later request",
			`, "probes": [
			  {"request": "How many chairs should we rent", "facts": ["120 seats"]},
			  {"request": "Who sends the invitations?", "facts": ["Kemal owns the agenda", "One per seat"]}]`,
			[][]int{{5, 8}}},
		{"branch", `, "branches": [{"conversation_id": "c2",
			  "messages": [{"role": "user", "content": "Budget is 9k."}, {"role": "user", "content": "Can we afford it?"}],
			  "probes": [{"request": "afford", "facts": ["Budget is 9k"]}]}]`,
			[][]int{nil, {1}}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(tt.name, withProbes(tt.extra))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.convs) != len(tt.want) {
				t.Fatalf("%d conversations, want %d", len(f.convs), len(tt.want))
			}
			for ci, c := range f.convs {
				var got []int
				for _, p := range c.probes {
					got = append(got, p.index)
					if len(p.Facts) == 0 {
						t.Errorf("%s: probe %q lost its facts", c.key, p.Request)
					}
				}
				if !slices.Equal(got, tt.want[ci]) {
					t.Errorf("%s: probe requests at %v, want %v", c.key, got, tt.want[ci])
				}
			}
		})
	}

	bad := []struct{ name, extra, want string }{
		{"empty request", `, "probes": [{"request": "", "facts": ["holds 120 people"]}]`, "request is empty"},
		{"request nowhere", `, "probes": [{"request": "How many tables", "facts": ["holds 120 people"]}]`, "in no user message"},
		{"request in two messages", `, "probes": [{"request": "chairs", "facts": ["holds 120 people"]}]`, "more than one user message"},
		{"request only in assistant text", `, "probes": [{"request": "One per seat", "facts": ["holds 120 people"]}]`, "in no user message"},
		{"request only in tool output", `, "probes": [{"request": "Catering must be booked", "facts": ["holds 120 people"]}]`, "in no user message"},
		{"no facts", `, "probes": [{"request": "rent?", "facts": []}]`, "no facts"},
		{"empty fact", `, "probes": [{"request": "rent?", "facts": [""]}]`, "a fact is empty"},
		{"fact after the request", `, "probes": [{"request": "rent?", "facts": ["One per seat"]}]`, "before the request"},
		{"fact in the request itself", `, "probes": [{"request": "rent?", "facts": ["How many chairs should we rent"]}]`, "before the request"},
		{"fact in tool output", `, "probes": [{"request": "Who sends", "facts": ["Catering must be booked"]}]`, "not in the text of a user or assistant chat message"},
		{"fact in thinking", `, "probes": [{"request": "Who sends", "facts": ["Count the chairs"]}]`, "not in the text"},
		{"fact nowhere", `, "probes": [{"request": "Who sends", "facts": ["holds 150 people"]}]`, "not in the text"},
		{"unknown field", `, "probes": [{"request": "rent?", "facts": ["holds 120 people"], "fact": "x"}]`, "unknown field"},
		{"bad branch probe", `, "branches": [{"conversation_id": "c2",
			  "messages": [{"role": "user", "content": "Budget is 9k."}, {"role": "user", "content": "Can we afford it?"}],
			  "probes": [{"request": "afford", "facts": ["holds 120 people"]}]}]`, "c2: probe 0"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.name, withProbes(tt.extra))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestParseSuperseded(t *testing.T) {
	f, err := Parse("ok", withProbes(`, "superseded": [{"text": "Kemal owns the agenda", "by": "One per seat"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.convs[0].superseded) != 1 {
		t.Fatalf("superseded = %v, want one", f.convs[0].superseded)
	}
	bad := []struct{ name, extra, want string }{
		{"text not in the history", `, "superseded": [{"text": "Lea owns logistics", "by": "One per seat"}]`, "superseded"},
		{"correction not in the history", `, "superseded": [{"text": "holds 120 people", "by": "holds 150 people"}]`, "by"},
		{"correction before the text", `, "superseded": [{"text": "One per seat", "by": "holds 120 people"}]`, "not after"},
		{"no correction", `, "superseded": [{"text": "holds 120 people"}]`, "required"},
		{"unknown member", `, "superseded": [{"text": "holds 120 people", "by": "One per seat", "when": 3}]`, "unknown field"},
		{"unknown top-level member", `, "corrections": []`, "unknown field"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad", withProbes(tt.extra))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "fixture bad") {
				t.Errorf("Parse = %v, want an error naming the fixture and %q", err, tt.want)
			}
		})
	}
}
