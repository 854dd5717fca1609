package evidence

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

func TestPastedLines(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		text string
		want []bool
	}{
		{"datasheet", "Here's the datasheet.\nRated power: 445 W\nVoc 41.2 V  Isc 13.9 A  Pmax 445 W\nWeight: 21 kg\nFrame: black anodised\nWarranty: 25 years\nCells: 108 half-cut", []bool{false, true, true, true, false, true, true}},
		{"requirements as bullets", "What we need\n- no gas anywhere in the house\n- budget 30k at most\n- done before the baby comes\n- keep the old fireplace\n- a window over the sink", []bool{false, false, false, false, false, false}},
		{"rules without full stops", "House rules\nNobody works inside the flats on a Sunday\nSpare keys only go to the tenant named on the lease\nDon't give out phone numbers\nThe boiler room stays locked\nPlumbing is Brightwell's", []bool{false, false, false, false, false, false}},
		{"numbered list", "Where we are\n1. opening on Saturday 14 March\n2. the dining room seats 38, the patio maybe 8 more\n3) budget 62,000 for the build-out\n4. Beto runs the kitchen\n5. lease signed for 5 years", []bool{false, false, false, false, false, false}},
		{"prose", "We moved in March. The roof faces south-west. The street side must stay clear. Tom works from home. We pay from savings. No loans.", []bool{false, false, false, false, false, false}},
		{"short", "Voc 41 V\nIsc 13 A", []bool{false, false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			items := ExtractItems([]checkpoint.Message{checkpointtest.User("m0", tt.text)}, 0, nil, nil)
			got := pastedLines(items)
			if len(got) != len(tt.want) {
				t.Fatalf("%d items, want %d: %v", len(got), len(tt.want), items)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("item %d %q: pasted %v, want %v", i, items[i].Excerpt, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestTableRow(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]bool{
		"| SKU-10442 | 12 | pallet | 40.00 EUR |":                                       true,
		"Max system voltage 1500 V DC | Max series fuse 25 A | Mechanical load 5400 Pa": true,
		"Voc 318 V  Isc 13.9 A  Pmax 445 W":                                             true,
		"a\tb\tc":                                                                       true,
		"We can go up to 21,500 EUR, not more.":                                         false,
		"Option A | Option B":                                                           false,
	} {
		if got := tableRow(text); got != want {
			t.Errorf("tableRow(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestFactsOutlastPastedDocuments checks that facts a user states in
// sentences stay shown after many pasted documents (datasheets, invoices,
// an API's reference) whose every line names numbers, in a conversation
// where such lines are not the most of what the user says.
func TestFactsOutlastPastedDocuments(t *testing.T) {
	t.Parallel()
	facts := []string{
		"The back roof faces south-west, the front one north-east.",
		"We don't want to borrow, everything comes out of our savings.",
		"Nothing may be visible on the roof from the street side.",
		"The heat pump goes behind the shed, by the fence.",
		"Tom handles the grant application himself once the final invoice is in.",
		"The shed's flat roof is in the shade of the neighbours' maple.",
		"My father-in-law will check every quote before we sign.",
		"We want a local installer, not a national chain with subcontractors.",
	}
	rng := rand.New(rand.NewPCG(3, 5))
	doc := func() string {
		var b strings.Builder
		b.WriteString("Pasting what they sent:\n")
		for range 10 + rng.IntN(6) {
			switch rng.IntN(3) {
			case 0:
				fmt.Fprintf(&b, "%s: %d.%d %s\n", []string{"Rated power", "Max input", "Weight", "Efficiency", "Voltage"}[rng.IntN(5)], rng.IntN(900), rng.IntN(10), []string{"W", "kW", "kg", "%", "V"}[rng.IntN(5)])
			case 1:
				fmt.Fprintf(&b, "Voc %d.%d V  Isc %d.%d A  Pmax %d W\n", 30+rng.IntN(20), rng.IntN(10), 10+rng.IntN(5), rng.IntN(10), 400+rng.IntN(60))
			default:
				fmt.Fprintf(&b, "Invoice %d  %s %d  total EUR %d.%02d\n", 10000+rng.IntN(90000), []string{"line", "item", "pos"}[rng.IntN(3)], 1+rng.IntN(20), rng.IntN(5000), rng.IntN(100))
			}
		}
		return b.String()
	}
	var h talk
	for i, f := range facts {
		h.add(checkpoint.RoleUser, f)
		h.add(checkpoint.RoleAssistant, "Understood.")
		if i%2 == 1 {
			h.add(checkpoint.RoleUser, "How long does the permit usually take around here?")
			h.add(checkpoint.RoleAssistant, "Usually a few weeks.")
		}
	}
	for i := range 30 {
		h.add(checkpoint.RoleUser, doc())
		h.add(checkpoint.RoleAssistant, "Got it, filed.")
		h.add(checkpoint.RoleUser, fmt.Sprintf("Thanks, talk tomorrow about quote %d.", i+1))
		h.add(checkpoint.RoleAssistant, "Sure.")
	}
	h.add(checkpoint.RoleUser, "Summarise where we stand for Tom.")
	missing := notShown(t, h, facts)
	if len(missing) > 0 {
		t.Errorf("%d of %d facts are not shown after %d pasted documents:\n%s", len(missing), len(facts), 30, strings.Join(missing, "\n"))
	}
}
