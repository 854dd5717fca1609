package evidence

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
)

// Entry is one piece of evidence: an excerpt of one summarised message.
type Entry struct {
	Role      checkpoint.Role `json:"role"`
	MessageID string          `json:"message_id"`
	Index     int             `json:"index"`
	Excerpt   string          `json:"excerpt"`
	Truncated bool            `json:"truncated"`
	// Span is the excerpt's byte range in the message's text; the focus
	// profile's entries have one, the seed profile's do not (zero, left out
	// of JSON).
	Span Span `json:"span,omitzero"`
	// Date is the date the history last named at or before the entry's
	// message (dates.go), as it was written; the focus view shows it with
	// the entries that answer a question, and leaves it out otherwise.
	Date string `json:"date,omitempty"`
	// ModelNote marks a model's note (notes.go): Excerpt is then the note's
	// text, not a quote, and Index its source message's.
	ModelNote bool `json:"model_note,omitempty"`
	// MaybeChangedBy is, on an entry the view shows beside a later one that
	// may correct it (recall is not sure it does), the later entry's message
	// index; 0 otherwise (supersede.go).
	MaybeChangedBy int `json:"maybe_changed_by,omitempty"`
	// Cut says, on an entry a view shows, where it was cut out of a longer
	// sentence (clause.go): CutBefore when the sentence goes on before the
	// excerpt, CutAfter when it goes on after it, both, or 0 for a whole
	// sentence.
	Cut Cut `json:"cut,omitempty"`
}

// Cut says where a clause was cut out of its sentence (Entry.Cut).
type Cut uint8

// The sides of a cut.
const (
	CutBefore Cut = 1 << iota
	CutAfter
)

// cutNames name each Cut in JSON.
var cutNames = [...]string{CutBefore: "before", CutAfter: "after", CutBefore | CutAfter: "both"}

// String returns "before", "after", "both", or "" for none.
func (c Cut) String() string {
	if int(c) >= len(cutNames) {
		return ""
	}
	return cutNames[c]
}

// MarshalJSON writes c as its name.
func (c Cut) MarshalJSON() ([]byte, error) { return json.Marshal(c.String()) }

// UnmarshalJSON reads c from its name.
func (c *Cut) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	for i, n := range cutNames {
		if n == name {
			*c = Cut(i)
			return nil
		}
	}
	return fmt.Errorf("unknown cut %q", name)
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
	PrefixDigest checkpoint.Digest `json:"prefix_digest"`
	// OmittedEntries counts entries that left the buckets to keep them bounded.
	OmittedEntries int `json:"omitted_entries"`
	// Buckets holds the entries: in the seed profile the fold's own
	// buckets, in the focus profile the view for the current request.
	Buckets Buckets `json:"buckets"`

	// Shown is the focus view's entries in priority order (nil in the seed
	// profile): what a smaller max_tokens drops first comes last.
	Shown []Shown `json:"-"`
	// Archive is the focus profile's archive, when the state was folded in
	// memory (Fold); the service keeps it in Postgres instead.
	Archive *Archive `json:"-"`
	// Carry is what the focus fold carries from one message to the next
	// besides the archive (rarity.go).
	Carry Carry `json:"-"`
}

// NewState returns the state of a conversation with nothing summarised.
func NewState() State {
	return State{PrefixDigest: checkpoint.ChainStart(), Buckets: Buckets{}.clone()}
}

// Clone returns a deep copy of s.
func (s State) Clone() State {
	s.Buckets = s.Buckets.clone()
	s.Shown = slices.Clone(s.Shown)
	s.Archive = s.Archive.Clone()
	return s
}

// Profile names a set of extraction rules.
type Profile string

// The profiles.
const (
	// ProfileFocus (the default) keeps every sentence of the summarised
	// messages in an archive and shows, for each request, the entries that
	// matter most to it within the token bound.
	ProfileFocus Profile = "focus"
	// ProfileSeed keeps the seed system's rules exactly: one entry per
	// message, at most six per bucket, the oldest out.
	ProfileSeed Profile = "seed"
)

// ParseProfile returns the profile named s ("" is the default, focus).
func ParseProfile(s string) (Profile, error) {
	switch Profile(s) {
	case "", ProfileFocus:
		return ProfileFocus, nil
	case ProfileSeed:
		return ProfileSeed, nil
	}
	return "", fmt.Errorf("unknown evidence profile %q: use %q or %q", s, ProfileFocus, ProfileSeed)
}

// Config holds the profile, bounds and heuristics of the fold. The zero
// value, and a nil *Config, mean the defaults.
type Config struct {
	// Profile picks the extraction rules. Defaults to ProfileFocus.
	Profile Profile
	// MaxEntriesPerBucket bounds each bucket of the seed profile; the
	// oldest entry goes first. Defaults to 6 (as do values below 1).
	MaxEntriesPerBucket int
	// MaxTokens bounds the estimated tokens of the rendered evidence message.
	// Defaults to 1800 (as do values below 1).
	MaxTokens int
	// MaxExcerptBytes bounds an excerpt's UTF-8 bytes. Defaults to 900 (as
	// do values below 1).
	MaxExcerptBytes int
	// MaxArchiveEntries bounds a conversation's archive in the focus
	// profile; beyond it the oldest recent_context entries go first.
	// Defaults to 50,000 (as do values below 1).
	MaxArchiveEntries int
	// Classifier picks an entry's bucket. Defaults to one built from
	// FocusKeywords in the focus profile, from DefaultKeywords in the seed
	// profile.
	Classifier *Classifier
	// Weights are the focus profile's scorer: how much each feature of an
	// entry weighs and how a view shares its room. Defaults to the fitted
	// table (weights.json).
	Weights *Weights

	// trace, when set, is told what extractions read (FoldTrace).
	trace *trace
}

// Defaults.
const (
	DefaultMaxEntriesPerBucket = 6
	DefaultMaxTokens           = 1800
	DefaultMaxExcerptBytes     = 900
	DefaultMaxArchiveEntries   = 50000
)

func (c *Config) withDefaults() Config {
	var cfg Config
	if c != nil {
		cfg = *c
	}
	if cfg.Profile == "" {
		cfg.Profile = ProfileFocus
	}
	// Values below 1 mean the defaults too: a negative bound would make the
	// fold index an empty bucket or cut an excerpt before its start.
	cfg.MaxEntriesPerBucket = cmp.Or(max(cfg.MaxEntriesPerBucket, 0), DefaultMaxEntriesPerBucket)
	cfg.MaxTokens = cmp.Or(max(cfg.MaxTokens, 0), DefaultMaxTokens)
	cfg.MaxExcerptBytes = cmp.Or(max(cfg.MaxExcerptBytes, 0), DefaultMaxExcerptBytes)
	cfg.MaxArchiveEntries = cmp.Or(max(cfg.MaxArchiveEntries, 0), DefaultMaxArchiveEntries)
	if cfg.Classifier == nil {
		cfg.Classifier = defaultClassifier
		if cfg.Profile == ProfileFocus {
			cfg.Classifier = focusClassifier
		}
	}
	return cfg
}

// WithDefaults returns a copy of c with every default filled in.
func (c *Config) WithDefaults() Config { return c.withDefaults() }

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
// digest of the history up to the new cursor. request is the message after
// them, the current request: the focus profile chooses its view for it.
// Version grows by one when the cursor moves. Callers that hold a whole
// history use Fold, which validates lineage first.
func (s *State) Summarise(msgs []checkpoint.Message, prefix checkpoint.Digest, request *checkpoint.Message, cfg *Config) {
	if len(msgs) == 0 {
		return
	}
	c := cfg.withDefaults()
	if s.Archive == nil && c.Profile == ProfileFocus {
		s.Archive = &Archive{}
	}
	ctx := context.Background()
	x := c.NewExtraction(*s, s.Archive, s.Archive.Len())
	err := x.Add(ctx, msgs, prefix)
	if err == nil {
		*s, _, err = x.Finish(ctx, request)
	}
	if err != nil {
		panic(err) // an archive in memory answers every scan and applies every change
	}
}

// SetView makes v the state's evidence (the focus profile).
func (s *State) SetView(v View) {
	s.Buckets, s.Shown, s.OmittedEntries = v.Buckets, v.Shown, v.OmittedEntries
}

// RequestText returns the text a view is chosen for: the request's text when
// it is on the conversation channel, else "".
func RequestText(request *checkpoint.Message) string {
	if request == nil || !request.IsConversation() {
		return ""
	}
	return request.Text
}

// add adds the entry of one message, if it has one, and enforces the bounds.
// size tracks the rendered length of s.Buckets.
func (s *State) add(m *checkpoint.Message, index int, c *Config, size *envelopeSize) {
	if !m.Evidential() {
		return
	}
	excerpt, truncated := Excerpt(m.Text, c.MaxExcerptBytes)
	if excerpt == "" {
		return
	}
	b := c.Classifier.Classify(m.Text)
	list := s.Buckets.Get(b)
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
		size.removed(b, &(*list)[0])
		removeOldest(list)
		s.OmittedEntries++
	}
	for s.Buckets.Len() > 0 && EstimateTokens(size.total(s.OmittedEntries, &s.Buckets)) > c.MaxTokens {
		evictOldestOfLargest(&s.Buckets, size)
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
