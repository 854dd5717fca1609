package evidence

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"

	"github.com/recallhq/recall/checkpoint"
)

// Rarity. A sentence that names a number, a name, an identifier or a date
// looks like a fact in a conversation where few sentences name one; in a
// conversation of meter readings, invoice lines and pasted query results,
// where nearly every sentence does, it says nothing, and a plain rule the
// user stated early ("nothing gets invoiced before the client signs off")
// must not be pushed out by it. So each kind of specific thing weighs by
// how rare it is among the entries of the conversation so far: the fold
// counts them as it goes (Carry), a left fold over the history like the
// archive itself. What marks a rule, a decision or a correction (keywords,
// negations, cues) keeps its weight.

// The kinds of specific things a sentence names (specifics).
const (
	kindNumber = iota
	kindName
	kindID
	kindDate
	numKinds
)

// named counts the specific things of each kind one sentence names.
type named [numKinds]int

// Carry is what the focus fold carries from one message to the next
// besides the archive: how many of the user's entries so far name each
// kind of specific thing. It is part of the state, and the store keeps it
// with the conversation.
type Carry struct {
	// Entries counts the user's entries extracted so far.
	Entries int `json:"entries"`
	// Named counts, for each kind of specific thing (numbers, names,
	// identifiers, dates), the entries that name one.
	Named [numKinds]int `json:"named"`
	// Date is the date the history last named (dates.go), "" when none.
	Date string `json:"date,omitempty"`
}

// count adds the entries of one message to c.
func (c *Carry) count(items []Item) {
	if c == nil {
		return
	}
	for i := range items {
		if items[i].Role != checkpoint.RoleUser {
			continue
		}
		c.Entries++
		n := specifics(items[i].Excerpt)
		for k := range numKinds {
			if n[k] > 0 {
				c.Named[k]++
			}
		}
	}
}

// MarshalCarry encodes c for the store; UnmarshalCarry decodes it (nil or
// empty data is the carry of a conversation with nothing summarised).
func MarshalCarry(c *Carry) ([]byte, error) { return json.Marshal(c) }

// UnmarshalCarry: see MarshalCarry.
func UnmarshalCarry(data []byte) (Carry, error) {
	var c Carry
	if len(data) == 0 {
		return c, nil
	}
	err := json.Unmarshal(data, &c)
	return c, err
}

// The rarity of a kind: the share of the user's entries that name one, p,
// with a prior of rarityPrior entries at the share usualShare, so that a
// conversation's first entries weigh as usual. A kind named as often as
// usualShare or less weighs fully; more often, by the square of
// log(1/p) / log(1/usualShare), and never below minRarity: a kind that
// four entries in five name weighs a fifth, one that nine in ten name a
// tenth. (Linear in the log, or from a share of 0.3 or 0.5, lost more
// plain facts with names in ordinary conversations.)
const (
	usualShare  = 0.6
	rarityPrior = 10
	minRarity   = 0.1
)

// rarity holds, in thousandths, the weight of each kind of specific thing.
type rarity [numKinds]int

// rarity returns the weights of the kinds by c's counts; a nil carry
// weighs every kind fully.
func (c *Carry) rarity() rarity {
	var r rarity
	for k := range numKinds {
		r[k] = 1000
		if c == nil {
			continue
		}
		p := (float64(c.Named[k]) + rarityPrior*usualShare) / (float64(c.Entries) + rarityPrior)
		if p > usualShare {
			w := math.Log(1/p) / math.Log(1/usualShare)
			w *= w
			r[k] = int(1000 * max(minRarity, w))
		}
	}
	return r
}

// points returns what the specific things n names add to a sentence's
// salience: specificPoints0 for the first, each further one specificStep
// less (down to 2), each weighed by the rarity of its kind (fully with a
// nil r), the rarest first.
func (r *rarity) points(n named) int {
	var weights []int
	for k := range numKinds {
		for range n[k] {
			w := 1000
			if r != nil {
				w = r[k]
			}
			weights = append(weights, w)
		}
	}
	slices.SortFunc(weights, func(x, y int) int { return cmp.Compare(y, x) })
	s, p := 0, specificPoints0
	for _, w := range weights {
		s += p * w
		p = max(2, p-specificStep)
	}
	return s / 1000
}

// Traits packs what an entry's weight owes to the specific things it
// names: how many of each kind (four bits each, at most 15), the points
// they added when it was extracted (eight bits from bit 17), and whether
// it is chatter (bit 25), whether it is a user's correction (bit 26; bit 16 marked an assistant's plain sentence in
// archives written before the weights were fitted, and is not read). The
// store keeps it as an integer.
type Traits uint32

const (
	traitsPointsFrom = 17
	traitsChatter    = 1 << 25
	traitsCorrection = 1 << 26
	// traitsFitted marks an entry weighed by the fitted table: its Weight
	// is a chance. Entries of archives written before have none, and a
	// view weighs them from their text (chanceNow).
	traitsFitted = 1 << 27
	// traitsCutFrom is where an entry's Cut (two bits) is packed: where it
	// was cut out of a longer sentence (clause.go).
	traitsCutFrom = 28
)

// packTraits packs the specific things n names, the points they added and
// whether the entry is chatter.
func packTraits(n named, points int, chatter bool) Traits {
	var t Traits
	for k := range numKinds {
		t |= Traits(min(n[k], 15)) << (4 * k)
	}
	if chatter {
		t |= traitsChatter
	}
	return t | traitsFitted | Traits(min(max(points, 0), 255))<<traitsPointsFrom
}

// Cut returns where the entry was cut out of a longer sentence.
func (t Traits) Cut() Cut { return Cut(t>>traitsCutFrom) & (CutBefore | CutAfter) }

// Chatter reports whether the entry was read as chatter when it was
// extracted.
func (t Traits) Chatter() bool { return t&traitsChatter != 0 }

// Correction reports whether the entry is a user's sentence with a
// correction cue ("instead", "make it", "cambiamos").
func (t Traits) Correction() bool { return t&traitsCorrection != 0 }

// points returns the points the specific things added when the entry was
// extracted.
func (t Traits) points() int { return int(t>>traitsPointsFrom) & 255 }

// named returns the specific things t counts.
func (t Traits) named() named {
	var n named
	for k := range numKinds {
		n[k] = int(t>>(4*k)) & 15
	}
	return n
}

// chanceNow returns the chance of it by the weights w with the specific
// things it names weighed by rare, the rarity that stands now, rather than
// as it stood when it was extracted. An entry of an archive written before
// the weights were fitted is weighed from its text (its message's other
// entries unknown).
func chanceNow(it *Item, rare *rarity, w *Weights) float64 {
	w = weightsOr(w)
	if it.Traits&traitsFitted == 0 {
		v := features(it.Role, it.Bucket, it.Excerpt, it.Index, 0, 1, false, rare.points(specifics(it.Excerpt)))
		return sigmoid(v.Dot(&w.Features))
	}
	p := chanceOf(it.Weight)
	if rare == nil {
		return p
	}
	then := it.Traits.points()
	now := rare.points(it.Traits.named())
	if now == then {
		return p
	}
	// The specific feature is weighed again; the user's own (a feature
	// fitted beside it) keeps the rarity that stood at extraction, as the
	// table was fitted.
	spec := func(points int) float64 { return min(maxSpecific, float64(points)/specificScale) }
	return sigmoid(logit(p) + w.Features[FeatSpecific]*(spec(now)-spec(then)))
}

// chatterItem reports whether it is chatter: as read when it was
// extracted, or, for an entry of an archive written before, from its text.
func chatterItem(it *Item) bool {
	if it.Traits&traitsFitted == 0 {
		return Chatter(it.Excerpt)
	}
	return it.Traits.Chatter()
}

// correctionItem reports whether it is a user's correction, as chatterItem
// reads chatter.
func correctionItem(it *Item) bool {
	if it.Traits&traitsFitted == 0 {
		return it.Role == checkpoint.RoleUser && correction(it.Excerpt)
	}
	return it.Traits.Correction()
}
