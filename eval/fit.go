package eval

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// Fitting the scorer. The view's weights are fitted on development data
// in two stages, both reproducible (no randomness, sets and fixtures in
// order):
//
//  1. The features' weights: a logistic regression of whether an archive
//     entry holds a fact the fixture says a later request needs (a required
//     fact, a probe's fact) on the entry's features (evidence.Vector), each
//     set weighing the same, its positive and negative entries half each.
//  2. The balance of the view for each kind of request (a question, an
//     instruction): the shares of its room, searched one value at a time
//     over a grid, for the mean over the sets of their probe recall (and
//     retention, where a set has required facts), scored on the views
//     chosen with the weights of stage 1.
//
// Cross-validation leaves one set out at a time: the weights fitted on the
// others score it. A weight that helps only one set shows up there as a
// cross-validated figure below the fitted one.

// FitSet is one set of fixtures, fitted on as a whole.
type FitSet struct {
	// Name names the set in the report (a directory's name).
	Name string
	// Fixtures are the set's fixtures.
	Fixtures []Fixture
}

// SetFigures are one set's figures under one table of weights.
type SetFigures struct {
	Set         string  `json:"set"`
	ProbeFacts  int     `json:"probe_facts"`
	ProbeHits   int     `json:"probe_hits"`
	ProbeRecall float64 `json:"probe_recall"`
	Required    int     `json:"required"`
	Retained    int     `json:"retained"`
	Retention   float64 `json:"retention"`
}

// FitReport is what Fit found.
type FitReport struct {
	// Weights is the table fitted on every set.
	Weights *evidence.Weights `json:"-"`
	// Sets names the sets, in order.
	Sets []string `json:"sets"`
	// Entries and Positives count the archive entries stage 1 was fitted on
	// and those that hold a needed fact.
	Entries   int `json:"entries"`
	Positives int `json:"positives"`
	// Before are each set's figures with the table the fit started from
	// (the one recall scored with), Fitted with the table fitted on every
	// set, CrossValidated with the table fitted on every other set.
	Before         []SetFigures `json:"before"`
	Fitted         []SetFigures `json:"fitted"`
	CrossValidated []SetFigures `json:"cross_validated"`
}

// The fit's settings, set by hand.
const (
	// fitL2 is the ridge of the regression: it keeps a weight finite where
	// a feature never fires in the data, and is small against the sets'
	// total weight of one each.
	fitL2 = 0.01
	// fitIterations bounds Newton's method, which converges in a few.
	fitIterations = 50
	// minFactBytes: an entry shorter than this that a fact's text holds
	// is not counted as holding the fact (a word or two of it).
	minFactBytes = 16
)

// balanceGrid is the values stage 2 tries for each part of a balance.
var balanceGrid = []struct {
	name   string
	values []float64
	field  func(b *evidence.Balance) *float64
}{
	{"answer", []float64{0.55, 0.7, 0.85}, func(b *evidence.Balance) *float64 { return &b.Answer }},
	{"answer_score", []float64{1, 2, 4}, func(b *evidence.Balance) *float64 { return &b.AnswerScore }},
	{"correction", []float64{0, 0.05, 0.1, 0.2}, func(b *evidence.Balance) *float64 { return &b.Correction }},
	// The user's statements never take all the room first, and relevance
	// always has a tenth: a request's own words must find what shares
	// them (a search for a name said once), and the sets fitted on have
	// few such requests to say so.
	{"user", []float64{0.7, 0.85, 0.9}, func(b *evidence.Balance) *float64 { return &b.User }},
	{"relevant", []float64{0.1, 0.2, 0.3}, func(b *evidence.Balance) *float64 { return &b.Relevant }},
	{"assistant", []float64{0, 0.1, 0.2}, func(b *evidence.Balance) *float64 { return &b.Assistant }},
	{"recent", []float64{0, 0.05}, func(b *evidence.Balance) *float64 { return &b.Recent }},
	{"frame", []float64{300, 1000, 3000}, func(b *evidence.Balance) *float64 { return &b.Frame }},
}

// Fit fits the view's weights on sets, starting from start (nil: the table
// recall scores with), and cross-validates them leaving one set out at a
// time. Every set must have probes.
func Fit(sets []FitSet, start *evidence.Weights) (*FitReport, error) {
	if len(sets) == 0 {
		return nil, errors.New("no sets to fit on")
	}
	if start == nil {
		start = evidence.FittedWeights()
	}
	r := &FitReport{}
	samples := make([][]sample, len(sets))
	for i, s := range sets {
		if len(s.Fixtures) == 0 {
			return nil, fmt.Errorf("set %s: %w", s.Name, ErrNoFixtures)
		}
		probes := 0
		for _, f := range s.Fixtures {
			for _, c := range f.convs {
				probes += len(c.probes)
			}
		}
		if probes == 0 {
			return nil, fmt.Errorf("set %s: no probes: a set is fitted and scored on what its probes need", s.Name)
		}
		r.Sets = append(r.Sets, s.Name)
		var err error
		if samples[i], err = setSamples(&s); err != nil {
			return nil, err
		}
		for _, x := range samples[i] {
			r.Entries++
			if x.positive {
				r.Positives++
			}
		}
	}
	fit := func(use []int) (*evidence.Weights, error) {
		w := *start
		feats, err := regress(samples, use, &start.Features)
		if err != nil {
			return nil, err
		}
		w.Features = feats
		cases := make([][]viewCase, len(sets))
		for _, i := range use {
			if cases[i], err = setCases(&sets[i], &w); err != nil {
				return nil, err
			}
		}
		searchBalance(&w, cases, use)
		return &w, nil
	}
	all := make([]int, len(sets))
	for i := range sets {
		all[i] = i
	}
	w, err := fit(all)
	if err != nil {
		return nil, err
	}
	r.Weights = w
	for i := range sets {
		before, err := scoreSet(&sets[i], start)
		if err != nil {
			return nil, err
		}
		after, err := scoreSet(&sets[i], w)
		if err != nil {
			return nil, err
		}
		r.Before, r.Fitted = append(r.Before, before), append(r.Fitted, after)
		var cv SetFigures
		if len(sets) > 1 {
			others := slices.Delete(slices.Clone(all), i, i+1)
			wo, err := fit(others)
			if err != nil {
				return nil, err
			}
			if cv, err = scoreSet(&sets[i], wo); err != nil {
				return nil, err
			}
		} else {
			cv = after // one set: nothing to leave out
		}
		r.CrossValidated = append(r.CrossValidated, cv)
	}
	return r, nil
}

// sample is one archive entry: its features, whether it holds a needed
// fact, and how much it weighs in the regression.
type sample struct {
	x        evidence.Vector
	positive bool
	weight   float64
}

// setSamples returns the archive entries of every conversation of s, with
// their features and labels, weighed so that each conversation of the set
// weighs the same, its positive entries one half and its negative ones the
// other: the view ranks a conversation's entries against each other.
func setSamples(s *FitSet) ([]sample, error) {
	var out []sample
	convs := 0
	for fi := range s.Fixtures {
		for ci := range s.Fixtures[fi].convs {
			c := &s.Fixtures[fi].convs[ci]
			k := evidence.NewestRequest(c.messages)
			if k <= 0 {
				continue
			}
			var facts []string
			for _, f := range c.required {
				facts = append(facts, f.Text)
			}
			for _, p := range c.probes {
				facts = append(facts, p.Facts...)
			}
			// A correction is needed (the view must show it beside or in
			// place of what it corrects); what it corrects is not.
			var old []string
			for _, sc := range c.superseded {
				facts, old = append(facts, sc.By), append(old, sc.Text)
			}
			var carry evidence.Carry
			items, vs := evidence.ExtractFeatures(c.messages[:k], 0, &carry, nil)
			first, pos := len(out), 0
			for i := range items {
				e := items[i].Excerpt
				x := sample{x: vs[i], positive: holdsFact(e, facts) && !holdsFact(e, old)}
				if x.positive {
					pos++
				}
				out = append(out, x)
			}
			neg := len(out) - first - pos
			if pos == 0 || neg == 0 {
				out = out[:first]
				continue
			}
			convs++
			for i := first; i < len(out); i++ {
				if out[i].positive {
					out[i].weight = 0.5 / float64(pos)
				} else {
					out[i].weight = 0.5 / float64(neg)
				}
			}
		}
	}
	if convs == 0 {
		return nil, fmt.Errorf("set %s: no entry holds a needed fact", s.Name)
	}
	for i := range out {
		out[i].weight /= float64(convs)
	}
	return out, nil
}

// holdsFact reports whether an entry's excerpt holds one of facts, or is a
// part of one (a fact that spans two sentences).
func holdsFact(excerpt string, facts []string) bool {
	for _, f := range facts {
		if strings.Contains(excerpt, f) || len(excerpt) >= minFactBytes && strings.Contains(f, excerpt) {
			return true
		}
	}
	return false
}

// regress fits the features' weights by a ridge logistic regression over
// the samples of the sets use, by Newton's method from start.
func regress(samples [][]sample, use []int, start *[evidence.NumFeatures]float64) ([evidence.NumFeatures]float64, error) {
	const n = int(evidence.NumFeatures)
	w := *start
	for range fitIterations {
		var g [n]float64
		var h [n][n]float64
		nz := make([]int, 0, n)
		for _, si := range use {
			for k := range samples[si] {
				s := &samples[si][k]
				p := 1 / (1 + math.Exp(-s.x.Dot(&w)))
				y := 0.0
				if s.positive {
					y = 1
				}
				d, c := s.weight*(p-y), s.weight*p*(1-p)
				nz = nz[:0]
				for i := range n {
					if s.x[i] != 0 {
						nz = append(nz, i)
					}
				}
				for _, i := range nz {
					g[i] += d * s.x[i]
					ci := c * s.x[i]
					for _, j := range nz {
						h[i][j] += ci * s.x[j]
					}
				}
			}
		}
		for i := range n {
			g[i] += fitL2 * w[i]
			h[i][i] += fitL2
		}
		step, err := solve(h, g)
		if err != nil {
			return w, err
		}
		size := 0.0
		for i := range n {
			w[i] -= step[i]
			size = max(size, math.Abs(step[i]))
		}
		if size < 1e-7 {
			break
		}
	}
	return w, nil
}

// solve solves h·x = g by Gaussian elimination with partial pivoting.
func solve(h [evidence.NumFeatures][evidence.NumFeatures]float64, g [evidence.NumFeatures]float64) ([evidence.NumFeatures]float64, error) {
	const n = int(evidence.NumFeatures)
	for col := range n {
		pivot := col
		for r := col + 1; r < n; r++ {
			if math.Abs(h[r][col]) > math.Abs(h[pivot][col]) {
				pivot = r
			}
		}
		if math.Abs(h[pivot][col]) < 1e-15 {
			return g, errors.New("the regression's system is singular")
		}
		h[col], h[pivot] = h[pivot], h[col]
		g[col], g[pivot] = g[pivot], g[col]
		for r := col + 1; r < n; r++ {
			f := h[r][col] / h[col][col]
			for c := col; c < n; c++ {
				h[r][c] -= f * h[col][c]
			}
			g[r] -= f * g[col]
		}
	}
	var x [evidence.NumFeatures]float64
	for r := n - 1; r >= 0; r-- {
		s := g[r]
		for c := r + 1; c < n; c++ {
			s -= h[r][c] * x[c]
		}
		x[r] = s / h[r][r]
	}
	return x, nil
}

// viewCase is one request whose view a fit scores: its candidates and
// query, and the facts its view should hold (a probe's facts, or, for the
// last request, the required facts).
type viewCase struct {
	c        *evidence.Candidates
	q        *evidence.Query
	asks     bool
	facts    []string
	required bool // facts are required facts (retention), not a probe's
}

// setCases folds every conversation of s with the weights w, and returns the
// view cases of its probes and of its last request.
func setCases(s *FitSet, w *evidence.Weights) ([]viewCase, error) {
	cfg := &evidence.Config{Weights: w}
	var out []viewCase
	for fi := range s.Fixtures {
		f := &s.Fixtures[fi]
		for ci := range f.convs {
			c := &f.convs[ci]
			at := make(map[int][]string)
			var order []int
			for _, p := range c.probes {
				if _, ok := at[p.index]; !ok {
					order = append(order, p.index)
				}
				at[p.index] = append(at[p.index], p.Facts...)
			}
			last := evidence.NewestRequest(c.messages)
			if len(c.required) > 0 && last > 0 {
				if _, ok := at[last]; !ok {
					order = append(order, last)
				}
			}
			slices.Sort(order)
			st := evidence.NewState()
			for _, i := range order {
				next, outcome, err := evidence.Fold(st, c.messages[:i+1], cfg)
				if err != nil {
					return nil, fmt.Errorf("fixture %s: %s: fold at message %d: %w", f.Name, c.key, i, err)
				}
				if outcome != checkpoint.Applied && outcome != checkpoint.NothingToSummarise {
					return nil, fmt.Errorf("fixture %s: %s: fold at message %d: %s", f.Name, c.key, i, outcome)
				}
				st = next
				cands, q := st.Candidates(evidence.RequestText(&c.messages[i]))
				asks := q.Asks()
				if facts := at[i]; len(facts) > 0 {
					out = append(out, viewCase{c: cands, q: q, asks: asks, facts: facts})
				}
				if i == last && len(c.required) > 0 {
					var facts []string
					for _, r := range c.required {
						facts = append(facts, r.Text)
					}
					out = append(out, viewCase{c: cands, q: q, asks: asks, facts: facts, required: true})
				}
			}
		}
	}
	return out, nil
}

// hits returns how many of the case's facts the view chosen with w holds.
func (vc *viewCase) hits(w *evidence.Weights) int {
	v := evidence.SelectViewWith(vc.c, vc.q, evidence.DefaultMaxTokens, w)
	n := 0
	for _, fact := range vc.facts {
		if viewHolds(&v, fact) {
			n++
		}
	}
	return n
}

func viewHolds(v *evidence.View, fact string) bool {
	for _, s := range v.Shown {
		if strings.Contains(s.Excerpt, fact) {
			return true
		}
	}
	return false
}

// figures adds up the cases' hits into a set's figures.
func figures(name string, cases []viewCase, hits []int) SetFigures {
	f := SetFigures{Set: name}
	for i, vc := range cases {
		if vc.required {
			f.Required += len(vc.facts)
			f.Retained += hits[i]
		} else {
			f.ProbeFacts += len(vc.facts)
			f.ProbeHits += hits[i]
		}
	}
	f.ProbeRecall = ratio(f.ProbeHits, f.ProbeFacts)
	f.Retention = ratio(f.Retained, f.Required)
	return f
}

func ratio(n, d int) float64 {
	if d == 0 {
		return 1
	}
	return float64(n) / float64(d)
}

// objective is what stage 2 maximises: the mean over sets of their probe
// recall and, where a set has required facts, its retention.
func objective(fs []SetFigures) float64 {
	s := 0.0
	for _, f := range fs {
		if f.Required > 0 {
			s += (f.ProbeRecall + f.Retention) / 2
		} else {
			s += f.ProbeRecall
		}
	}
	return s / float64(max(len(fs), 1))
}

// searchBalance sets w's balances to those of the grid that score best on
// the cases of the sets use, one part at a time, twice over.
func searchBalance(w *evidence.Weights, cases [][]viewCase, use []int) {
	hits := make([][]int, len(cases))
	for _, i := range use {
		hits[i] = make([]int, len(cases[i]))
		allHits(cases[i], w, hits[i], func(*viewCase) bool { return true })
	}
	score := func(h [][]int) float64 {
		var fs []SetFigures
		for _, i := range use {
			fs = append(fs, figures("", cases[i], h[i]))
		}
		return objective(fs)
	}
	best := score(hits)
	for range 2 {
		for _, asks := range []bool{true, false} {
			bal := &w.Statement
			if asks {
				bal = &w.Question
			}
			for _, part := range balanceGrid {
				if part.name == "answer" && !asks || part.name == "answer_score" && !asks {
					continue
				}
				field := part.field(bal)
				for _, v := range part.values {
					old := *field
					if v == old {
						continue
					}
					*field = v
					try := make([][]int, len(cases))
					for _, i := range use {
						try[i] = slices.Clone(hits[i])
						allHits(cases[i], w, try[i], func(vc *viewCase) bool { return vc.asks == asks })
					}
					if s := score(try); s > best+1e-9 {
						best, hits = s, try
					} else {
						*field = old
					}
				}
			}
		}
	}
}

// scoreSet returns the figures of set s with the weights w.
func scoreSet(s *FitSet, w *evidence.Weights) (SetFigures, error) {
	cases, err := setCases(s, w)
	if err != nil {
		return SetFigures{}, err
	}
	hits := make([]int, len(cases))
	allHits(cases, w, hits, func(*viewCase) bool { return true })
	return figures(s.Name, cases, hits), nil
}

// WriteTable writes the report: each set's probe recall and retention
// before, fitted on every set, and cross-validated, then the weights.
func (r *FitReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "set\tprobe recall before\tfitted on all\tcross-validated\tretention before\tfitted on all\tcross-validated\t\n")
	cell := func(n, d int) string {
		if d == 0 {
			return ""
		}
		return fmt.Sprintf("%.1f%% (%d/%d)", 100*ratio(n, d), n, d)
	}
	for i, name := range r.Sets {
		b, f, c := r.Before[i], r.Fitted[i], r.CrossValidated[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, cell(b.ProbeHits, b.ProbeFacts), cell(f.ProbeHits, f.ProbeFacts), cell(c.ProbeHits, c.ProbeFacts),
			cell(b.Retained, b.Required), cell(f.Retained, f.Required), cell(c.Retained, c.Required))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nentries %d, of which hold a needed fact %d\n\nfeature weights:\n", r.Entries, r.Positives)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, name := range evidence.FeatureNames() {
		fmt.Fprintf(tw, "  %s\t%+.3f\n", name, r.Weights.Features[i])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "question balance:  %+v\nstatement balance: %+v\n", r.Weights.Question, r.Weights.Statement)
	return err
}

// allHits sets hits[k] to the hits of cases[k] with w for the cases that
// pick, on every processor (each case's view is its own).
func allHits(cases []viewCase, w *evidence.Weights, hits []int, pick func(*viewCase) bool) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for k := range next {
				hits[k] = cases[k].hits(w)
			}
		})
	}
	for k := range cases {
		if pick(&cases[k]) {
			next <- k
		}
	}
	close(next)
	wg.Wait()
}
