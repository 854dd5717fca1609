package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// Fixture is one evaluation case: a conversation, marked with the facts its
// evidence must keep and the strings it must never hold. Branches are
// further conversations of the same user under new keys, as a backend
// starts after a reset.
type Fixture struct {
	// Name is the file name without ".json"; it is not read from the file.
	Name string `json:"-"`
	// Description says what the fixture exercises.
	Description string `json:"description"`
	// UserID and ConversationID are the conversation's key.
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	// Messages is the checkpoint history in any of the contract's three
	// forms (docs/protocol.md), ending with the current user request.
	Messages []json.RawMessage `json:"messages"`
	// Required are facts the evidence must hold after the last turn.
	Required []Fact `json:"required"`
	// Forbidden are strings that must never appear in the evidence of any
	// conversation of the fixture, branches included, at any turn.
	Forbidden []Marker `json:"forbidden"`
	// Superseded are facts corrected later in the conversation: once the
	// correction is summarised, the old text should no longer be shown.
	Superseded []Correction `json:"superseded,omitempty"`
	// Probes are requests of the conversation that depend on older facts:
	// the evidence served for each must hold them.
	Probes []Probe `json:"probes,omitempty"`
	// Branches are conversations started later under new keys.
	Branches []Branch `json:"branches,omitempty"`

	// convs are the decoded conversations, kept by Parse; read only.
	convs []conversation
}

// Branch is a conversation that a fixture starts under a new key, such as
// the one a backend opens after the user resets a chat.
type Branch struct {
	// ConversationID is the branch's key; it must differ from every other
	// key of the fixture.
	ConversationID string `json:"conversation_id"`
	// Messages is the branch's own history, ending with a user request.
	Messages []json.RawMessage `json:"messages"`
	// Required are facts the branch's evidence must hold after its last turn.
	Required []Fact `json:"required"`
	// Forbidden are strings that must never appear in the branch's
	// evidence, on top of the fixture's.
	Forbidden []Marker `json:"forbidden"`
	// Probes are the branch's own probes.
	Probes []Probe `json:"probes,omitempty"`
}

// Probe is a user request that refers back to facts stated earlier without
// repeating them ("how many chairs should we rent?" depends on "the venue
// holds 120 people"). It is scored on the evidence served for that request:
// the state after the history up to and including the request is applied.
type Probe struct {
	// Request is a substring of the text of exactly one user message of
	// the conversation.
	Request string `json:"request"`
	// Facts are substrings of the text of messages the fold may keep (user
	// text, or assistant text without tool calls, on the chat channel) that
	// come before the request; the evidence for the request must hold each.
	Facts []string `json:"facts"`
	// Why says what the request depends on.
	Why string `json:"why,omitempty"`
}

// Correction is a fact that a later statement corrects ("8 buses" → "we
// need 11 buses instead of 8"). Text and By are substrings of evidential
// text (as Fact.Text is), By in a later message than Text.
type Correction struct {
	Text string `json:"text"`
	By   string `json:"by"`
}

// Fact is a required fact: Text is a substring of a summarised user or
// assistant message that must be found in an excerpt of the final evidence.
type Fact struct {
	Text string `json:"text"`
	Why  string `json:"why,omitempty"`
	// Bucket is where the fact belongs ("constraints", "decisions",
	// "open_work" or "recent_context"); optional, reported, not enforced.
	Bucket string `json:"bucket,omitempty"`
}

// Where a forbidden marker is looked for.
const (
	// WhereAnywhere: in any entry of the state (excerpt or message id) and
	// in the rendered message. For text that must never become evidence:
	// tool output, artifacts, system prompts, tool-call prose, thinking and
	// status text.
	WhereAnywhere = "anywhere"
	// WhereRendered: in the rendered message only, literally. For user text
	// that is evidence but must not forge structure once rendered, such as
	// a JSON fragment that tries to close the envelope or a fake speaker
	// tag.
	WhereRendered = "rendered"
)

// Marker is a forbidden string. In a file it is an object, or just the
// string, which means {"text": string, "where": "anywhere"}.
type Marker struct {
	Text  string `json:"text"`
	Why   string `json:"why,omitempty"`
	Where string `json:"where,omitempty"`
}

// UnmarshalJSON accepts a marker object or a bare string.
func (m *Marker) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*m = Marker{}
		return json.Unmarshal(b, &m.Text)
	}
	type plain Marker
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = Marker(p)
	return nil
}

// conversation is one keyed history of a fixture, decoded.
type conversation struct {
	key        string
	messages   []checkpoint.Message
	raws       []json.RawMessage
	required   []Fact
	superseded []Correction
	forbidden  []Marker
	probes     []probe
}

// probe is a Probe with its request resolved.
type probe struct {
	Probe
	// index is the position in the conversation's messages of the user
	// message whose evidence is scored: the fold of messages[:index+1].
	index int
}

// ErrNoFixtures is returned by Load for a directory without fixtures.
var ErrNoFixtures = errors.New("no fixtures (*.json) found")

// Load reads every *.json file at the top of fsys as a fixture, sorted by
// name, and validates it. Files named baseline.json are skipped.
func Load(fsys fs.FS) ([]Fixture, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Fixture
	for _, name := range names {
		if name == "baseline.json" {
			continue
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		f, err := Parse(strings.TrimSuffix(path.Base(name), ".json"), data)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, ErrNoFixtures
	}
	return out, nil
}

// Parse decodes and validates one fixture file.
func Parse(name string, data []byte) (Fixture, error) {
	var f Fixture
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Fixture{}, fmt.Errorf("fixture %s: %w", name, err)
	}
	f.Name = name
	convs, err := f.conversations()
	if err != nil {
		return Fixture{}, err
	}
	f.convs = convs
	return f, nil
}

// conversations decodes the fixture's histories and checks that its marks
// can be met: a required fact must be in the text of a message that the
// fold summarises and may keep (user text or assistant text without tool
// calls, before the last user request), and a forbidden marker must occur
// somewhere in the fixture's messages, and for WhereAnywhere never in such
// evidential text, or the fixture would demand what the contract forbids.
func (f *Fixture) conversations() ([]conversation, error) {
	fail := func(format string, args ...any) ([]conversation, error) {
		return nil, fmt.Errorf("fixture %s: "+format, append([]any{f.Name}, args...)...)
	}
	if f.UserID == "" || f.ConversationID == "" {
		return fail("user_id and conversation_id are required")
	}
	convs := []conversation{{key: f.ConversationID, raws: f.Messages, required: f.Required, superseded: f.Superseded, forbidden: f.Forbidden}}
	probes := [][]Probe{f.Probes}
	seen := map[string]bool{f.ConversationID: true}
	for i, b := range f.Branches {
		if b.ConversationID == "" || seen[b.ConversationID] {
			return fail("branch %d: conversation_id must be set and differ from the fixture's other keys", i)
		}
		seen[b.ConversationID] = true
		convs = append(convs, conversation{
			key:       b.ConversationID,
			raws:      b.Messages,
			required:  b.Required,
			forbidden: append(append([]Marker(nil), f.Forbidden...), b.Forbidden...),
		})
		probes = append(probes, b.Probes)
	}
	var allStrings []string
	for ci := range convs {
		c := &convs[ci]
		if len(c.raws) == 0 {
			return fail("%s: no messages", c.key)
		}
		msgs := make([]checkpoint.Message, len(c.raws))
		for i, raw := range c.raws {
			m, err := checkpoint.DecodeMessage(raw)
			if err != nil {
				return fail("%s: message %d: %w", c.key, i, err)
			}
			msgs[i] = m
			allStrings = appendStrings(allStrings, raw)
		}
		c.messages = msgs
		last := evidence.NewestRequest(msgs)
		if last < 0 {
			return fail("%s: no user message", c.key)
		}
		for _, r := range c.required {
			if r.Text == "" {
				return fail("%s: a required fact has no text", c.key)
			}
			if r.Bucket != "" && bucketByName(r.Bucket) < 0 {
				return fail("%s: required %q: unknown bucket %q", c.key, r.Text, r.Bucket)
			}
			if !evidentialHas(msgs[:last], r.Text) {
				return fail("%s: required %q is not in the text of a user or assistant chat message before the last request", c.key, r.Text)
			}
		}
		for _, sc := range c.superseded {
			if sc.Text == "" || sc.By == "" {
				return fail("%s: superseded: text and by are required", c.key)
			}
			at := firstEvidential(msgs[:last], sc.Text)
			if at < 0 {
				return fail("%s: superseded %q is not in the text of a user or assistant chat message before the last request", c.key, sc.Text)
			}
			by := firstEvidential(msgs[:last], sc.By)
			if by < 0 {
				return fail("%s: superseded %q: by %q is not in the text of a user or assistant chat message before the last request", c.key, sc.Text, sc.By)
			}
			if by <= at {
				return fail("%s: superseded %q: by %q comes at message %d, not after the text it corrects (message %d)", c.key, sc.Text, sc.By, by, at)
			}
		}
		for pi, p := range probes[ci] {
			resolved, err := resolveProbe(msgs, p)
			if err != nil {
				return fail("%s: probe %d: %w", c.key, pi, err)
			}
			c.probes = append(c.probes, resolved)
		}
		for _, m := range c.forbidden {
			if m.Text == "" {
				return fail("%s: a forbidden marker has no text", c.key)
			}
			switch m.Where {
			case "", WhereAnywhere:
				if evidentialHas(msgs, m.Text) {
					return fail("%s: forbidden %q is in evidential text, which the contract keeps; mark it \"where\": %q or pick another string", c.key, m.Text, WhereRendered)
				}
			case WhereRendered:
			default:
				return fail("%s: forbidden %q: where must be %q or %q", c.key, m.Text, WhereAnywhere, WhereRendered)
			}
		}
	}
	for _, c := range convs {
		for _, m := range c.forbidden {
			if !anyContains(allStrings, m.Text) {
				return fail("forbidden %q occurs in none of the fixture's messages", m.Text)
			}
		}
	}
	return convs, nil
}

// resolveProbe finds the one user message whose text holds p.Request and
// checks that every fact of p is in evidential text before it.
func resolveProbe(msgs []checkpoint.Message, p Probe) (probe, error) {
	if p.Request == "" {
		return probe{}, errors.New("request is empty")
	}
	at := -1
	for i := range msgs {
		if !msgs[i].IsRequest() || !strings.Contains(msgs[i].Text, p.Request) {
			continue
		}
		if at >= 0 {
			return probe{}, fmt.Errorf("request %q is in more than one user message (%d and %d); quote more of it", p.Request, at, i)
		}
		at = i
	}
	if at < 0 {
		return probe{}, fmt.Errorf("request %q is in no user message", p.Request)
	}
	if len(p.Facts) == 0 {
		return probe{}, fmt.Errorf("request %q: no facts", p.Request)
	}
	for _, fact := range p.Facts {
		if fact == "" {
			return probe{}, fmt.Errorf("request %q: a fact is empty", p.Request)
		}
		if !evidentialHas(msgs[:at], fact) {
			return probe{}, fmt.Errorf("request %q: fact %q is not in the text of a user or assistant chat message before the request", p.Request, fact)
		}
	}
	return probe{Probe: p, index: at}, nil
}

// evidentialHas reports whether text is in the text of a message the fold
// may keep.
func evidentialHas(msgs []checkpoint.Message, text string) bool {
	for i := range msgs {
		if msgs[i].Evidential() && strings.Contains(msgs[i].Text, text) {
			return true
		}
	}
	return false
}

// firstEvidential returns the index of the first message the fold may keep
// whose text holds text, or -1.
func firstEvidential(msgs []checkpoint.Message, text string) int {
	for i := range msgs {
		if msgs[i].Evidential() && strings.Contains(msgs[i].Text, text) {
			return i
		}
	}
	return -1
}

func anyContains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// appendStrings appends every string value (and object key) in the JSON
// value raw.
func appendStrings(dst []string, raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return dst
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			dst = append(dst, v)
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for k, x := range v {
				dst = append(dst, k)
				walk(x)
			}
		}
	}
	walk(v)
	return dst
}

var bucketNames = []string{"constraints", "decisions", "open_work", "recent_context"}

func bucketByName(name string) evidence.Bucket {
	for i, n := range bucketNames {
		if n == name {
			return evidence.Bucket(i)
		}
	}
	return -1
}
