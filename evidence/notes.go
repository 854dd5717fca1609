package evidence

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/recallhq/recall/checkpoint"
)

// Notes are what the model lane (RECALL_EXTRACTOR=model) adds beside the
// verbatim entries: short texts a model wrote from one summarised message
// each. They never replace an entry; the view shows them as a class of
// their own, each marked as a model's note with the index of its source
// message, inside the same envelope and token bound.

// Note is one model-written note.
type Note struct {
	// Bucket is the bucket the model chose.
	Bucket Bucket `json:"bucket"`
	// Role, MessageID and Index name the note's source message: its role,
	// id and index in the history.
	Role      checkpoint.Role `json:"role"`
	MessageID string          `json:"message_id"`
	Index     int             `json:"index"`
	// Ord is the note's place among the notes of its source message, from 0.
	Ord int `json:"ord"`
	// Text is the note, at most MaxNoteBytes; Truncated says it was cut.
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
}

// MaxNoteBytes bounds a note's text.
const MaxNoteBytes = 300

// Entry returns the note as an entry of a bucket: its text in Excerpt,
// marked ModelNote.
func (n *Note) Entry() Entry {
	return Entry{Role: n.Role, MessageID: n.MessageID, Index: n.Index, Excerpt: n.Text, Truncated: n.Truncated,
		ModelNote: true}
}

// SortNotes orders notes as the view considers them: by bucket (the
// user's constraints and decisions first), then the newest source first,
// then in the order the model wrote them.
func SortNotes(notes []Note) {
	slices.SortFunc(notes, func(x, y Note) int {
		return cmp.Or(cmp.Compare(x.Bucket, y.Bucket), cmp.Compare(y.Index, x.Index), cmp.Compare(x.Ord, y.Ord))
	})
}

// NoteCandidates bounds the notes a view is chosen from: the store reads
// the newest this many of a conversation.
const NoteCandidates = 64

// The focus message writes a note as "model note on role #index: text"
// (appendModelLine).
const noteLinePrefix = "model note on "

// modelNoteMember marks a note among an entry object's members.
const modelNoteMember = `,"model_note":true`

// hasNotes reports whether bs holds a model note.
func hasNotes(bs *Buckets) bool {
	for b := range numBuckets {
		for i := range *bs.Get(b) {
			if (*bs.Get(b))[i].ModelNote {
				return true
			}
		}
	}
	return false
}

// AddNotes adds notes to the state's archive, held in memory as Fold
// keeps it, and chooses the view again for request, the current request,
// as the service does when notes arrive: the version grows by one. Without
// notes nothing changes.
func (s *State) AddNotes(notes []Note, request *checkpoint.Message, cfg *Config) {
	if len(notes) == 0 {
		return
	}
	c := cfg.withDefaults()
	if s.Archive == nil {
		s.Archive = &Archive{}
	}
	s.Archive.AddNotes(notes)
	cands, q := s.Candidates(RequestText(request))
	s.SetView(SelectViewWith(cands, q, c.MaxTokens, c.Weights))
	s.Version++
}

// AddNotes adds notes to the archive held in memory (the pure fold's; the
// service keeps them in recall_note), for its views to choose from.
func (a *Archive) AddNotes(notes []Note) {
	a.notes = append(a.notes, notes...)
}

// NoteIndex is an Index that holds model notes beside its items: Archive,
// and the store's archive of a conversation the model lane added notes to.
// ReadStanding reads them with the standing candidates.
type NoteIndex interface {
	// ReadNotes returns the newest NoteCandidates notes (NewestNotes) and
	// how many there are.
	ReadNotes(ctx context.Context) ([]Note, int, error)
}

// ReadNotes implements NoteIndex.
func (a *Archive) ReadNotes(context.Context) ([]Note, int, error) {
	if a == nil {
		return nil, 0, nil
	}
	return NewestNotes(a.notes), len(a.notes), nil
}

// readNotes adds the notes of ix, when it holds notes, to s.
func (s *Standing) readNotes(ctx context.Context, ix Index) error {
	ni, ok := ix.(NoteIndex)
	if !ok {
		return nil
	}
	notes, total, err := ni.ReadNotes(ctx)
	if err != nil {
		return err
	}
	s.Notes, s.NoteTotal = notes, total
	return nil
}

// NewestNotes returns the newest NoteCandidates of notes (the latest
// source first, then the first written), in SortNotes's order: the notes a
// view is chosen from, as the store reads them.
func NewestNotes(notes []Note) []Note {
	out := slices.Clone(notes)
	slices.SortFunc(out, func(x, y Note) int { return cmp.Or(cmp.Compare(y.Index, x.Index), cmp.Compare(x.Ord, y.Ord)) })
	out = out[:min(len(out), NoteCandidates)]
	SortNotes(out)
	return out
}

// noteShare is the share of the entry budget notes may take before the
// classes after the user's had theirs (view.go's classShare).
const noteShare = 0.15

// noteClass shows a view's note candidates, in their order, as room
// allows.
type noteClass struct {
	notes []Note
	shown []bool
	any   bool
}

func newNoteClass(notes []Note) *noteClass {
	return &noteClass{notes: notes, shown: make([]bool, len(notes))}
}

// show adds the notes not shown yet that fit, each within share bytes of
// its own and the message's maxBytes, to order, counting their bytes in
// used and their buckets in count.
func (c *noteClass) show(share int, used *int, maxBytes int, count *[numBuckets]int, order *[]Shown) {
	spent := 0
	for i := range c.notes {
		if c.shown[i] {
			continue
		}
		n := &c.notes[i]
		e := n.Entry()
		cost := modelLineLen(&e)
		if count[n.Bucket] > 0 {
			cost++ // the comma
		}
		if !c.any {
			cost += len(notesEnvelopeHead) - len(focusEnvelopeHead)
		}
		if spent+cost > share || *used+cost > maxBytes {
			continue
		}
		c.shown[i], c.any = true, true
		spent += cost
		*used += cost
		count[n.Bucket]++
		*order = append(*order, Shown{Bucket: n.Bucket, Entry: e})
	}
}

// entryOrder orders the entries of a bucket: in history order, a message's
// verbatim entries before the notes on it, notes by their text.
func entryOrder(x, y Entry) int {
	c := cmp.Compare(x.Index, y.Index)
	if c == 0 && x.ModelNote != y.ModelNote {
		if x.ModelNote {
			return 1
		}
		return -1
	}
	return cmp.Or(c, cmp.Compare(x.Span[0], y.Span[0]), cmp.Compare(x.Excerpt, y.Excerpt))
}

// ModelCall is what one call of the model lane did, without any text: its
// range, outcome, notes and tokens.
type ModelCall struct {
	// Lo and Hi are the range the call covered, [Lo, Hi).
	Lo      int `json:"lo"`
	Hi      int `json:"hi"`
	Attempt int `json:"attempt"`
	// Outcome is "ok", "invalid_answer", or how the call failed (timeout,
	// rate_limited, server_error, …).
	Outcome   string  `json:"outcome"`
	Notes     int     `json:"notes"`
	Dropped   int     `json:"dropped"`
	TokensIn  int     `json:"tokens_in"`
	TokensOut int     `json:"tokens_out"`
	Seconds   float64 `json:"seconds"`
	// At is when it was recorded.
	At time.Time `json:"at"`
}

// LaneInspection is what the evidence inspector shows of the model lane:
// its notes, whether the view shows each, how many calls answered and the
// newest that failed; never a prompt or an answer beyond the notes.
type LaneInspection struct {
	// Notes are the newest notes, the latest source first; NoteCount
	// counts them all.
	Notes     []InspectedNote
	NoteCount int
	// Calls are the newest calls that failed, newest first; Answered
	// counts those that answered.
	Calls    []ModelCall
	Answered int
}

// InspectedNote is a note and whether the view shows it.
type InspectedNote struct {
	Note
	Shown bool
}

// MarkShown sets Shown on the notes view shows.
func (l *LaneInspection) MarkShown(view []Shown) {
	shown := make(map[[2]string]bool)
	for _, s := range view {
		if s.ModelNote {
			shown[[2]string{strconv.Itoa(s.Index), s.Excerpt}] = true
		}
	}
	for i := range l.Notes {
		n := &l.Notes[i]
		n.Shown = shown[[2]string{strconv.Itoa(n.Index), n.Text}]
	}
}
