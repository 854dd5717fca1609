package evidence

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Weights is the scorer's table: how much each feature (features.go)
// weighs, and how a view shares its room, by the kind of request. It is
// fitted on data by `recall eval --fit` (package eval) and kept in
// weights.json beside this file; nothing in it is set by hand.
type Weights struct {
	// Features weighs each feature: the log-odds that an entry is one a
	// later request needs is the sum of its features times these.
	Features [NumFeatures]float64
	// Question is the balance of a view for a request that asks something,
	// Statement for one that asks nothing (an instruction, a statement).
	Question, Statement Balance
	// Corrections weighs the pairs of an older entry and a newer statement
	// of the user (correct.go).
	Corrections CorrectionWeights
}

// CorrectionWeights is the table's part for corrections (correct.go).
type CorrectionWeights struct {
	// Features weighs each pair feature: the log-odds that the newer
	// statement gives what the older one says a new value.
	Features [NumPairFeatures]float64
	// Maybe is the chance from which the older entry is never shown without
	// the newer, Sure the one from which the newer is shown in its place.
	Maybe, Sure float64
}

// correctionsFile is the JSON form of CorrectionWeights.
type correctionsFile struct {
	Features map[string]float64 `json:"features"`
	Maybe    float64            `json:"maybe"`
	Sure     float64            `json:"sure"`
}

// Balance is how a view shares its room between the request's relevance and
// the conversation's standing facts.
type Balance struct {
	// Answer is the share of the room that the entries that answer a
	// question (relevance at least AnswerScore) take first.
	Answer float64 `json:"answer"`
	// AnswerScore is the relevance (BM25, rank.go) from which an entry
	// answers a question.
	AnswerScore float64 `json:"answer_score"`
	// Correction is the share of the user's corrections ("make it 33",
	// "cambiamos a…"), which come before the user's other entries: the
	// view cannot tell every correction from what it corrects, and
	// showing the correction keeps the older value from standing alone.
	Correction float64 `json:"correction"`
	// User is the share of the user's entries, heaviest first; Relevant
	// that of the other entries relevant to the request; Assistant that of
	// the assistant's rules, decisions and proposals; Recent that of the
	// newest entries. What the shares leave goes to the classes in that
	// order.
	User      float64 `json:"user"`
	Relevant  float64 `json:"relevant"`
	Assistant float64 `json:"assistant"`
	Recent    float64 `json:"recent"`
	// Frame is the bytes an entry costs beside its excerpt when the view
	// weighs an entry's chance of mattering for the room it takes.
	Frame float64 `json:"frame"`
}

// balanceOf returns the balance of a view for q.
func (w *Weights) balanceOf(q *Query) *Balance {
	if q.asks {
		return &w.Question
	}
	return &w.Statement
}

// validate checks b's shares and frame.
func (b *Balance) validate(name string) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"answer", b.Answer}, {"correction", b.Correction}, {"user", b.User}, {"relevant", b.Relevant}, {"assistant", b.Assistant}, {"recent", b.Recent}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("%s.%s is %g: a share is between 0 and 1", name, f.name, f.v)
		}
	}
	if !(b.AnswerScore >= 0) || math.IsInf(b.AnswerScore, 0) {
		return fmt.Errorf("%s.answer_score is %g: it is a relevance score, 0 or more", name, b.AnswerScore)
	}
	if !(b.Frame > 0) || math.IsInf(b.Frame, 0) {
		return fmt.Errorf("%s.frame is %g: it is a number of bytes, more than 0", name, b.Frame)
	}
	return nil
}

// readTable reads the weight of each of names from table into w, in order,
// refusing a name table lacks, one it names that names lacks, and a weight
// that is not a number; prefix names the table's part in an error.
func readTable(names []string, table map[string]float64, w []float64, prefix string) error {
	var missing, unknown []string
	for i, name := range names {
		v, ok := table[name]
		if !ok {
			missing = append(missing, prefix+name)
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s%s weighs %g", ErrWeights, prefix, name, v)
		}
		w[i] = v
	}
	for name := range table {
		if !slices.Contains(names, name) {
			unknown = append(unknown, prefix+name)
		}
	}
	slices.Sort(unknown)
	switch {
	case len(missing) > 0:
		return fmt.Errorf("%w: no weight for %s (refit with recall eval --fit)", ErrWeights, strings.Join(missing, ", "))
	case len(unknown) > 0:
		return fmt.Errorf("%w: %s named but not defined (refit with recall eval --fit)", ErrWeights, strings.Join(unknown, ", "))
	}
	return nil
}

// weightsFile is the JSON form of Weights.
type weightsFile struct {
	// Features maps each feature's name to its weight.
	Features map[string]float64 `json:"features"`
	// Question and Statement are the balances.
	Question    Balance         `json:"question"`
	Statement   Balance         `json:"statement"`
	Corrections correctionsFile `json:"corrections"`
	// Fit says how the table was fitted (eval.FitReport's summary); it is
	// kept with the table and never read by the scorer.
	Fit json.RawMessage `json:"fit,omitempty"`
}

// ErrWeights is returned for a weight table that does not match the
// features the code defines.
var ErrWeights = errors.New("weight table does not match the features")

// ParseWeights reads a weight table in the form MarshalWeights writes. A
// table that lacks a feature, names one the code does not define, or holds
// a weight that is not a number is refused: a feature never weighs a silent
// zero.
func ParseWeights(data []byte) (*Weights, error) {
	var f weightsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("weight table: %w", err)
	}
	w := &Weights{Question: f.Question, Statement: f.Statement}
	if err := readTable(featureNames[:], f.Features, w.Features[:], ""); err != nil {
		return nil, err
	}
	if err := readTable(pairNames[:], f.Corrections.Features, w.Corrections.Features[:], "corrections."); err != nil {
		return nil, err
	}
	w.Corrections.Maybe, w.Corrections.Sure = f.Corrections.Maybe, f.Corrections.Sure
	if !(w.Corrections.Maybe > 0 && w.Corrections.Maybe <= w.Corrections.Sure && w.Corrections.Sure <= 1) {
		return nil, fmt.Errorf("weight table: corrections.maybe %g and sure %g: chances with 0 < maybe <= sure <= 1", w.Corrections.Maybe, w.Corrections.Sure)
	}
	if err := w.Question.validate("question"); err != nil {
		return nil, fmt.Errorf("weight table: %w", err)
	}
	if err := w.Statement.validate("statement"); err != nil {
		return nil, fmt.Errorf("weight table: %w", err)
	}
	return w, nil
}

// MarshalWeights writes w as a weight table, with fit (any JSON, or nil)
// kept beside it as how it was fitted.
func MarshalWeights(w *Weights, fit any) ([]byte, error) {
	f := weightsFile{Features: make(map[string]float64, NumFeatures), Question: w.Question, Statement: w.Statement,
		Corrections: correctionsFile{Features: make(map[string]float64, NumPairFeatures), Maybe: w.Corrections.Maybe, Sure: w.Corrections.Sure}}
	for i, name := range featureNames {
		f.Features[name] = w.Features[i]
	}
	for i, name := range pairNames {
		f.Corrections.Features[name] = w.Corrections.Features[i]
	}
	if fit != nil {
		b, err := json.Marshal(fit)
		if err != nil {
			return nil, err
		}
		f.Fit = b
	}
	b, err := json.MarshalIndent(&f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

//go:embed weights.json
var weightsJSON []byte

// fitted is the table recall scores with: weights.json, read when the
// package is loaded. A table that does not match the features stops every
// program and test that loads the package.
var fitted = func() *Weights {
	w, err := ParseWeights(weightsJSON)
	if err != nil {
		panic("evidence/weights.json: " + err.Error())
	}
	return w
}()

// FittedWeights returns a copy of the table recall scores with.
func FittedWeights() *Weights {
	w := *fitted
	return &w
}

// weightsOr returns w, or the fitted table when w is nil.
func weightsOr(w *Weights) *Weights {
	if w == nil {
		return fitted
	}
	return w
}

// logit and sigmoid turn a chance into log-odds and back.
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func logit(p float64) float64 {
	p = min(max(p, 1e-4), 1-1e-4)
	return math.Log(p / (1 - p))
}

// weightOfChance returns an entry's Weight for chance p: p in ten
// thousandths.
func weightOfChance(p float64) int { return int(math.Round(p * MaxWeight)) }

// chanceOf returns the chance an entry's weight w stands for.
func chanceOf(w int) float64 { return float64(w) / MaxWeight }
