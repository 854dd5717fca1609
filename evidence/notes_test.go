package evidence

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

func TestNoteLine(t *testing.T) {
	t.Parallel()
	for _, n := range []Note{
		{Bucket: Decisions, Role: checkpoint.RoleUser, MessageID: "m3", Index: 3, Text: "The venue is Alfama Hall."},
		{Bucket: Constraints, Role: checkpoint.RoleAssistant, Index: 12, Ord: 2, Text: "a \"quoted\" <tag> & \u200e", Truncated: true},
	} {
		e := n.Entry()
		want := "model note on " + string(n.Role) + " #" + fmt.Sprint(n.Index) + ": " + n.Text
		if n.Truncated {
			want += "…"
		}
		if got := ModelLine(&e); got != want {
			t.Errorf("ModelLine = %q, want %q", got, want)
		}
		if got := len(appendModelLine(nil, &e)); got != modelLineLen(&e) {
			t.Errorf("modelLineLen = %d, rendered %d", modelLineLen(&e), got)
		}
		b := appendEntry(nil, &e)
		if len(b) != entryLen(&e) {
			t.Errorf("entryLen = %d, rendered %d", entryLen(&e), len(b))
		}
		var back Entry
		if err := json.Unmarshal(b, &back); err != nil || back != e || !back.ModelNote {
			t.Errorf("entry %s decodes to %+v (%v), want %+v", b, back, err, e)
		}
	}
}

// noteHistory is a short focus conversation: rules of the user about
// things of their own (no rule gives another a new value), and a request
// at the end.
func noteHistory(facts int) []checkpoint.Message {
	var msgs []checkpoint.Message
	for i := range facts {
		thing := fmt.Sprintf("crate %c%c", 'a'+i/26, 'a'+i%26)
		msgs = append(msgs,
			checkpointtest.User(fmt.Sprintf("u%d", i), "We must keep the "+thing+" dry and away from the sun."),
			checkpointtest.Assistant(fmt.Sprintf("a%d", i), "Noted."))
	}
	return append(msgs, checkpointtest.User("req", "What is next?"))
}

func noteFor(i, ord int, text string) Note {
	return Note{Bucket: Decisions, Role: checkpoint.RoleUser, MessageID: fmt.Sprintf("u%d", i/2), Index: i, Ord: ord, Text: text}
}

// TestViewWithNotes: notes enter the view as a class of their own, marked
// in the message, within the bound; without notes the message is the one
// it was, byte for byte; the view is the same whatever order notes arrive
// in.
func TestViewWithNotes(t *testing.T) {
	t.Parallel()
	history := noteHistory(4)
	s, _, err := Fold(NewState(), history, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := Render(&s).Content
	if strings.Contains(before, "model note") || !strings.HasPrefix(before, focusEnvelopeHead) {
		t.Fatalf("a message without notes: %s", before)
	}
	notes := []Note{noteFor(2, 0, "Budget under 1001 EUR for item 1."), noteFor(2, 1, "Item 1 matters."), noteFor(6, 0, "Budget under 1003 EUR for item 3.")}
	withNotes := s.Clone()
	withNotes.AddNotes(notes, &history[len(history)-1], nil)
	msg := Render(&withNotes).Content
	if !strings.HasPrefix(msg, notesEnvelopeHead) {
		t.Errorf("a message with notes opens %.200s", msg)
	}
	for _, n := range notes {
		e := n.Entry()
		if !strings.Contains(msg, string(appendModelLine(nil, &e))) {
			t.Errorf("message lacks note %q: %s", n.Text, msg)
		}
	}
	// In its bucket, a message's verbatim entries come before the notes on it.
	if i, j := strings.Index(msg, `"user #2: `), strings.Index(msg, `"model note on user #2: `); i < 0 || j < i {
		t.Errorf("the verbatim entry of message 2 at %d, its note at %d: %s", i, j, msg)
	}
	var env struct {
		Omitted int `json:"omitted_entries"`
	}
	if err := json.Unmarshal([]byte(msg), &env); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if env.Omitted != s.OmittedEntries {
		t.Errorf("omitted %d, want %d (every note shown)", env.Omitted, s.OmittedEntries)
	}
	if withNotes.Version != s.Version+1 {
		t.Errorf("version %d, want %d", withNotes.Version, s.Version+1)
	}
	// The user's entries stay shown.
	for _, e := range s.Buckets.Constraints {
		if !slices.Contains(withNotes.Buckets.Constraints, e) {
			t.Errorf("the user's %q left the view for notes", e.Excerpt)
		}
	}
	// The order notes arrive in does not matter.
	other := s.Clone()
	other.AddNotes([]Note{notes[2]}, &history[len(history)-1], nil)
	other.AddNotes([]Note{notes[1], notes[0]}, &history[len(history)-1], nil)
	if got := Render(&other).Content; got != msg {
		t.Errorf("notes in another order give another message:\n%s\n%s", got, msg)
	}
	// max_tokens drops them in the view's order, within the bound.
	for _, maxTokens := range []int{80, 150, 300} {
		m := RenderWithin(&withNotes, maxTokens)
		if m != nil && EstimateTokens(len(m.Content)) > maxTokens {
			t.Errorf("max_tokens %d: %d tokens", maxTokens, EstimateTokens(len(m.Content)))
		}
		if m != nil && strings.Contains(m.Content, "model note") != strings.HasPrefix(m.Content, notesEnvelopeHead) {
			t.Errorf("max_tokens %d: the head does not match the notes: %s", maxTokens, m.Content)
		}
	}
	// The next turn keeps the notes.
	next := append(slices.Clone(history), checkpointtest.Assistant("a-last", "Next: the catering."), checkpointtest.User("req2", "Ok."))
	folded, _, err := Fold(withNotes, next, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(Render(&folded).Content, "model note on user #6") {
		t.Errorf("the next turn lost the notes: %s", Render(&folded).Content)
	}
}

// TestNotesShare: many long notes take at most their share of the room (and
// what the classes leave spare) and never push out what the user's class
// shows within its own share.
func TestNotesShare(t *testing.T) {
	t.Parallel()
	history := noteHistory(60)
	s, _, err := Fold(NewState(), history, nil)
	if err != nil {
		t.Fatal(err)
	}
	var notes []Note
	for i := 0; i < 120; i += 2 {
		notes = append(notes, noteFor(i, 0, strings.Repeat(fmt.Sprintf("note %d ", i), 60)[:MaxNoteBytes]))
	}
	withNotes := s.Clone()
	withNotes.AddNotes(notes, &history[len(history)-1], nil)
	msg := Render(&withNotes).Content
	if EstimateTokens(len(msg)) > DefaultMaxTokens {
		t.Fatalf("%d tokens, over the bound", EstimateTokens(len(msg)))
	}
	noteBytes := 0
	for _, sh := range withNotes.Shown {
		if sh.ModelNote {
			noteBytes += modelLineLen(&sh.Entry) + 1
		}
	}
	// Their share, and in the spare pass what the classes left: a third
	// at most here.
	if room := 3*(DefaultMaxTokens-4) - len(notesEnvelopeHead); noteBytes == 0 || noteBytes > room/3 {
		t.Errorf("notes take %d bytes of %d", noteBytes, room)
	}
	kept := 0
	for _, sh := range s.Shown {
		if slices.Contains(withNotes.Shown, sh) {
			kept++
		}
	}
	if kept < 3*len(s.Shown)/4 {
		t.Errorf("%d of the %d entries shown without notes are shown beside them", kept, len(s.Shown))
	}
	if want := s.OmittedEntries + len(s.Shown) + len(notes) - len(withNotes.Shown); withNotes.OmittedEntries != want {
		t.Errorf("omitted %d, want %d: every entry and note not shown", withNotes.OmittedEntries, want)
	}
	// Context assembly's candidates before an index leave out the notes on
	// messages from there on.
	all, _ := withNotes.Candidates("")
	c := all.Before(10)
	for _, n := range c.Notes {
		if n.Index >= 10 {
			t.Errorf("note of message %d among the candidates before 10", n.Index)
		}
	}
}
