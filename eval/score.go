package eval

import (
	"strings"

	"github.com/recallhq/recall/evidence"
)

// Options configure a run.
type Options struct {
	// Config is the fold's configuration. Defaults to the contract's
	// (nil).
	Config *evidence.Config
	// Fold folds a history into a state. Defaults to evidence.Fold.
	Fold FoldFunc
	// MaxTokens is the bound every rendered message must keep. Defaults to
	// evidence.DefaultMaxTokens (1,800).
	MaxTokens int
	// Notes, when set, adds the model lane's notes after each fold step
	// that summarised messages, as the service adds them when its notes
	// job ends (ModelNotes asks a model). The turn-by-turn state is then
	// not compared with one fold over the whole history: the notes depend
	// on how the turns were split into calls. Defaults to none.
	Notes NoteSource
}

// Report is the result of a run.
type Report struct {
	// Fixtures are the per-fixture results, in fixture order.
	Fixtures []FixtureReport `json:"fixtures"`
	// Total adds the fixtures up.
	Total Score `json:"total"`
}

// Score holds the figures of one fixture or of all.
type Score struct {
	// Conversations, Messages and Steps count keys, messages and folds
	// (one per user message, as the pipeline folds growing snapshots).
	Conversations int `json:"conversations"`
	Messages      int `json:"messages"`
	Steps         int `json:"steps"`
	// Required and Retained count required facts and those found in the
	// evidence after the last turn; Retention is Retained/Required (1 when
	// nothing is required).
	Required  int     `json:"required"`
	Retained  int     `json:"retained"`
	Retention float64 `json:"retention"`
	// LongRequired, LongRetained and LongRetention are the same for
	// conversations of at least LongMessages messages.
	LongRequired  int     `json:"long_required"`
	LongRetained  int     `json:"long_retained"`
	LongRetention float64 `json:"long_retention"`
	// ClauseRequired and ClauseRetained count the required facts said as
	// one clause of a longer sentence (ClauseOfLonger), and
	// ClauseRetention is their ratio; AloneRetention is the retention of
	// the other required facts, said in a sentence of their own size.
	ClauseRequired  int     `json:"clause_required"`
	ClauseRetained  int     `json:"clause_retained"`
	ClauseRetention float64 `json:"clause_retention"`
	AloneRetention  float64 `json:"alone_retention"`
	// Superseded counts corrected facts (Fixture.Superseded), SupersededShown
	// those still shown after the last turn, and SupersededKept their ratio
	// (0 when nothing was corrected): lower is better.
	Superseded      int     `json:"superseded"`
	SupersededShown int     `json:"superseded_shown"`
	SupersededKept  float64 `json:"superseded_kept"`
	// StaleShown counts the corrected facts shown after the last turn
	// while the words that correct them are not, and StaleOnly their share
	// of Superseded: the agent gets only the old value. It should be 0.
	StaleShown int     `json:"stale_shown"`
	StaleOnly  float64 `json:"stale_only"`
	// ExcerptBytes counts the excerpt bytes of the evidence messages after
	// the last turn, MessageBytes their content's bytes, and ExcerptShare
	// their ratio: how much of what a model reads is quoted text.
	ExcerptBytes int     `json:"excerpt_bytes"`
	MessageBytes int     `json:"message_bytes"`
	ExcerptShare float64 `json:"excerpt_share"`
	// Served counts the entries of the views served for the probes'
	// requests and after the last turn, ChatterServed those of them that
	// are chatter (evidence.Chatter), and ChatterShare their ratio.
	Served        int     `json:"served"`
	ChatterServed int     `json:"chatter_served"`
	ChatterShare  float64 `json:"chatter_share"`
	// ProbeFacts counts the facts of probes, ProbeHits those found in the
	// evidence served for their request; ProbeRecall is their ratio (1 when
	// there are no probes).
	ProbeFacts  int     `json:"probe_facts"`
	ProbeHits   int     `json:"probe_hits"`
	ProbeRecall float64 `json:"probe_recall"`
	// ContextProbeHits counts the facts of probes found anywhere in the
	// prompt context assembly builds for the probe's request at
	// ContextBudget tokens (the history it keeps and the evidence beside
	// it); ContextProbeRecall is their share of ProbeFacts.
	ContextProbeHits   int     `json:"context_probe_hits"`
	ContextProbeRecall float64 `json:"context_probe_recall"`
	// Kinds breaks the probes down by the kind of request their why names
	// ("LoCoMo temporal question; …": "temporal"), when it names one.
	Kinds map[string]*KindScore `json:"kinds,omitempty"`
	// Bucketed counts facts with a bucket mark; Classified those that
	// entered the evidence in that bucket (the classifier's accuracy), and
	// InBucket those retained in it.
	Bucketed   int `json:"bucketed"`
	Classified int `json:"classified"`
	InBucket   int `json:"in_bucket"`
	// Leakage counts forbidden markers found in the evidence at any turn.
	Leakage int `json:"leakage"`
	// BudgetViolations counts steps whose message exceeded the token bound;
	// InvalidMessages steps whose message was not a valid evidence message.
	BudgetViolations int `json:"budget_violations"`
	InvalidMessages  int `json:"invalid_messages"`
	// Inconsistent counts conversations whose turn-by-turn state differs
	// from one fold over the whole history.
	Inconsistent int `json:"inconsistent"`
	// Inflow counts the entries that entered each bucket (constraints,
	// decisions, open_work, recent_context) over all turns: the pressure
	// that evicts older entries.
	Inflow [4]int `json:"inflow"`
	// OmittedEntries is the evidence's omitted_entries after the last turn.
	OmittedEntries int `json:"omitted_entries"`
	// EvidenceTokens is the estimated tokens of the evidence message after
	// the last turn, MaxEvidenceTokens the largest at any turn, and
	// HistoryTokens the estimated tokens of the summarised history it
	// stands for. Compression is HistoryTokens/EvidenceTokens.
	EvidenceTokens    int     `json:"evidence_tokens"`
	MaxEvidenceTokens int     `json:"max_evidence_tokens"`
	HistoryTokens     int     `json:"history_tokens"`
	Compression       float64 `json:"compression"`
	// FoldNanos is the time spent in the fold, FoldedMessages the messages
	// it summarised, and NanosPerMessage their ratio. Timings vary from run
	// to run; nothing is enforced on them.
	FoldNanos       int64   `json:"fold_ns"`
	FoldedMessages  int     `json:"folded_messages"`
	NanosPerMessage float64 `json:"fold_ns_per_message"`
}

// Pass reports whether the score meets the evaluation's hard rules — no
// leakage, every message valid and within its bound, turn-by-turn folds
// equal to whole folds — and keeps at least minRetention.
func (s *Score) Pass(minRetention float64) bool {
	return s.Leakage == 0 && s.BudgetViolations == 0 && s.InvalidMessages == 0 && s.Inconsistent == 0 &&
		s.Retention >= minRetention
}

// KindScore holds the probe figures of one kind of request.
type KindScore struct {
	// Probes counts the probes, Complete those whose every fact was found.
	Probes   int `json:"probes"`
	Complete int `json:"complete"`
	// Facts counts their facts, Hits those found; Recall is their ratio.
	Facts  int     `json:"facts"`
	Hits   int     `json:"hits"`
	Recall float64 `json:"recall"`
}

// addProbe counts a probe of why's kind with facts facts, hits of them
// found.
func (s *Score) addProbe(why string, facts, hits int) {
	kind := probeKind(why)
	if kind == "" {
		return
	}
	if s.Kinds == nil {
		s.Kinds = make(map[string]*KindScore)
	}
	k := s.Kinds[kind]
	if k == nil {
		k = &KindScore{}
		s.Kinds[kind] = k
	}
	k.Probes++
	k.Facts += facts
	k.Hits += hits
	if hits == facts {
		k.Complete++
	}
}

// probeKind returns the kind of request a probe's why names: the word
// before "question" where its first clause ends with it ("LoCoMo
// multi-hop question; answer: …" is "multi-hop"), or "" ("crane question
// depends on the floor" names none).
func probeKind(why string) string {
	first, _, _ := strings.Cut(why, ";")
	words := strings.Fields(first)
	if n := len(words); n >= 2 && words[n-1] == "question" {
		return words[n-2]
	}
	return ""
}

// FixtureReport is the result of one fixture.
type FixtureReport struct {
	Name string `json:"name"`
	Score
	// Facts are the required facts and what became of them.
	Facts []FactResult `json:"facts"`
	// Probes are the probes and the facts each missed.
	Probes []ProbeResult `json:"probes"`
	// Corrected are the corrected facts still shown after the last turn,
	// and Stale those of them shown without the words that correct them.
	Corrected []Correction `json:"corrected"`
	Stale     []Correction `json:"stale"`
	// Leaks are the forbidden markers found, each once, at its first turn.
	Leaks []Leak `json:"leaks"`
	// Problems describe invalid or oversized messages and inconsistencies,
	// at most a few per fixture.
	Problems []string `json:"problems,omitempty"`
}

// FactResult is what became of one required fact.
type FactResult struct {
	Conversation string `json:"conversation"`
	Text         string `json:"text"`
	Why          string `json:"why,omitempty"`
	// Retained: in the evidence after the last turn, in Bucket.
	Retained bool   `json:"retained"`
	Bucket   string `json:"bucket,omitempty"`
	// WantBucket is the fixture's bucket mark, if any.
	WantBucket string `json:"want_bucket,omitempty"`
	// Clause: the fact is said as one clause of a longer sentence
	// (ClauseOfLonger).
	Clause bool `json:"clause,omitempty"`
	// EverPresent: in the evidence at some turn. A fact never present was
	// never summarised into an entry (it was cut from a long excerpt); one
	// present and lost was evicted.
	EverPresent bool `json:"ever_present"`
	// FirstBucket is the bucket it was first found in.
	FirstBucket string `json:"first_bucket,omitempty"`
	// LostAtStep is the step after which it was last missing, -1 when
	// retained or never present.
	LostAtStep int `json:"lost_at_step"`
}

// ProbeResult is what the evidence served for a probe's request held.
type ProbeResult struct {
	Conversation string `json:"conversation"`
	Request      string `json:"request"`
	Why          string `json:"why,omitempty"`
	// Index is the request's index in the history.
	Index int `json:"index"`
	// Missing are the probe's facts the evidence lacked.
	Missing []string `json:"missing"`
	Facts   int      `json:"facts"`
}

// LongMessages is the length from which a conversation counts as long.
const LongMessages = 100

// The shape of a fact said as one clause of a longer sentence: its
// sentence (evidence.Segment) is at least clauseSentenceBytes long and the
// fact covers at most clauseShare of it.
const (
	clauseSentenceBytes = 120
	clauseShare         = 2.0 / 3
)

// ClauseOfLonger reports whether fact, a substring of text, is said there as
// one clause of a longer sentence ("…she came out in hives, and that's how
// we found out she can't have ibuprofen, which the GP has on file…")
// rather than in a sentence of its own size: the sentence that holds its
// first byte is at least clauseSentenceBytes long and the fact covers at
// most two thirds of it. A fact that is not in text is not.
func ClauseOfLonger(text, fact string) bool {
	at := strings.Index(text, fact)
	if at < 0 {
		return false
	}
	for _, sp := range evidence.Segment(text) {
		if sp[0] <= at && at < sp[1] {
			n := sp[1] - sp[0]
			return n >= clauseSentenceBytes && float64(len(fact)) <= clauseShare*float64(n)
		}
	}
	return false
}

// Leak is a forbidden marker found in the evidence.
type Leak struct {
	Conversation string `json:"conversation"`
	Text         string `json:"text"`
	Why          string `json:"why,omitempty"`
	// Step is the first fold after which it was found, Where the bucket or
	// "message" for the rendered message.
	Step  int    `json:"step"`
	Where string `json:"where"`
}

func (s *Score) add(o *Score) {
	s.Conversations += o.Conversations
	s.Messages += o.Messages
	s.Steps += o.Steps
	s.Required += o.Required
	s.Retained += o.Retained
	s.LongRequired += o.LongRequired
	s.LongRetained += o.LongRetained
	s.ClauseRequired += o.ClauseRequired
	s.ClauseRetained += o.ClauseRetained
	s.Superseded += o.Superseded
	s.SupersededShown += o.SupersededShown
	s.StaleShown += o.StaleShown
	for kind, k := range o.Kinds {
		if s.Kinds == nil {
			s.Kinds = make(map[string]*KindScore)
		}
		t := s.Kinds[kind]
		if t == nil {
			t = &KindScore{}
			s.Kinds[kind] = t
		}
		t.Probes += k.Probes
		t.Complete += k.Complete
		t.Facts += k.Facts
		t.Hits += k.Hits
	}
	s.ExcerptBytes += o.ExcerptBytes
	s.Served += o.Served
	s.ChatterServed += o.ChatterServed
	s.MessageBytes += o.MessageBytes
	s.ProbeFacts += o.ProbeFacts
	s.ProbeHits += o.ProbeHits
	s.ContextProbeHits += o.ContextProbeHits
	s.Bucketed += o.Bucketed
	s.Classified += o.Classified
	s.InBucket += o.InBucket
	s.Leakage += o.Leakage
	s.BudgetViolations += o.BudgetViolations
	s.InvalidMessages += o.InvalidMessages
	s.Inconsistent += o.Inconsistent
	for i := range s.Inflow {
		s.Inflow[i] += o.Inflow[i]
	}
	s.OmittedEntries += o.OmittedEntries
	s.EvidenceTokens += o.EvidenceTokens
	s.MaxEvidenceTokens = max(s.MaxEvidenceTokens, o.MaxEvidenceTokens)
	s.HistoryTokens += o.HistoryTokens
	s.FoldNanos += o.FoldNanos
	s.FoldedMessages += o.FoldedMessages
}

func (s *Score) finish() {
	s.Retention = ratio(s.Retained, s.Required)
	s.LongRetention = ratio(s.LongRetained, s.LongRequired)
	s.ClauseRetention = ratio(s.ClauseRetained, s.ClauseRequired)
	s.AloneRetention = ratio(s.Retained-s.ClauseRetained, s.Required-s.ClauseRequired)
	s.ProbeRecall = ratio(s.ProbeHits, s.ProbeFacts)
	s.ContextProbeRecall = ratio(s.ContextProbeHits, s.ProbeFacts)
	s.SupersededKept, s.StaleOnly = 0, 0
	if s.Superseded > 0 {
		s.SupersededKept = float64(s.SupersededShown) / float64(s.Superseded)
		s.StaleOnly = float64(s.StaleShown) / float64(s.Superseded)
	}
	for _, k := range s.Kinds {
		k.Recall = ratio(k.Hits, k.Facts)
	}
	s.ChatterShare = 0
	if s.Served > 0 {
		s.ChatterShare = float64(s.ChatterServed) / float64(s.Served)
	}
	s.ExcerptShare = 0
	if s.MessageBytes > 0 {
		s.ExcerptShare = float64(s.ExcerptBytes) / float64(s.MessageBytes)
	}
	if s.EvidenceTokens > 0 {
		s.Compression = float64(s.HistoryTokens) / float64(s.EvidenceTokens)
	}
	if s.FoldedMessages > 0 {
		s.NanosPerMessage = float64(s.FoldNanos) / float64(s.FoldedMessages)
	}
}
