package evidence

import (
	"slices"
	"strings"
)

// Tier ranks an archive entry by who wrote it and what it says. The focus
// view draws on the tiers in this order.
type Tier int

const (
	// TierUserRule: the user's constraints and decisions.
	TierUserRule Tier = iota
	// TierUserFact: the user's open work and statements (neither questions
	// nor acknowledgements), such as "The venue holds 120 people."
	TierUserFact
	// TierAssistantRule: the assistant's constraints, decisions and open
	// work.
	TierAssistantRule
	// TierContext: everything else.
	TierContext
	numTiers
)

// Item is one entry of a conversation's archive: an entry with what the
// focus view ranks it by.
type Item struct {
	Entry
	// Bucket is the entry's bucket, by the keywords of its own text.
	Bucket Bucket
	// Tier ranks the entry for the view.
	Tier Tier
	// Key is the restatement key: an item with the same key replaces it.
	Key string
	// Terms are the entry's search terms (Terms).
	Terms []string
}

// Newer reports whether it stands later in the history than o: a later
// message, or later in the same message.
func (it *Item) Newer(o *Item) bool {
	if it.Index != o.Index {
		return it.Index > o.Index
	}
	return it.Span[0] > o.Span[0]
}

// ExtractItems returns the archive entries of msgs, the history's messages at
// indexes from, from+1, …: one per sentence, list item or line of the text of
// each evidential message, in history order. Excerpts are copies, so that
// items never keep a message's text alive.
func ExtractItems(msgs []Message, from int, cfg *Config) []Item {
	c := cfg.withDefaults()
	var items []Item
	for i := range msgs {
		m := &msgs[i]
		if !m.Evidential() {
			continue
		}
		for _, sp := range Segment(m.Text) {
			excerpt, truncated := Excerpt(m.Text[sp[0]:sp[1]], c.MaxExcerptBytes)
			if excerpt == "" {
				continue
			}
			b := c.Classifier.Classify(excerpt)
			items = append(items, Item{
				Entry: Entry{Role: m.Role, MessageID: strings.Clone(m.ID), Index: from + i,
					Excerpt: strings.Clone(excerpt), Truncated: truncated, Span: Span{sp[0], sp[0] + len(excerpt)}},
				Bucket: b,
				Tier:   tierOf(m.Role, b, excerpt),
				Key:    restatementKey(excerpt),
				Terms:  Terms(excerpt),
			})
		}
	}
	return items
}

// tierOf ranks an entry.
func tierOf(role Role, b Bucket, text string) Tier {
	switch {
	case role == RoleUser && !statement(text):
		return TierContext
	case role == RoleUser && (b == Constraints || b == Decisions || correction(text)):
		return TierUserRule
	case role == RoleUser:
		return TierUserFact
	case role == RoleAssistant && b != RecentContext:
		return TierAssistantRule
	}
	return TierContext
}

// statement reports whether text states something: three words or more, not
// a question, and not only acknowledgement words ("Thanks, sounds good!").
func statement(text string) bool {
	t := strings.TrimRightFunc(text, isCloser)
	if strings.HasSuffix(t, "?") || strings.HasSuffix(t, "？") {
		return false
	}
	words := splitWords(text, nil)
	if len(words) < 3 {
		return false
	}
	for _, w := range words {
		if !ackWords[w] {
			return true
		}
	}
	return false
}

// correction reports whether text revises something said before ("Actually,
// make it 150 people."): a revision is kept like a rule, so that it is shown
// wherever the fact it replaces could be.
func correction(text string) bool {
	words := splitWords(text, nil)
	for i, w := range words {
		if correctionWords[w] {
			return true
		}
		if i+1 < len(words) && correctionPhrases[w+" "+words[i+1]] {
			return true
		}
	}
	return false
}

var correctionWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`actually instead correction revised revise update updated change changed
moved postponed cancelled canceled rescheduled scratch replace replaced
stattdessen korrektur geändert verschoben plutôt finalement changé reporté mejor cambio cambiado aplazado`) {
		m[w] = true
	}
	return m
}()

var correctionPhrases = map[string]bool{"no longer": true, "not anymore": true, "make it": true, "rather than": true, "nicht mehr": true, "plus de": true, "ya no": true}

var ackWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`thanks thank you ok okay great cool perfect sounds good yes yeah yep no nope sure
got it nice awesome lgtm please continue go ahead right fine that's that works for me makes sense alright all
danke gut super merci bien oui gracias vale sí perfecto`) {
		m[w] = true
	}
	return m
}()

// Archive is a conversation's archive held in memory: every item extracted,
// restatements collapsed, at most a bound of items. The service keeps the
// archive in Postgres instead and must keep the same items (store/archive.go);
// the pure fold uses this one.
type Archive struct {
	items []Item // oldest first
}

// Len returns the number of items.
func (a *Archive) Len() int {
	if a == nil {
		return 0
	}
	return len(a.items)
}

// Items returns the items, oldest first. The slice must not be changed.
func (a *Archive) Items() []Item { return a.items }

// Clone returns a copy of a that shares no slice with it.
func (a *Archive) Clone() *Archive {
	if a == nil {
		return nil
	}
	return &Archive{items: slices.Clone(a.items)}
}

// Add adds the items of one extraction, in history order: an item whose key
// an older item has replaces it, and while the archive holds more than max
// items the oldest recent_context item goes (the oldest item when there is
// none). It returns how many items the bound evicted.
func (a *Archive) Add(items []Item, max int) int {
	items = LatestByKey(items)
	keys := make(map[string]bool, len(items))
	for i := range items {
		keys[items[i].Key] = true
	}
	a.items = slices.DeleteFunc(a.items, func(it Item) bool { return keys[it.Key] })
	a.items = append(a.items, items...)
	evicted := 0
	for over := len(a.items) - max; over > 0; over-- {
		i := slices.IndexFunc(a.items, func(it Item) bool { return it.Bucket == RecentContext })
		if i < 0 {
			i = 0
		}
		a.items = slices.Delete(a.items, i, i+1)
		evicted++
	}
	return evicted
}

// LatestByKey returns items without those that a later item of the same
// slice restates, in the same order.
func LatestByKey(items []Item) []Item {
	last := make(map[string]int, len(items))
	for i := range items {
		last[items[i].Key] = i
	}
	if len(last) == len(items) {
		return items
	}
	out := make([]Item, 0, len(last))
	for i := range items {
		if last[items[i].Key] == i {
			out = append(out, items[i])
		}
	}
	return out
}

// Candidates are the items a focus view is chosen from: a bounded selection
// of the archive that an index finds without reading the whole archive.
type Candidates struct {
	// Total is the archive's size.
	Total int
	// Recent are the newest items, newest first, at most CandidateLimit.
	Recent []Item
	// Tiers hold, for TierUserRule, TierUserFact and TierAssistantRule, the
	// oldest CandidateLimit/2 items of the tier, oldest first, then its
	// newest CandidateLimit/2 items not among them, newest first.
	Tiers [TierContext][]Item
	// Relevant are the newest items that share a term with the query,
	// at most RelevantLimit.
	Relevant []Item
}

// The bounds of a candidate selection.
const (
	// CandidateLimit bounds Candidates.Recent and each of Candidates.Tiers.
	CandidateLimit = 64
	// RelevantLimit bounds Candidates.Relevant.
	RelevantLimit = 256
	// WindowItems is how many of the newest items join the request's text
	// in the query: a request such as "yes, that one" refers back to them.
	WindowItems = 6
)

// Recent returns the newest n items, newest first.
func (a *Archive) Recent(n int) []Item {
	if a == nil {
		return nil
	}
	out := make([]Item, 0, min(n, len(a.items)))
	for i := len(a.items) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, a.items[i])
	}
	return out
}

// Candidates selects the candidates for query q, as the store's queries do.
func (a *Archive) Candidates(q *Query) *Candidates {
	c := &Candidates{Total: a.Len(), Recent: a.Recent(CandidateLimit)}
	if a == nil {
		return c
	}
	var oldest, newest [TierContext][]Item
	for i := range a.items {
		it := &a.items[i]
		if it.Tier < TierContext && len(oldest[it.Tier]) < CandidateLimit/2 {
			oldest[it.Tier] = append(oldest[it.Tier], *it)
		}
	}
	for i := len(a.items) - 1; i >= 0; i-- {
		it := &a.items[i]
		if it.Tier < TierContext && len(newest[it.Tier]) < CandidateLimit/2 {
			newest[it.Tier] = append(newest[it.Tier], *it)
		}
		if len(c.Relevant) < RelevantLimit && q.Matches(it.Terms) {
			c.Relevant = append(c.Relevant, *it)
		}
	}
	for t := range TierContext {
		c.Tiers[t] = MergeEnds(oldest[t], newest[t])
	}
	return c
}

// MergeEnds returns the oldest items (oldest first) followed by those of
// the newest (newest first) that are not among them.
func MergeEnds(oldest, newest []Item) []Item {
	out := slices.Clip(oldest)
	for i := range newest {
		if len(oldest) > 0 && !newest[i].Newer(&oldest[len(oldest)-1]) {
			break
		}
		out = append(out, newest[i])
	}
	return out
}
