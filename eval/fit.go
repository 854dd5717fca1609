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

// Fitting the scorer. The view's table is fitted on development data in
// three stages, each reproducible (no randomness, sets and fixtures in
// order), from one fold of each conversation that records what its
// extractions read (evidence.FoldTrace):
//
//  0. The corrections' weights: a logistic regression of whether a newer
//     statement of the user gives what an older entry says a new value (a
//     fixture's superseded pair) on the pair's features, over every pair
//     the extractions read (evidence.Pair), each set weighing the same, its
//     pairs that are corrections half of it.
//  1. The features' weights: a logistic regression of whether an archive
//     entry holds a fact the fixture says a later request needs (a required
//     fact, a probe's fact, a correction's words) on the entry's features
//     (evidence.Vector), each conversation weighing the same within its set
//     and each set the same, its positive and negative entries half each.
//  2. The balance of the view for each kind of request (a question, an
//     instruction) and the corrections' thresholds: each searched one value
//     at a time over a grid, for the objective, scored on the views chosen
//     for the fixtures' requests, folded with the weights of stages 0 and 1.
//  1b. Then each feature's weight is moved, one at a time, for the
//     objective itself: the views of the same requests chosen again with
//     their candidates fixed, each candidate's chance recomputed from its
//     features. The fixtures are folded again with the weights found, and
//     stage 2 runs again on them.
//
// The objective is the mean over sets of their probe recall (and
// retention, where a set has required facts), less stalePenalty for each
// corrected fact shown without its correction and keptPenalty for each
// shown at all, as shares of the set's corrected facts.
//
// Cross-validation scores each conversation with a table fitted without
// it (stages 0 and 1; stage 1b's search is measured apart, see
// eval/README.md), two ways: leaving one set out at a time (does the table carry to a
// kind of data it has not seen?) and, within each set, k folds of its
// conversations (what a user can expect on a new conversation of a kind
// the table has seen). Stages 0 and 1 are fitted again without the left-out
// conversations, and move the features' weights as the full fit's stage
// 1b moved them; their views are chosen anew from the candidates the full
// fit's folds read, each candidate's chance recomputed from its features
// with the table fitted without them (the candidates, the corrections'
// links and the balances stay the full fit's). The report gives beside
// them the full fit's figures scored the same way (candidates fixed), so
// that the difference is the table's alone.

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
	// Superseded counts the corrected facts of the set's last requests,
	// Kept those still shown and Stale those shown without the words that
	// correct them.
	Superseded int `json:"superseded"`
	Kept       int `json:"kept"`
	Stale      int `json:"stale"`
}

// FitReport is what Fit found.
type FitReport struct {
	// Weights is the table fitted on every set.
	Weights *evidence.Weights `json:"-"`
	// Sets names the sets, in order.
	Sets []string `json:"sets"`
	// Folds is k of the k-fold cross-validation within each set.
	Folds int `json:"folds"`
	// Entries and Positives count the archive entries stage 1 was fitted on
	// and those that hold a needed fact; Pairs and Corrections the pairs
	// stage 0 was fitted on and those that are corrections.
	Entries     int `json:"entries"`
	Positives   int `json:"positives"`
	Pairs       int `json:"pairs"`
	Corrections int `json:"corrections"`
	// Before are each set's figures with the table the fit started from
	// (the one recall scored with), Fitted with the table fitted on every
	// set. Fixed are the fitted table's figures with the candidates held
	// fixed, as the cross-validations score them; KFold each set's with its
	// conversations scored by tables fitted without them, SetOut with the
	// table fitted on every other set.
	Before []SetFigures `json:"before"`
	Fitted []SetFigures `json:"fitted"`
	Fixed  []SetFigures `json:"fixed"`
	KFold  []SetFigures `json:"k_fold"`
	SetOut []SetFigures `json:"set_out"`
}

// The fit's settings, set by hand.
const (
	// fitL2 is the ridge of the regressions: it keeps a weight finite where
	// a feature never fires in the data, and is small against the sets'
	// total weight of one each.
	fitL2 = 0.01
	// fitIterations bounds Newton's method, which converges in a few.
	fitIterations = 50
	// minFactBytes: an entry shorter than this that a fact's text holds
	// is not counted as holding the fact (a word or two of it).
	minFactBytes = 16
	// DefaultFolds is k of the k-fold cross-validation within each set.
	DefaultFolds = 5
	// stalePenalty and keptPenalty weigh, in the objective, the share of a
	// set's corrected facts shown without their correction (which the
	// contract forbids) and shown at all.
	stalePenalty = 0.5
	keptPenalty  = 0.05
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

// thresholdGrid is the values stage 2 tries for the corrections'
// thresholds (a pair's chance; Sure never below Maybe).
var thresholdGrid = []struct {
	name   string
	values []float64
	field  func(c *evidence.CorrectionWeights) *float64
}{
	{"maybe", []float64{0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 1}, func(c *evidence.CorrectionWeights) *float64 { return &c.Maybe }},
	{"sure", []float64{0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 1}, func(c *evidence.CorrectionWeights) *float64 { return &c.Sure }},
}

// conv is one conversation of a fit: what its traced fold read, and its
// view cases.
type conv struct {
	set, fold int
	samples   []sample
	pairs     []pairSample
	// updates holds, for each sample with pairs, the indexes of its pairs
	// (its FeatUpdate is their best chance).
	updates map[int][]int
	// vectors are the samples' features by entry (index, span start).
	vectors map[[2]int]int
	cases   []viewCase
}

// sample is one archive entry: its features, and whether it holds a
// needed fact.
type sample struct {
	x        evidence.Vector
	positive bool
}

// pairSample is one pair an extraction read: its features, and whether it
// is a fixture's correction.
type pairSample struct {
	x        evidence.PairVector
	positive bool
}

// Fit fits the view's table on sets, starting from start (nil: the table
// recall scores with), and cross-validates it leaving one set out at a
// time and in folds k-fold within each set (0: DefaultFolds). Every set
// must have probes and at least folds conversations.
func Fit(sets []FitSet, start *evidence.Weights, folds int) (*FitReport, error) {
	if len(sets) == 0 {
		return nil, errors.New("no sets to fit on")
	}
	if folds <= 0 {
		folds = DefaultFolds
	}
	if start == nil {
		start = evidence.FittedWeights()
	}
	r := &FitReport{Folds: folds}
	var convs []*conv
	for i := range sets {
		s := &sets[i]
		if len(s.Fixtures) == 0 {
			return nil, fmt.Errorf("set %s: %w", s.Name, ErrNoFixtures)
		}
		probes, n := 0, 0
		for _, f := range s.Fixtures {
			for _, c := range f.convs {
				probes += len(c.probes)
				n++
			}
		}
		if probes == 0 {
			return nil, fmt.Errorf("set %s: no probes: a set is fitted and scored on what its probes need", s.Name)
		}
		if n < folds {
			return nil, fmt.Errorf("set %s: %d conversations, fewer than the %d folds asked for: each fold must hold one", s.Name, n, folds)
		}
		r.Sets = append(r.Sets, s.Name)
	}
	// The traced folds: the pairs and entries of every conversation.
	for i := range sets {
		cs, err := traceSet(&sets[i], i, start, folds)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(cs, func(c *conv) bool { return hasPositive(c.samples) }) {
			return nil, fmt.Errorf("set %s: no entry holds a needed fact", sets[i].Name)
		}
		convs = append(convs, cs...)
	}
	for _, c := range convs {
		for _, x := range c.samples {
			r.Entries++
			if x.positive {
				r.Positives++
			}
		}
		for _, p := range c.pairs {
			r.Pairs++
			if p.positive {
				r.Corrections++
			}
		}
	}
	all := func(*conv) bool { return true }
	// Stages 0 and 1 on every conversation, then stage 2 on views folded
	// with them.
	w, err := fitTable(convs, all, start)
	if err != nil {
		return nil, err
	}
	for i := range sets {
		if err := setCases(&sets[i], convsOf(convs, i), w); err != nil {
			return nil, err
		}
	}
	searchBalance(w, convs, len(sets))
	// Stage 1b moves the features' weights for the objective itself, on
	// the views of those cases; then the folds and stage 2 again.
	logistic := w.Features
	searchFeatures(w, convs, len(sets))
	for i := range sets {
		if err := setCases(&sets[i], convsOf(convs, i), w); err != nil {
			return nil, err
		}
	}
	searchBalance(w, convs, len(sets))
	r.Weights = w
	for i := range sets {
		before, err := scoreSet(&sets[i], start)
		if err != nil {
			return nil, err
		}
		r.Before = append(r.Before, before)
	}
	r.Fitted = fixedFigures(convs, len(sets), w, nil, sets)
	// Cross-validation, candidates fixed.
	fixed := make(map[*conv]*evidence.Weights)
	for _, c := range convs {
		fixed[c] = w
	}
	r.Fixed = fixedFigures(convs, len(sets), w, fixed, sets)
	kfold := make(map[*conv]*evidence.Weights)
	for i := range sets {
		for f := range folds {
			out := func(c *conv) bool { return !(c.set == i && c.fold == f) }
			wf, err := fitTable(convs, out, w)
			if err != nil {
				return nil, err
			}
			copyView(wf, w, &logistic)
			for _, c := range convs {
				if !out(c) {
					kfold[c] = wf
				}
			}
		}
	}
	r.KFold = fixedFigures(convs, len(sets), w, kfold, sets)
	setOut := make(map[*conv]*evidence.Weights)
	for i := range sets {
		if len(sets) == 1 {
			for _, c := range convs {
				setOut[c] = w // one set: nothing to leave out
			}
			break
		}
		out := func(c *conv) bool { return c.set != i }
		wo, err := fitTable(convs, out, w)
		if err != nil {
			return nil, err
		}
		copyView(wo, w, &logistic)
		for _, c := range convs {
			if !out(c) {
				setOut[c] = wo
			}
		}
	}
	r.SetOut = fixedFigures(convs, len(sets), w, setOut, sets)
	return r, nil
}

// convsOf returns the conversations of set i, in order.
func convsOf(convs []*conv, i int) []*conv {
	var out []*conv
	for _, c := range convs {
		if c.set == i {
			out = append(out, c)
		}
	}
	return out
}

// featureSteps are the moves stage 1b tries for each feature's weight.
var featureSteps = []float64{-1, -0.5, 0.5, 1}

// searchFeatures moves each feature's weight of w, one at a time, by the
// step of featureSteps that raises the objective most on the views of the
// cases of convs, their candidates fixed and each candidate's chance
// recomputed from its features, twice over.
func searchFeatures(w *evidence.Weights, convs []*conv, nsets int) {
	cur := *w
	for _, c := range convs {
		for i := range c.cases {
			c.cases[i].c.SetChance(func(it *evidence.Item) float64 {
				k, ok := c.vectors[[2]int{it.Index, it.Span[0]}]
				if !ok {
					return float64(it.Weight) / evidence.MaxWeight
				}
				x := c.update(k, &cur)
				return 1 / (1 + math.Exp(-x.Dot(&cur.Features)))
			})
		}
	}
	cases, sets := allCases(convs)
	score := func() float64 {
		h := make([]caseHits, len(cases))
		allHits(cases, &cur, h, func(*viewCase) bool { return true })
		return objective(setFigures(cases, sets, h, nsets, nil))
	}
	best := score()
	for range 2 {
		for f := range evidence.NumFeatures {
			for _, d := range featureSteps {
				old := cur.Features[f]
				cur.Features[f] = old + d
				if s := score(); s > best+1e-9 {
					best = s
				} else {
					cur.Features[f] = old
				}
			}
		}
	}
	for _, c := range convs {
		for i := range c.cases {
			c.cases[i].c.SetChance(nil)
		}
	}
	w.Features = cur.Features
}

// copyView gives w the balances and thresholds of from, and the moves
// stage 1b made from logistic, stage 1's weights, to from's: what a
// cross-validation keeps of the full fit.
func copyView(w, from *evidence.Weights, logistic *[evidence.NumFeatures]float64) {
	w.Question, w.Statement = from.Question, from.Statement
	w.Corrections.Maybe, w.Corrections.Sure = from.Corrections.Maybe, from.Corrections.Sure
	for i := range w.Features {
		w.Features[i] += from.Features[i] - logistic[i]
	}
}

func hasPositive(samples []sample) bool {
	return slices.ContainsFunc(samples, func(x sample) bool { return x.positive })
}

// traceSet folds every conversation of s once, with the table start, and
// returns what each fold read: the pairs, labelled by the fixture's
// corrections, and the entries, labelled by the facts its requests need,
// the conversations numbered into folds in order.
func traceSet(s *FitSet, set int, start *evidence.Weights, folds int) ([]*conv, error) {
	var out []*conv
	n := 0
	for fi := range s.Fixtures {
		for ci := range s.Fixtures[fi].convs {
			c := &s.Fixtures[fi].convs[ci]
			cv := &conv{set: set, fold: n % folds, updates: make(map[int][]int), vectors: make(map[[2]int]int)}
			n++
			out = append(out, cv)
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
			newer := make(map[[2]int][]int) // the pairs of each newer entry
			err := evidence.FoldTrace(c.messages[:k+1], &evidence.Config{Weights: start},
				func(p evidence.Pair) {
					positive := false
					for _, sc := range c.superseded {
						if holdsFact(p.Older.Excerpt, []string{sc.Text}) && holdsFact(p.Newer.Excerpt, []string{sc.By}) {
							positive = true
						}
					}
					key := [2]int{p.Newer.Index, p.Newer.Span[0]}
					newer[key] = append(newer[key], len(cv.pairs))
					cv.pairs = append(cv.pairs, pairSample{x: p.X, positive: positive})
				},
				func(it evidence.Item, v evidence.Vector) {
					key := [2]int{it.Index, it.Span[0]}
					cv.vectors[key] = len(cv.samples)
					if ps := newer[key]; len(ps) > 0 {
						cv.updates[len(cv.samples)] = ps
					}
					e := it.Excerpt
					cv.samples = append(cv.samples, sample{x: v, positive: holdsFact(e, facts) && !holdsFact(e, old)})
				})
			if err != nil {
				return nil, fmt.Errorf("fixture %s: %s: %w", s.Fixtures[fi].Name, c.key, err)
			}
		}
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

// fitTable fits stages 0 and 1 on the conversations use picks, from start,
// and returns the table with start's balances and thresholds.
func fitTable(convs []*conv, use func(*conv) bool, start *evidence.Weights) (*evidence.Weights, error) {
	w := *start
	// Stage 0: each set with corrections weighs the same, its corrections
	// half of it. A pair's chance is then not the share of such pairs that
	// are corrections (they are few among many), but it orders the pairs,
	// and the thresholds are fitted on it.
	var xs [][]float64
	var ys []bool
	var ws []float64
	for _, cs := range bySet(convs, use) {
		pos, neg := 0, 0
		for _, c := range cs {
			for _, p := range c.pairs {
				if p.positive {
					pos++
				} else {
					neg++
				}
			}
		}
		if pos == 0 || neg == 0 {
			continue
		}
		for _, c := range cs {
			for _, p := range c.pairs {
				wt := 0.5 / float64(neg)
				if p.positive {
					wt = 0.5 / float64(pos)
				}
				xs, ys, ws = append(xs, p.x[:]), append(ys, p.positive), append(ws, wt)
			}
		}
	}
	if len(xs) > 0 {
		pw, err := regress(xs, ys, ws, start.Corrections.Features[:])
		if err != nil {
			return nil, fmt.Errorf("corrections: %w", err)
		}
		copy(w.Corrections.Features[:], pw)
	}
	// Stage 1, with each entry's update chance by the weights of stage 0.
	xs, ys, ws = nil, nil, nil
	for _, cs := range bySet(convs, use) {
		var kept []*conv
		for _, c := range cs {
			if pos := countPositive(c.samples); pos > 0 && pos < len(c.samples) {
				kept = append(kept, c)
			}
		}
		for _, c := range kept {
			pos := countPositive(c.samples)
			neg := len(c.samples) - pos
			for i, s := range c.samples {
				x := c.update(i, &w)
				wt := 0.5 / float64(neg)
				if s.positive {
					wt = 0.5 / float64(pos)
				}
				xs, ys, ws = append(xs, x[:]), append(ys, s.positive), append(ws, wt/float64(len(kept)))
			}
		}
	}
	if len(xs) == 0 {
		return nil, errors.New("no entry holds a needed fact")
	}
	fw, err := regress(xs, ys, ws, start.Features[:])
	if err != nil {
		return nil, err
	}
	copy(w.Features[:], fw)
	return &w, nil
}

// update returns sample i's features with its update chance by w's
// corrections.
func (c *conv) update(i int, w *evidence.Weights) evidence.Vector {
	x := c.samples[i].x
	best := 0.0
	for _, p := range c.updates[i] {
		best = max(best, 1/(1+math.Exp(-c.pairs[p].x.Dot(&w.Corrections.Features))))
	}
	x[evidence.FeatUpdate] = best
	return x
}

func countPositive(samples []sample) int {
	n := 0
	for _, s := range samples {
		if s.positive {
			n++
		}
	}
	return n
}

// bySet groups the conversations use picks by set, in order.
func bySet(convs []*conv, use func(*conv) bool) [][]*conv {
	var out [][]*conv
	for _, c := range convs {
		if !use(c) {
			continue
		}
		for len(out) <= c.set {
			out = append(out, nil)
		}
		out[c.set] = append(out[c.set], c)
	}
	return out
}

// regress fits weights by a ridge logistic regression of ys on xs, each
// sample weighing ws, by Newton's method from start.
func regress(xs [][]float64, ys []bool, ws []float64, start []float64) ([]float64, error) {
	n := len(start)
	w := slices.Clone(start)
	g := make([]float64, n)
	h := make([][]float64, n)
	for i := range h {
		h[i] = make([]float64, n)
	}
	nz := make([]int, 0, n)
	for range fitIterations {
		clear(g)
		for i := range h {
			clear(h[i])
		}
		for k, x := range xs {
			s := 0.0
			for i, v := range x {
				s += v * w[i]
			}
			p := 1 / (1 + math.Exp(-s))
			y := 0.0
			if ys[k] {
				y = 1
			}
			d, c := ws[k]*(p-y), ws[k]*p*(1-p)
			nz = nz[:0]
			for i, v := range x {
				if v != 0 {
					nz = append(nz, i)
				}
			}
			for _, i := range nz {
				g[i] += d * x[i]
				ci := c * x[i]
				for _, j := range nz {
					h[i][j] += ci * x[j]
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

// solve solves h·x = g by Gaussian elimination with partial pivoting; it
// changes h and g.
func solve(h [][]float64, g []float64) ([]float64, error) {
	n := len(g)
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
	x := make([]float64, n)
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
// last request, the required facts and the corrected ones).
type viewCase struct {
	c          *evidence.Candidates
	q          *evidence.Query
	asks       bool
	facts      []string
	required   bool // facts are required facts (retention), not a probe's
	superseded []Correction
}

// caseHits is what one case's view holds.
type caseHits struct {
	hits, kept, stale int
}

// setCases folds every conversation of s with the weights w, and sets the
// view cases of its probes and of its last request on cs, s's
// conversations in order.
func setCases(s *FitSet, cs []*conv, w *evidence.Weights) error {
	cfg := &evidence.Config{Weights: w}
	n := 0
	for fi := range s.Fixtures {
		f := &s.Fixtures[fi]
		for ci := range f.convs {
			c := &f.convs[ci]
			cv := cs[n]
			n++
			cv.cases = nil
			at := make(map[int][]string)
			var order []int
			for _, p := range c.probes {
				if _, ok := at[p.index]; !ok {
					order = append(order, p.index)
				}
				at[p.index] = append(at[p.index], p.Facts...)
			}
			last := evidence.NewestRequest(c.messages)
			if (len(c.required) > 0 || len(c.superseded) > 0) && last > 0 {
				if _, ok := at[last]; !ok {
					order = append(order, last)
				}
			}
			slices.Sort(order)
			st := evidence.NewState()
			for _, i := range order {
				next, outcome, err := evidence.Fold(st, c.messages[:i+1], cfg)
				if err != nil {
					return fmt.Errorf("fixture %s: %s: fold at message %d: %w", f.Name, c.key, i, err)
				}
				if outcome != checkpoint.Applied && outcome != checkpoint.NothingToSummarise {
					return fmt.Errorf("fixture %s: %s: fold at message %d: %s", f.Name, c.key, i, outcome)
				}
				st = next
				cands, q := st.Candidates(evidence.RequestText(&c.messages[i]))
				asks := q.Asks()
				if facts := at[i]; len(facts) > 0 {
					cv.cases = append(cv.cases, viewCase{c: cands, q: q, asks: asks, facts: facts})
				}
				if i == last && (len(c.required) > 0 || len(c.superseded) > 0) {
					var facts []string
					for _, r := range c.required {
						facts = append(facts, r.Text)
					}
					cv.cases = append(cv.cases, viewCase{c: cands, q: q, asks: asks, facts: facts, required: true, superseded: c.superseded})
				}
			}
		}
	}
	return nil
}

// hits returns what the view chosen for the case with w holds.
func (vc *viewCase) hits(w *evidence.Weights) caseHits {
	v := evidence.SelectViewWith(vc.c, vc.q, evidence.DefaultMaxTokens, w)
	var h caseHits
	for _, fact := range vc.facts {
		if viewHolds(&v, fact) {
			h.hits++
		}
	}
	for _, sc := range vc.superseded {
		if viewHolds(&v, sc.Text) {
			h.kept++
			if !viewHolds(&v, sc.By) {
				h.stale++
			}
		}
	}
	return h
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
func figures(name string, cases []*viewCase, hits []caseHits) SetFigures {
	f := SetFigures{Set: name}
	for i, vc := range cases {
		if vc.required {
			f.Required += len(vc.facts)
			f.Retained += hits[i].hits
			f.Superseded += len(vc.superseded)
			f.Kept += hits[i].kept
			f.Stale += hits[i].stale
		} else {
			f.ProbeFacts += len(vc.facts)
			f.ProbeHits += hits[i].hits
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
// recall and, where a set has required facts, its retention, less the
// penalties for the corrected facts shown.
func objective(fs []SetFigures) float64 {
	s := 0.0
	for _, f := range fs {
		if f.Required > 0 {
			s += (f.ProbeRecall + f.Retention) / 2
		} else {
			s += f.ProbeRecall
		}
		if f.Superseded > 0 {
			s -= (stalePenalty*float64(f.Stale) + keptPenalty*float64(f.Kept)) / float64(f.Superseded)
		}
	}
	return s / float64(max(len(fs), 1))
}

// allCases returns the cases of convs, and each case's set.
func allCases(convs []*conv) ([]*viewCase, []int) {
	var cases []*viewCase
	var sets []int
	for _, c := range convs {
		for i := range c.cases {
			cases = append(cases, &c.cases[i])
			sets = append(sets, c.set)
		}
	}
	return cases, sets
}

// searchBalance sets w's balances and thresholds to those of the grids
// that score best on the cases of convs, one part at a time, twice over.
func searchBalance(w *evidence.Weights, convs []*conv, nsets int) {
	cases, sets := allCases(convs)
	hits := make([]caseHits, len(cases))
	allHits(cases, w, hits, func(*viewCase) bool { return true })
	score := func(h []caseHits) float64 {
		return objective(setFigures(cases, sets, h, nsets, nil))
	}
	best := score(hits)
	try := func(field *float64, v float64, pick func(*viewCase) bool) {
		old := *field
		if v == old {
			return
		}
		*field = v
		h := slices.Clone(hits)
		allHits(cases, w, h, pick)
		if s := score(h); s > best+1e-9 {
			best, hits = s, h
		} else {
			*field = old
		}
	}
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
				for _, v := range part.values {
					try(part.field(bal), v, func(vc *viewCase) bool { return vc.asks == asks })
				}
			}
		}
		for _, part := range thresholdGrid {
			for _, v := range part.values {
				c := &w.Corrections
				if part.name == "maybe" && v > c.Sure || part.name == "sure" && v < c.Maybe {
					continue
				}
				try(part.field(c), v, func(*viewCase) bool { return true })
			}
		}
	}
}

// setFigures adds up the hits of cases into each set's figures (named by
// sets when not nil).
func setFigures(cases []*viewCase, sets []int, hits []caseHits, nsets int, named []FitSet) []SetFigures {
	out := make([]SetFigures, nsets)
	for i := range nsets {
		var cs []*viewCase
		var hs []caseHits
		for k, vc := range cases {
			if sets[k] == i {
				cs, hs = append(cs, vc), append(hs, hits[k])
			}
		}
		name := ""
		if named != nil {
			name = named[i].Name
		}
		out[i] = figures(name, cs, hs)
	}
	return out
}

// fixedFigures returns each set's figures on the full fit's cases, each
// conversation's views chosen with the table tables gives it (its chance
// recomputed from the features of each candidate) and w's balances and
// thresholds; with tables nil, as the fold chose them with w.
func fixedFigures(convs []*conv, nsets int, w *evidence.Weights, tables map[*conv]*evidence.Weights, sets []FitSet) []SetFigures {
	cases, setOf := allCases(convs)
	hits := make([]caseHits, len(cases))
	if tables == nil {
		allHits(cases, w, hits, func(*viewCase) bool { return true })
		return setFigures(cases, setOf, hits, nsets, sets)
	}
	k := 0
	for _, c := range convs {
		t := tables[c]
		chance := func(it *evidence.Item) float64 {
			i, ok := c.vectors[[2]int{it.Index, it.Span[0]}]
			if !ok {
				return float64(it.Weight) / evidence.MaxWeight
			}
			x := c.update(i, t)
			return 1 / (1 + math.Exp(-x.Dot(&t.Features)))
		}
		for i := range c.cases {
			vc := &c.cases[i]
			vc.c.SetChance(chance)
			hits[k] = vc.hits(w)
			vc.c.SetChance(nil)
			k++
		}
	}
	return setFigures(cases, setOf, hits, nsets, sets)
}

// scoreSet returns the figures of set s with the table w, folded anew.
func scoreSet(s *FitSet, w *evidence.Weights) (SetFigures, error) {
	cs := make([]*conv, 0)
	for _, f := range s.Fixtures {
		for range f.convs {
			cs = append(cs, &conv{})
		}
	}
	if err := setCases(s, cs, w); err != nil {
		return SetFigures{}, err
	}
	cases, sets := allCases(cs)
	hits := make([]caseHits, len(cases))
	allHits(cases, w, hits, func(*viewCase) bool { return true })
	f := setFigures(cases, sets, hits, 1, nil)[0]
	f.Set = s.Name
	return f, nil
}

// WriteTable writes the report: each set's probe recall and retention
// before, fitted on every set, and cross-validated both ways, the
// corrected facts shown, then the weights.
func (r *FitReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "set\tfigure\tbefore\tfitted on all\tcandidates fixed\t%d-fold by conversation\tset left out\t\n", r.Folds)
	cell := func(n, d int) string {
		if d == 0 {
			return ""
		}
		return fmt.Sprintf("%.1f%% (%d/%d)", 100*ratio(n, d), n, d)
	}
	stale := func(f SetFigures) string {
		if f.Superseded == 0 {
			return ""
		}
		return fmt.Sprintf("%d / %d of %d", f.Kept, f.Stale, f.Superseded)
	}
	for i, name := range r.Sets {
		figs := []SetFigures{r.Before[i], r.Fitted[i], r.Fixed[i], r.KFold[i], r.SetOut[i]}
		row := func(label string, f func(SetFigures) string) {
			fmt.Fprintf(tw, "%s\t%s", name, label)
			for _, x := range figs {
				fmt.Fprintf(tw, "\t%s", f(x))
			}
			fmt.Fprint(tw, "\t\n")
		}
		row("probe recall", func(f SetFigures) string { return cell(f.ProbeHits, f.ProbeFacts) })
		if r.Fitted[i].Required > 0 {
			row("retention", func(f SetFigures) string { return cell(f.Retained, f.Required) })
		}
		if r.Fitted[i].Superseded > 0 {
			row("corrected: kept / stale", stale)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nentries %d, of which hold a needed fact %d; pairs %d, of which corrections %d\n\nfeature weights:\n",
		r.Entries, r.Positives, r.Pairs, r.Corrections)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, name := range evidence.FeatureNames() {
		fmt.Fprintf(tw, "  %s\t%+.3f\n", name, r.Weights.Features[i])
	}
	fmt.Fprintf(tw, "\ncorrection weights:\n")
	for i, name := range evidence.PairFeatureNames() {
		fmt.Fprintf(tw, "  %s\t%+.3f\n", name, r.Weights.Corrections.Features[i])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "question balance:  %+v\nstatement balance: %+v\ncorrections: maybe %g, sure %g\n",
		r.Weights.Question, r.Weights.Statement, r.Weights.Corrections.Maybe, r.Weights.Corrections.Sure)
	return err
}

// allHits sets hits[k] to the hits of cases[k] with w for the cases that
// pick, on every processor (each case's view is its own).
func allHits(cases []*viewCase, w *evidence.Weights, hits []caseHits, pick func(*viewCase) bool) {
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
		if pick(cases[k]) {
			next <- k
		}
	}
	close(next)
	wg.Wait()
}
