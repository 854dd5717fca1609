package evidence

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
)

// plainRules are rules a user states early in plain words: no number, no
// name, few of the contract's keywords.
var plainRules = []string{
	"Nothing gets invoiced before the client has signed off on the work.",
	"Every contractor who comes on site wears a visitor badge, no exceptions for regulars.",
	"We don't order materials on credit anymore, everything is paid up front.",
	"Please keep the tenants out of the loop on costs, they only hear about dates.",
	"Nobody works in the flats while the tenants are away unless they said yes in writing.",
	"Skip the cheap plasterboard, it cracked on us last time.",
	"Receipts go into the shared folder the same day or they don't get reimbursed.",
	"The neighbours get a note through the door before any noisy work starts.",
	"I want photos of every wall before it gets closed up.",
	"Leave the old fireplace alone, the owner is attached to it.",
}

// chatterNotes returns n user notes in which every sentence names numbers
// and a label, as site logs, meter readings and invoice lines do.
func chatterNotes(rng *rand.Rand, n int) []string {
	labels := []string{"Reading", "Unit", "Invoice", "Delivery", "Shift", "Ticket", "Batch", "Room"}
	things := []string{"meter at", "pallets of tiles,", "hours logged,", "litres of primer,", "bags of screed,", "amps on circuit", "sheets delivered,", "kg of rubble,"}
	notes := make([]string, n)
	for i := range notes {
		var b strings.Builder
		for j := range 2 + rng.IntN(3) {
			if j > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s %d: %d %s %d.%02d on %d/%d by crew %c%d.", labels[rng.IntN(len(labels))], 1000+rng.IntN(9000),
				1+rng.IntN(90), things[rng.IntN(len(things))], rng.IntN(500), rng.IntN(100), 1+rng.IntN(28), 1+rng.IntN(12),
				'A'+rune(rng.IntN(6)), 1+rng.IntN(9))
		}
		notes[i] = b.String()
	}
	return notes
}

// pastedTable returns a user message that pastes a table of rows, each
// with numbers and labels, around one plain sentence of its own.
func pastedTable(rng *rand.Rand, rows int) string {
	var b strings.Builder
	b.WriteString("Here's the export from the supplier portal:\n\n| SKU | Qty | Unit | Price | Due |\n|---|---|---|---|---|\n")
	for range rows {
		fmt.Fprintf(&b, "| SKU-%05d | %d | %s | %d.%02d EUR | 2025-%02d-%02d |\n", rng.IntN(100000), 1+rng.IntN(400),
			[]string{"box", "pallet", "roll", "bag"}[rng.IntN(4)], rng.IntN(900), rng.IntN(100), 1+rng.IntN(12), 1+rng.IntN(28))
	}
	b.WriteString("\nJust file it, nothing to do yet.")
	return b.String()
}

// TestPlainRulesOutlastChatter checks that plain rules a user states early
// stay in the view however many later sentences name numbers and labels:
// where every sentence names them, they say nothing about what matters.
func TestPlainRulesOutlastChatter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		notes func(rng *rand.Rand, n int) []string
	}{
		{"notes with numbers and labels", chatterNotes},
		{"pasted tables", func(rng *rand.Rand, n int) []string {
			notes := make([]string, n)
			for i := range notes {
				notes[i] = pastedTable(rng, 6+rng.IntN(10))
			}
			return notes
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(7, 11))
			var h talk
			h.add(checkpoint.RoleUser, "We're renovating the two flats on the top floor this spring, and I'll log everything here.")
			h.add(checkpoint.RoleAssistant, "Sounds good. Tell me how you like to run things and I'll keep track.")
			for _, r := range plainRules {
				h.add(checkpoint.RoleUser, r)
				h.add(checkpoint.RoleAssistant, "Noted.")
			}
			for _, n := range tt.notes(rng, 90) {
				h.add(checkpoint.RoleUser, n)
				h.add(checkpoint.RoleAssistant, "Logged.")
			}
			h.add(checkpoint.RoleUser, "Draft the weekly update for the owner.")
			missing := notShown(t, h, plainRules)
			if len(missing) > 0 {
				t.Errorf("%d of %d plain rules are not shown after %d messages of chatter:\n%s",
					len(missing), len(plainRules), len(h), strings.Join(missing, "\n"))
			}
		})
	}
}

// shows reports whether an entry of s holds text.
func shows(s *State, text string) bool {
	for b := range numBuckets {
		for _, e := range *s.Buckets.Get(b) {
			if strings.Contains(e.Excerpt, text) || strings.Contains(text, e.Excerpt) && len(e.Excerpt) > len(text)/2 {
				return true
			}
		}
	}
	return false
}
