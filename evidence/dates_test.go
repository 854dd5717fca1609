package evidence

import (
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

func TestDateLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text, want string
	}{
		{"[4:04 pm on 20 January, 2023] Gina: Hey Jon!", "20 January, 2023"},
		{"[20 January 2023] Gina: Hey Jon!", "20 January 2023"},
		{"[Monday, 3 March 2025]\nLena: the boat is booked", "Monday, 3 March 2025"},
		{"2025-03-03\nMeter 44: 120 kWh", "2025-03-03"},
		{"Date: 3/3/2025\nFrom: Lena", "3/3/2025"},
		{"Datum: 3. März 2025", "3. März 2025"},
		{"  12 mars 2024  \nLe devis est arrivé.", "12 mars 2024"},
		// A sentence that names a date is not a date line, nor is a
		// bracket that names none, nor a year alone.
		{"We moved to Berlin on 3 March 2025.", ""},
		{"[draft] The venue holds 120 people.", ""},
		{"2025\nbudget", ""},
		{"Invoice 2025-0417: 310 EUR", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := dateLine(tt.text); got != tt.want {
			t.Errorf("dateLine(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestAsksWhen(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{
		"When did Melanie paint a sunrise?":     true,
		"Q12: What year did they move to Oslo?": true,
		"Wann ist die Übergabe?":                true,
		"いつ引っ越しましたか？":                           true,
		"What did Melanie paint?":               false,
		"Draft the update. When you can.":       false, // not one question
	} {
		if got := NewQuery(q, nil).when; got != want {
			t.Errorf("NewQuery(%q).when = %v, want %v", q, got, want)
		}
	}
}

// TestEntriesKeepTheirDate checks that every entry keeps the date the
// history last named at or before its message, and that a question about
// when is shown the entries with their dates while an instruction is not.
func TestEntriesKeepTheirDate(t *testing.T) {
	t.Parallel()
	h := []checkpoint.Message{
		checkpointtest.User("m0", "[9:00 am on 2 May, 2024] Ana: I signed up for the pottery class today!"),
		checkpointtest.User("m1", "Ben: Nice, which studio?"),
		checkpointtest.User("m2", "[6:30 pm on 19 June, 2024] Ana: My first bowl came out of the kiln cracked."),
		checkpointtest.User("m3", "Ben: Bad luck, try again."),
	}
	s, _, err := Fold(NewState(), append(h, checkpointtest.User("m4", "When did Ana start the pottery class?")), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{0: "2 May, 2024", 1: "2 May, 2024", 2: "19 June, 2024", 3: "19 June, 2024"}
	for _, it := range s.Archive.Items() {
		if it.Date != want[it.Index] {
			t.Errorf("entry %q of message %d: date %q, want %q", it.Excerpt, it.Index, it.Date, want[it.Index])
		}
	}
	if s.Carry.Date != "19 June, 2024" {
		t.Errorf("carry date %q, want the last one named", s.Carry.Date)
	}
	if m := Render(&s); m == nil || !strings.Contains(m.Content, `user #0 (2 May, 2024): [9:00 am on 2 May, 2024] Ana: I signed up for the pottery class today!`) {
		t.Errorf("a question about when is not shown the entry with its date:\n%v", m)
	}

	s, _, err = Fold(NewState(), append(h, checkpointtest.User("m4", "Draft a note to Ben about the class.")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := Render(&s); m == nil || strings.Contains(m.Content, "(2 May, 2024)") {
		t.Errorf("an instruction's view shows dates:\n%v", m)
	}
}
