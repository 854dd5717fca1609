package evidence

import "slices"

// The evidence inspector asks why a view showed an archive entry or left
// it out. The answer comes from the code that chose the view: selectView
// records through a viewTrace the classes each candidate was in and the
// class each shown entry was shown as, and the corrections it consulted say
// which entries newer ones supersede. The rules stay in view.go and
// supersede.go; this file only writes down what they decided.

// Why says what a view did with an archive entry.
type Why string

// What a view can do with an archive entry.
const (
	// WhyShown: the entry is in the view.
	WhyShown Why = "shown"
	// WhySuperseded: a later entry of the user corrects it (recall is
	// sure), or may and is not among the candidates.
	WhySuperseded Why = "superseded"
	// WhyNoRoom: it was a candidate, but its class's share and the room
	// the others left were spent when its turn came.
	WhyNoRoom Why = "no_room"
	// WhyNotCandidate: the index did not pick it (neither among the newest
	// entries, its tier's oldest, newest or heaviest, nor sharing a term
	// with the request or the newest entries), or it ranked in no class.
	WhyNotCandidate Why = "not_candidate"
)

// classNames name the view's classes, as the inspector shows them.
var classNames = [numClasses]string{classAnswer: "answer", classCorrection: "correction", classUser: "user", classRelevant: "relevant", classAssistant: "assistant", classRecent: "recent", classChatter: "chatter"}

// tierNames name the tiers.
var tierNames = [...]string{TierUserKey: "user_key", TierUserFact: "user_fact", TierUserStatement: "user_statement",
	TierAssistantRule: "assistant_rule", TierContext: "context"}

// TierName returns the name of tier t ("user_key", …, "context").
func TierName(t Tier) string {
	if t < 0 || int(t) >= len(tierNames) {
		return "unknown"
	}
	return tierNames[t]
}

// EntryRef names an archive entry: its message's index and id and the
// start of its span.
type EntryRef struct {
	Index     int    `json:"index"`
	SpanStart int    `json:"span_start"`
	MessageID string `json:"message_id"`
}

// Decision is what a view did with one archive entry, and why.
type Decision struct {
	Why Why `json:"why"`
	// As is the class the entry was shown as ("user", "relevant",
	// "assistant" or "recent"); empty when it was not shown.
	As string `json:"as,omitempty"`
	// Spare reports that it was shown with the room the classes' shares
	// left over rather than within its class's share.
	Spare bool `json:"spare,omitempty"`
	// Classes are the classes it was a candidate of, in order of
	// precedence.
	Classes []string `json:"classes,omitempty"`
	// SupersededBy is the newer user entry that corrects it, when Why is
	// WhySuperseded.
	SupersededBy *EntryRef `json:"superseded_by,omitempty"`
}

// Explanation is a focus view with what it did with each of its
// candidates.
type Explanation struct {
	// View is the view, as SelectView returns it.
	View View
	// RoomLeft is how many bytes of the message's bound the view left
	// unused.
	RoomLeft  int
	decisions map[windowKey]*Decision
}

// ExplainView chooses the view for q from c within maxTokens, as
// SelectView does, and records why it showed or left out each candidate.
func ExplainView(c *Candidates, q *Query, maxTokens int) *Explanation {
	t := &viewTrace{decisions: make(map[windowKey]*Decision)}
	v := selectView(c, q, maxTokens, nil, t)
	for k, d := range t.decisions {
		if d.Why != "" {
			continue
		}
		if it := t.items[k]; t.fixed.superseded(it) {
			d.Why = WhySuperseded
			d.SupersededBy = &EntryRef{Index: it.Fix.Index, SpanStart: it.Fix.Start}
			if by := t.fixed.by(it); by != nil {
				d.SupersededBy.MessageID = by.MessageID
			}
		} else {
			d.Why = WhyNoRoom
		}
	}
	return &Explanation{View: v, RoomLeft: t.roomLeft, decisions: t.decisions}
}

// Decision returns what the view did with the archive entry it: a copy of
// the candidate's decision, or WhyNotCandidate.
func (x *Explanation) Decision(it *Item) Decision {
	if d, ok := x.decisions[windowKey{it.Index, it.Span[0]}]; ok {
		return *d
	}
	return Decision{Why: WhyNotCandidate}
}

// viewTrace records a view's choice for ExplainView. Its methods do nothing
// on a nil trace, which is what SelectView passes.
type viewTrace struct {
	decisions map[windowKey]*Decision
	items     map[windowKey]*Item
	fixed     *links
	roomLeft  int
}

// considered records the candidates of each class and the corrections the
// view consults.
func (t *viewTrace) considered(classes *[numClasses][]*Item, fixed *links) {
	if t == nil {
		return
	}
	t.fixed = fixed
	t.items = make(map[windowKey]*Item)
	for cl := range numClasses {
		for _, it := range classes[cl] {
			k := windowKey{it.Index, it.Span[0]}
			d, ok := t.decisions[k]
			if !ok {
				d = &Decision{}
				t.decisions[k], t.items[k] = d, it
			}
			if !slices.Contains(d.Classes, classNames[cl]) {
				d.Classes = append(d.Classes, classNames[cl])
			}
		}
	}
}

// shown records that it was shown as class cl, within the class's share or
// (spare) with the room left over.
func (t *viewTrace) shown(it *Item, cl viewClass, spare bool) {
	if t == nil {
		return
	}
	d := t.decisions[windowKey{it.Index, it.Span[0]}]
	d.Why, d.As, d.Spare = WhyShown, classNames[cl], spare
}

// room records the bytes the view left unused.
func (t *viewTrace) room(left int) {
	if t != nil {
		t.roomLeft = left
	}
}

// Inspection is what the evidence inspector shows of a conversation, read
// in one snapshot: its stored evidence, a page of its archive, and what the
// view chosen for its current request did with each entry of the page.
type Inspection struct {
	// Record is the stored evidence; for an unknown or deleted
	// conversation, a Record with only its key set.
	Record Record
	// ArchiveCount is the archive's size.
	ArchiveCount int
	// Entries are the page's entries, in history order, each with the
	// view's decision.
	Entries []InspectedEntry
	// Next is the position to read the next page after; nil on the last
	// page.
	Next *ArchivePosition
	// RequestIndex is the index of the request the view was chosen for;
	// -1 when there is no view (the seed profile, or nothing summarised).
	RequestIndex int
	// MaxTokens bounds the view's message; RoomLeft is how many bytes of
	// it the view left unused.
	MaxTokens, RoomLeft int
	// Matches reports that the view chosen again here is the stored one.
	Matches bool
	// Lane is the model lane's notes and calls (notes.go).
	Lane LaneInspection
}

// InspectedEntry is an archive entry with what the view did with it.
type InspectedEntry struct {
	Item     Item
	Decision Decision
}

// ArchivePosition is an entry's place in the history: its message's index
// and the start of its span.
type ArchivePosition struct {
	Index, SpanStart int
}
