package evidence

import (
	"cmp"
	"strings"
	"unicode/utf8"
)

// Entry is one piece of evidence: an excerpt of one summarised message.
type Entry struct {
	Role      Role   `json:"role"`
	MessageID string `json:"message_id"`
	Index     int    `json:"index"`
	Excerpt   string `json:"excerpt"`
	Truncated bool   `json:"truncated"`
}

// Buckets holds the entries of the four buckets, oldest first.
type Buckets struct {
	Constraints   []Entry `json:"constraints"`
	Decisions     []Entry `json:"decisions"`
	OpenWork      []Entry `json:"open_work"`
	RecentContext []Entry `json:"recent_context"`
}

// Get returns a pointer to bucket b's entries.
func (bs *Buckets) Get(b Bucket) *[]Entry {
	switch b {
	case Constraints:
		return &bs.Constraints
	case Decisions:
		return &bs.Decisions
	case OpenWork:
		return &bs.OpenWork
	default:
		return &bs.RecentContext
	}
}

// Len returns the number of entries in all buckets.
func (bs *Buckets) Len() int {
	return len(bs.Constraints) + len(bs.Decisions) + len(bs.OpenWork) + len(bs.RecentContext)
}

// clone returns a deep copy whose slices are never nil, so that they encode
// as [] rather than null.
func (bs Buckets) clone() Buckets {
	cp := func(e []Entry) []Entry { return append(make([]Entry, 0, len(e)+1), e...) }
	return Buckets{cp(bs.Constraints), cp(bs.Decisions), cp(bs.OpenWork), cp(bs.RecentContext)}
}

// State is a conversation's evidence: the result of one left fold over the
// summarised part [0, Cursor) of its history.
type State struct {
	// Version grows by one each time the state changes.
	Version int64 `json:"version"`
	// Cursor is how many leading messages are summarised.
	Cursor int `json:"cursor"`
	// MessageCount is the length of the longest history accepted.
	MessageCount int `json:"message_count"`
	// PrefixDigest is the chain digest of messages [0, Cursor).
	PrefixDigest Digest `json:"prefix_digest"`
	// OmittedEntries counts entries that left the buckets to keep them bounded.
	OmittedEntries int `json:"omitted_entries"`
	// Buckets holds the entries.
	Buckets Buckets `json:"buckets"`
}

// NewState returns the state of a conversation with nothing summarised.
func NewState() State {
	return State{PrefixDigest: chainStart, Buckets: Buckets{}.clone()}
}

// Clone returns a deep copy of s.
func (s State) Clone() State {
	s.Buckets = s.Buckets.clone()
	return s
}

// Config holds the bounds and heuristics of the fold. The zero value, and a
// nil *Config, mean the contract's defaults.
type Config struct {
	// MaxEntriesPerBucket bounds each bucket; the oldest entry goes first.
	// Defaults to 6 (as do values below 1).
	MaxEntriesPerBucket int
	// MaxTokens bounds the estimated tokens of the rendered evidence message.
	// Defaults to 1800 (as do values below 1).
	MaxTokens int
	// MaxExcerptBytes bounds an excerpt's UTF-8 bytes. Defaults to 900 (as
	// do values below 1).
	MaxExcerptBytes int
	// Classifier picks an entry's bucket. Defaults to one built from
	// DefaultKeywords.
	Classifier *Classifier

	// The Experimental switches change the fold in ways the contract (§4.8)
	// does not allow. They exist to be measured by the offline evaluation
	// ("recall eval --experiment NAME", eval/README.md) and must stay off
	// in production: a state folded with one on is not the contract's.

	// ExperimentalDedupe drops an older entry of a bucket when a new entry
	// of that bucket restates it (holds at least 80% of its words), instead
	// of keeping both. Defaults to false.
	ExperimentalDedupe bool
	// ExperimentalUserFirst makes a bucket over its bound lose its oldest
	// assistant entry, and a user entry only when it has no assistant
	// entry left. Defaults to false.
	ExperimentalUserFirst bool
	// ExperimentalProtect makes the token bound evict from recent_context
	// and open_work (the larger first) before decisions and constraints.
	// Defaults to false.
	ExperimentalProtect bool
}

// Contract defaults.
const (
	DefaultMaxEntriesPerBucket = 6
	DefaultMaxTokens           = 1800
	DefaultMaxExcerptBytes     = 900
)

func (c *Config) withDefaults() Config {
	var cfg Config
	if c != nil {
		cfg = *c
	}
	// Values below 1 mean the defaults too: a negative bound would make the
	// fold index an empty bucket or cut an excerpt before its start.
	cfg.MaxEntriesPerBucket = cmp.Or(max(cfg.MaxEntriesPerBucket, 0), DefaultMaxEntriesPerBucket)
	cfg.MaxTokens = cmp.Or(max(cfg.MaxTokens, 0), DefaultMaxTokens)
	cfg.MaxExcerptBytes = cmp.Or(max(cfg.MaxExcerptBytes, 0), DefaultMaxExcerptBytes)
	if cfg.Classifier == nil {
		cfg.Classifier = defaultClassifier
	}
	return cfg
}

// Excerpt trims text and cuts it to at most limit UTF-8 bytes (none when
// limit < 0) at a character boundary. It reports whether it cut.
func Excerpt(text string, limit int) (string, bool) {
	s := strings.TrimSpace(text)
	if len(s) <= limit {
		return s, false
	}
	cut := max(limit, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// Summarise folds msgs, the history's messages at indexes s.Cursor,
// s.Cursor+1, …, into the state in index order, advances Cursor past them
// and sets PrefixDigest to prefix, which the caller has computed as the chain
// digest of the history up to the new cursor. Version grows by one when the
// cursor moves. Callers that hold a whole history use Fold, which validates
// lineage first.
func (s *State) Summarise(msgs []Message, prefix Digest, cfg *Config) {
	if len(msgs) == 0 {
		return
	}
	c := cfg.withDefaults()
	if s.Buckets.Constraints == nil {
		s.Buckets = s.Buckets.clone()
	}
	size := newEnvelopeSize(&s.Buckets)
	for i := range msgs {
		s.add(&msgs[i], s.Cursor+i, &c, &size)
	}
	s.Cursor += len(msgs)
	s.PrefixDigest = prefix
	s.MessageCount = max(s.MessageCount, s.Cursor)
	s.Version++
}

// add adds the entry of one message, if it has one, and enforces the bounds.
// size tracks the rendered length of s.Buckets.
func (s *State) add(m *Message, index int, c *Config, size *envelopeSize) {
	if !m.Evidential() {
		return
	}
	excerpt, truncated := Excerpt(m.Text, c.MaxExcerptBytes)
	if excerpt == "" {
		return
	}
	b := c.Classifier.Classify(m.Text)
	list := s.Buckets.Get(b)
	if c.ExperimentalDedupe {
		s.OmittedEntries += dropRestated(list, b, excerpt, size)
	}
	// The excerpt is a substring of the message's text and the id is the
	// message's own: a copy of both, in one allocation, keeps the state from
	// holding the history alive.
	idAndExcerpt := m.ID + excerpt
	if m.ID == "" || excerpt == "" {
		idAndExcerpt = strings.Clone(idAndExcerpt)
	}
	id, excerpt := idAndExcerpt[:len(m.ID)], idAndExcerpt[len(m.ID):]
	*list = append(*list, Entry{Role: m.Role, MessageID: id, Index: index, Excerpt: excerpt, Truncated: truncated})
	size.added(b, &(*list)[len(*list)-1])
	for len(*list) > c.MaxEntriesPerBucket {
		if c.ExperimentalUserFirst && removeOldestAssistant(list, b, size) {
			s.OmittedEntries++
			continue
		}
		size.removed(b, &(*list)[0])
		removeOldest(list)
		s.OmittedEntries++
	}
	for s.Buckets.Len() > 0 && EstimateTokens(size.total(s.OmittedEntries, &s.Buckets)) > c.MaxTokens {
		if c.ExperimentalProtect || c.ExperimentalUserFirst {
			evictExperimental(&s.Buckets, c, size)
		} else {
			evictOldestOfLargest(&s.Buckets, size)
		}
		s.OmittedEntries++
	}
}

// evictionOrder breaks ties between equally large buckets.
var evictionOrder = [numBuckets]Bucket{RecentContext, OpenWork, Decisions, Constraints}

// largest returns the bucket with the most entries, ties broken by
// evictionOrder, or -1 when all are empty.
func largest(bs *Buckets) Bucket {
	best, n := Bucket(-1), 0
	for _, b := range evictionOrder {
		if l := len(*bs.Get(b)); l > n {
			best, n = b, l
		}
	}
	return best
}

// evictOldestOfLargest removes the oldest entry of the largest bucket and
// takes it off size.
func evictOldestOfLargest(bs *Buckets, size *envelopeSize) {
	if b := largest(bs); b >= 0 {
		list := bs.Get(b)
		size.removed(b, &(*list)[0])
		removeOldest(list)
	}
}

// removeOldest removes the first entry of list. It copies rather than
// reslices, so that the evicted excerpt can be freed, and never writes to
// the old array, which a shallow copy of the state may share.
func removeOldest(list *[]Entry) {
	*list = append((*list)[:0:0], (*list)[1:]...)
}

// dropRestated removes the entries of list (bucket b) whose words are, for
// at least 80%, words of excerpt too: excerpt restates them
// (ExperimentalDedupe). It returns how many went.
func dropRestated(list *[]Entry, b Bucket, excerpt string, size *envelopeSize) int {
	if len(*list) == 0 {
		return 0
	}
	words := make(map[string]bool)
	for _, w := range splitWords(excerpt, nil) {
		words[w] = true
	}
	n := 0
	kept := (*list)[:0:0]
	for i := range *list {
		e := &(*list)[i]
		old := splitWords(e.Excerpt, nil)
		shared := 0
		seen := make(map[string]bool, len(old))
		for _, w := range old {
			if !seen[w] {
				seen[w] = true
				if words[w] {
					shared++
				}
			}
		}
		if len(seen) >= 3 && shared*5 >= len(seen)*4 {
			size.removed(b, e)
			n++
			continue
		}
		kept = append(kept, *e)
	}
	if n > 0 {
		*list = kept
	}
	return n
}

// removeOldestAssistant removes the oldest assistant entry of list (bucket
// b), if it has one (ExperimentalUserFirst).
func removeOldestAssistant(list *[]Entry, b Bucket, size *envelopeSize) bool {
	for i := range *list {
		if (*list)[i].Role == RoleAssistant {
			size.removed(b, &(*list)[i])
			*list = append((*list)[:i:i], (*list)[i+1:]...)
			return true
		}
	}
	return false
}

// evictExperimental removes one entry for the token bound under the
// experimental switches: with ExperimentalProtect from the larger of
// recent_context and open_work while either has entries, else the largest
// bucket; with ExperimentalUserFirst that bucket's oldest assistant entry
// if it has one, else its oldest.
func evictExperimental(bs *Buckets, c *Config, size *envelopeSize) {
	b := largest(bs)
	if c.ExperimentalProtect {
		if n, o := len(bs.RecentContext), len(bs.OpenWork); n > 0 || o > 0 {
			b = RecentContext
			if o > n {
				b = OpenWork
			}
		}
	}
	if b < 0 {
		return
	}
	list := bs.Get(b)
	if c.ExperimentalUserFirst && removeOldestAssistant(list, b, size) {
		return
	}
	size.removed(b, &(*list)[0])
	*list = append((*list)[:0:0], (*list)[1:]...)
}
