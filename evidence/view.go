package evidence

import (
	"cmp"
	"slices"

	"github.com/recallhq/recall/checkpoint"
)

type windowKey struct{ index, start int }

// View is a focus view: the entries shown for one request, within the token
// bound.
type View struct {
	// Shown are the entries shown, in the view's priority order (what
	// max_tokens drops last comes first).
	Shown []Shown
	// Buckets are the entries shown, by bucket, each in history order.
	Buckets Buckets
	// OmittedEntries counts the archive's items not shown.
	OmittedEntries int
}

// Shown is an entry of a view with its bucket.
type Shown struct {
	Bucket Bucket `json:"bucket"`
	Entry
}

// The view's classes, in order of precedence. Each takes its share of the
// entry budget (the balance of the request's kind, weights.go) before the
// others had theirs; what is left then goes to the classes in this order.
// Chatter comes last, with no share: it is shown only when every other
// candidate is.
type viewClass int

const (
	classAnswer viewClass = iota
	classCorrection
	classUser
	classRelevant
	classAssistant
	classRecent
	classChatter
	numClasses
)

// shares returns the share of each class by b.
func (b *Balance) shares() [numClasses]float64 {
	return [numClasses]float64{classAnswer: b.Answer, classCorrection: b.Correction, classUser: b.User, classRelevant: b.Relevant, classAssistant: b.Assistant, classRecent: b.Recent}
}

// SelectView chooses the view for query q from the candidates c, within
// maxTokens estimated tokens for the rendered message. It is a function of
// its arguments alone.
func SelectView(c *Candidates, q *Query, maxTokens int) View {
	return selectView(c, q, maxTokens, nil, nil)
}

// SelectViewWith is SelectView scoring with the weights w (nil: the fitted
// table).
func SelectViewWith(c *Candidates, q *Query, maxTokens int, w *Weights) View {
	return selectView(c, q, maxTokens, w, nil)
}

// selectView is SelectView telling why, when why is not nil, what it
// considered and what it showed (explain.go).
func selectView(c *Candidates, q *Query, maxTokens int, w *Weights, why *viewTrace) View {
	w = weightsOr(w)
	bal := w.balanceOf(q)
	var classes [numClasses][]*Item
	rare := c.Carry.rarity()
	classes[classUser] = bySalience(c, &rare, w, bal.Frame, c.Tiers[TierUserKey], c.Tiers[TierUserFact], c.Tiers[TierUserStatement])
	for _, it := range classes[classUser] {
		if correctionItem(it) {
			classes[classCorrection] = append(classes[classCorrection], it)
		}
	}
	rel, scores := rankRelevant(c, q, &rare, w)
	for i, it := range rel {
		if q.asks && scores[i] >= bal.AnswerScore {
			classes[classAnswer] = append(classes[classAnswer], it)
		} else {
			classes[classRelevant] = append(classes[classRelevant], it)
		}
	}
	classes[classAssistant] = bySalience(c, &rare, w, bal.Frame, c.Tiers[TierAssistantRule])
	classes[classRecent] = pointers(c.Recent)
	// Chatter goes last, whatever else it is.
	seenChatter := make(map[windowKey]bool)
	for cl := range classChatter {
		classes[cl] = slices.DeleteFunc(classes[cl], func(it *Item) bool {
			if !chatterItem(it) {
				return false
			}
			k := windowKey{it.Index, it.Span[0]}
			if !seenChatter[k] {
				seenChatter[k] = true
				classes[classChatter] = append(classes[classChatter], it)
			}
			return true
		})
	}
	// What a newer candidate corrects is not shown.
	var all []*Item
	for cl := range numClasses {
		all = append(all, classes[cl]...)
	}
	candidates := uniqueItems(all)
	fixed := newLinks(append(pointers(c.Fixes), candidates...), &w.Corrections)
	why.considered(&classes, fixed)

	// The rendered size is the empty envelope's (with omitted_entries as
	// large as it can be), each entry's, and a comma between two entries of
	// a bucket.
	var empty Buckets
	size := newEnvelopeSize(&empty, true)
	maxBytes := 3 * (maxTokens - 4)
	base := size.total(c.Total+c.NoteTotal, &empty)
	used, entryBudget := base, maxBytes-base
	// limit is the room add may fill: the classes before relevance leave
	// it its share (see the share pass below).
	limit := maxBytes
	var count [numBuckets]int
	shown := make(map[windowKey]bool)
	order := []Shown{}
	// An entry's date is shown when the request asks when something
	// happened ("when did she start the pottery class?"); other views
	// spend the room on more entries instead.
	entryOf := func(it *Item) Entry {
		e := it.Entry
		if !q.when {
			e.Date = ""
		}
		e.Cut = it.Traits.Cut()
		return e
	}
	costs := make(map[*Item]int)
	costOf := func(it *Item) int {
		n, ok := costs[it]
		if !ok {
			e := entryOf(it)
			n = modelLineLen(&e)
			costs[it] = n
		}
		return n
	}
	// followed are the entries add showed beside the one it was asked to
	// show, for why.
	var followed []*Item
	var add func(it *Item, cost int) bool
	add = func(it *Item, cost int) bool {
		k := windowKey{it.Index, it.Span[0]}
		if count[it.Bucket] > 0 {
			cost++ // the comma
		}
		if shown[k] || used+cost > limit || fixed.superseded(it) {
			return false
		}
		e := entryOf(it)
		// Where a later entry may correct it, the two go together, the
		// older marked, or neither goes.
		y := fixed.follow(it)
		if y != nil {
			e.MaybeChangedBy = y.Index
			cost += modelLineLen(&e) - costOf(it)
			need := cost
			if !shown[windowKey{y.Index, y.Span[0]}] {
				need += costOf(y) + 1 // and a comma
			}
			if used+need > limit {
				return false
			}
		}
		shown[k] = true
		used += cost
		count[it.Bucket]++
		order = append(order, Shown{Bucket: it.Bucket, Entry: e})
		if y != nil && !shown[windowKey{y.Index, y.Span[0]}] {
			if !add(y, costOf(y)) {
				// The later entry did not fit after all (it has a later
				// one of its own): neither goes.
				shown[k] = false
				used -= cost
				count[it.Bucket]--
				order = order[:len(order)-1]
				return false
			}
			followed = append(followed, y)
		}
		return true
	}
	// shownWith tells why of it and of what add showed beside it.
	shownWith := func(it *Item, cl viewClass, spare bool) {
		why.shown(it, cl, spare)
		for _, y := range followed {
			why.shown(y, cl, spare)
		}
		followed = followed[:0]
	}
	shares := bal.shares()
	// Model notes (notes.go) come right after the user's own statements,
	// within a share of their own, and never displace them.
	notes := newNoteClass(c.Notes)
	// The shares may add up to more than the whole: the classes before
	// relevance leave room for its best match when that holds a word of
	// the request said nowhere else (a search for a name said once),
	// however many statements there are. Reserving relevance's whole share
	// instead cost 2.6 points of held-out retention.
	reserve := 0
	if rel := classes[classRelevant]; len(rel) > 0 && c.namesOnce(rel[0], q) {
		reserve = costOf(rel[0]) + 1
	}
	limit = maxBytes - min(reserve, int(shares[classRelevant]*float64(entryBudget)))
	for cl := range numClasses {
		if cl == classRelevant {
			limit = maxBytes
		}
		share := int(shares[cl] * float64(entryBudget))
		spent := 0
		for _, it := range classes[cl] {
			cost := costOf(it) + 1
			if spent+cost > share {
				continue
			}
			if add(it, cost-1) {
				spent += cost
				shownWith(it, cl, false)
			}
		}
		if cl == classUser {
			notes.show(int(noteShare*float64(entryBudget)), &used, limit, &count, &order)
		}
	}
	for cl := range classChatter {
		for _, it := range classes[cl] {
			if add(it, costOf(it)) {
				shownWith(it, cl, true)
			}
		}
		if cl == classUser {
			notes.show(maxBytes, &used, maxBytes, &count, &order)
		}
	}
	// Chatter only when nothing else is left out: every other entry of the
	// archive is a candidate, and shown (or corrected).
	if len(candidates) == c.Total && shownAll(candidates, shown, fixed, len(candidates)-len(classes[classChatter])) {
		for _, it := range classes[classChatter] {
			if add(it, costOf(it)) {
				shownWith(it, classChatter, true)
			}
		}
	}
	why.room(maxBytes - used)
	var bs Buckets
	bs = bs.clone()
	for i := range order {
		l := bs.Get(order[i].Bucket)
		*l = append(*l, order[i].Entry)
	}
	for b := range numBuckets {
		slices.SortFunc(*bs.Get(b), entryOrder)
	}
	return View{Shown: order, Buckets: bs, OmittedEntries: max(c.Total+c.NoteTotal-len(order), 0)}
}

// shownAll reports whether every item of items (each once) that is not
// chatter is shown or superseded, and there are want such items.
func shownAll(items []*Item, shown map[windowKey]bool, fixed *links, want int) bool {
	n := 0
	for _, it := range items {
		if chatterItem(it) {
			continue
		}
		if !shown[windowKey{it.Index, it.Span[0]}] && !fixed.superseded(it) {
			return false
		}
		n++
	}
	return n == want
}

// uniqueItems returns items without repeats of an entry, in history order.
func uniqueItems(items []*Item) []*Item {
	seen := make(map[windowKey]bool, len(items))
	out := make([]*Item, 0, len(items))
	for _, it := range items {
		k := windowKey{it.Index, it.Span[0]}
		if !seen[k] {
			seen[k] = true
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(x, y *Item) int {
		return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Span[0], y.Span[0]))
	})
	return out
}

func pointers(items []Item) []*Item {
	out := make([]*Item, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// bySalience orders the candidates of tiers by their chance of being
// needed (by the weights w, with the rarity that stands now, rare) for the
// room they take (their excerpt and frame bytes), the oldest first among
// equals.
func bySalience(c *Candidates, rare *rarity, weights *Weights, frame float64, tiers ...[]Item) []*Item {
	var out []*Item
	for _, t := range tiers {
		out = append(out, pointers(t)...)
	}
	w := make(map[*Item]float64, len(out))
	for _, it := range out {
		w[it] = c.chanceNow(it, rare, weights) / (float64(len(it.Excerpt)) + frame)
	}
	slices.SortStableFunc(out, func(x, y *Item) int {
		if c := cmp.Compare(w[y], w[x]); c != 0 {
			return c
		}
		if x.Newer(y) {
			return 1
		}
		if y.Newer(x) {
			return -1
		}
		return 0
	})
	return out
}

// RenderView renders the entries of shown (a view's priority order) that
// fit within maxTokens, in priority order, as the evidence message: the view
// as max_tokens asks for it. omitted is the view's OmittedEntries; entries
// left out add to it. It returns nil where even an empty envelope does not
// fit.
func RenderView(shown []Shown, omitted, maxTokens int) *EvidenceMessage {
	var bs Buckets
	bs = bs.clone()
	size := newEnvelopeSize(&bs, true)
	total := omitted + len(shown)
	maxBytes := 3 * (maxTokens - 4)
	n := 0
	kept := make(map[int]bool) // the message indexes of the entries kept
	for i := 0; i < len(shown); i++ {
		// An entry marked as maybe changed by a later one goes with it or
		// not at all: the later one follows it in shown, or came before.
		end := i + 1
		for end < len(shown) && shown[end-1].MaybeChangedBy > 0 && shown[end].Index == shown[end-1].MaybeChangedBy {
			end++ // the later one, and the one that may change it in turn
		}
		if m := shown[end-1].MaybeChangedBy; m > 0 && !kept[m] {
			continue
		}
		group := shown[i:end]
		for j := range group {
			s := &group[j]
			*bs.Get(s.Bucket) = append(*bs.Get(s.Bucket), s.Entry)
			size.added(s.Bucket, &s.Entry)
		}
		if size.total(total, &bs) > maxBytes {
			for j := len(group) - 1; j >= 0; j-- {
				s := &group[j]
				l := bs.Get(s.Bucket)
				size.removed(s.Bucket, &s.Entry)
				*l = (*l)[:len(*l)-1]
			}
			i += len(group) - 1
			continue
		}
		for j := range group {
			kept[group[j].Index] = true
		}
		n += len(group)
		i += len(group) - 1
	}
	if size.total(total, &bs) > maxBytes {
		return nil
	}
	for b := range numBuckets {
		slices.SortFunc(*bs.Get(b), entryOrder)
	}
	return &EvidenceMessage{Role: checkpoint.RoleAssistant, Content: string(appendEnvelopeAs(nil, total-n, &bs, true))}
}
