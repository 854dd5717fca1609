package eval

import (
	"github.com/recallhq/recall/evidence"
)

// Summary holds the headline figures of one profile over one set of
// fixtures.
type Summary struct {
	// Fixtures counts the fixtures.
	Fixtures int `json:"fixtures"`
	// Retention is the share of required facts kept after the last turn;
	// LongRetention the same over conversations of at least LongMessages
	// messages.
	Retention     float64 `json:"retention"`
	LongRetention float64 `json:"long_retention"`
	// ProbeRecall is the share of probe facts found in the evidence served
	// for their requests.
	ProbeRecall float64 `json:"probe_recall"`
	// ContextProbeRecall is the share of probe facts found anywhere in the
	// prompt context assembly builds for their requests at ContextBudget
	// tokens.
	ContextProbeRecall float64 `json:"context_probe_recall"`
	// SupersededKept is the share of corrected facts still shown after the
	// last turn; ExcerptShare the share of the final messages' bytes that is
	// excerpt text.
	SupersededKept float64 `json:"superseded_kept"`
	ExcerptShare   float64 `json:"excerpt_share"`
	// ChatterShare is the share of the entries served for the probes and
	// after the last turn that are chatter.
	ChatterShare float64 `json:"chatter_share"`
	// StaleOnly is the share of corrected facts shown after the last turn
	// without the words that correct them.
	StaleOnly float64 `json:"stale_only"`
	// Leakage counts forbidden markers found; it must be 0.
	Leakage int `json:"leakage"`
	// MaxEstimatedTokens is the largest message at any step; OverBudget
	// counts steps over the bound, Invalid steps whose message was not a
	// valid evidence message, Inconsistent conversations whose turn-by-turn
	// state differs from one fold. Each but the first must be 0.
	MaxEstimatedTokens int `json:"max_estimated_tokens"`
	OverBudget         int `json:"over_budget"`
	Invalid            int `json:"invalid"`
	Inconsistent       int `json:"inconsistent"`
	// Score holds every count behind the figures.
	Score Score `json:"score"`
	// Report is the per-fixture report.
	Report *Report `json:"report"`
}

// ProfileSummary is one profile's figures: the held-out set's, and the
// development set's under Development.
type ProfileSummary struct {
	Summary
	Development *Summary `json:"development,omitempty"`
}

// Comparison is the evaluation of every profile, side by side.
type Comparison struct {
	// Set names the set the profiles' main figures are of: "held-out", or
	// "fixtures" for a folder of one's own.
	Set      string                               `json:"set"`
	Profiles map[evidence.Profile]*ProfileSummary `json:"profiles"`
	// Baseline is BM25 over the sentences before each request, filling the
	// same budget with bare text (RunBaseline): what a user could pick
	// instead. Only its retention, probe recall and superseded figures are
	// set.
	Baseline *ProfileSummary `json:"baseline"`
}

// Profiles are the profiles a comparison measures, the default first.
var Profiles = []evidence.Profile{evidence.ProfileFocus, evidence.ProfileSeed}

// Compare runs every profile over the held-out fixtures and, when dev is
// not nil, the development fixtures. Without dev, heldOut may be any set
// of one's own.
func Compare(heldOut, dev []Fixture) (*Comparison, error) {
	c := &Comparison{Set: "held-out", Profiles: map[evidence.Profile]*ProfileSummary{}}
	if dev == nil {
		c.Set = "fixtures"
	}
	for _, p := range Profiles {
		opts := Options{Config: &evidence.Config{Profile: p}}
		h, err := summarise(heldOut, opts)
		if err != nil {
			return nil, err
		}
		ps := &ProfileSummary{Summary: *h}
		if dev != nil {
			if ps.Development, err = summarise(dev, opts); err != nil {
				return nil, err
			}
		}
		c.Profiles[p] = ps
	}
	b, err := baselineSummary(heldOut)
	if err != nil {
		return nil, err
	}
	c.Baseline = &ProfileSummary{Summary: *b}
	if dev != nil {
		if c.Baseline.Development, err = baselineSummary(dev); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func baselineSummary(fixtures []Fixture) (*Summary, error) {
	t, err := RunBaseline(fixtures, 0)
	if err != nil {
		return nil, err
	}
	return &Summary{Fixtures: len(fixtures), Retention: t.Retention, LongRetention: t.LongRetention,
		ProbeRecall: t.ProbeRecall, SupersededKept: t.SupersededKept, StaleOnly: t.StaleOnly, Score: *t}, nil
}

func summarise(fixtures []Fixture, opts Options) (*Summary, error) {
	r, err := Run(fixtures, opts)
	if err != nil {
		return nil, err
	}
	t := &r.Total
	return &Summary{
		Fixtures: len(fixtures), Retention: t.Retention, LongRetention: t.LongRetention, ProbeRecall: t.ProbeRecall,
		ContextProbeRecall: t.ContextProbeRecall, SupersededKept: t.SupersededKept, StaleOnly: t.StaleOnly, ExcerptShare: t.ExcerptShare, ChatterShare: t.ChatterShare,
		Leakage: t.Leakage, MaxEstimatedTokens: t.MaxEvidenceTokens, OverBudget: t.BudgetViolations,
		Invalid: t.InvalidMessages, Inconsistent: t.Inconsistent, Score: *t, Report: r,
	}, nil
}

// Pass reports whether s keeps the evaluation's hard rules (no leakage, no
// message over budget or invalid, no inconsistency) and at least the given
// figures.
func (s *Summary) Pass(minLongRetention, minProbeRecall float64) bool {
	return s.Score.Pass(0) && s.LongRetention >= minLongRetention && s.ProbeRecall >= minProbeRecall
}
