package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/recallhq/recall/eval"
	"github.com/recallhq/recall/evidence"
)

func init() {
	register("eval", "measure evidence quality on fixture conversations (retention, leakage, budget)", runEval)
}

// runEval is "recall eval [flags] [DIR]": it replays the fixtures turn by
// turn through the fold of each profile and prints the scores side by side:
// the held-out set's first, then the development set's (with DIR, the
// fixtures of DIR as one set). It fails when anything leaks, a message
// breaks its bound or shape, or a figure of the chosen profile on the first
// set is below its --min-… flag.
func runEval(ctx context.Context, env *Env, args []string) error {
	flags := newFlags(env, "eval", "[DIR]")
	var model modelSettings
	model.bind(flags, env, true)
	asJSON := flags.Bool("json", false, `print the comparison as JSON: {"profiles": {"focus": {…}, "seed": {…}}}`)
	verbose := flags.Bool("v", false, "list every required fact and probe, not only the lost ones")
	profileName := flags.String("profile", "", "the profile whose per-fixture report is printed and whose figures the --min flags check: focus (default) or seed")
	minRetention := flags.Float64("min-retention", 0, "fail when retention (0..1) is below this")
	minLong := flags.Float64("min-long-retention", 0, "fail when retention over long conversations (0..1) is below this")
	minProbe := flags.Float64("min-probe-recall", 0, "fail when probe recall (0..1) is below this")
	fit := flags.Bool("fit", false, "fit the view's weights on the fixture directories named (each one set), cross-validate them leaving one set out at a time, and print the figures")
	out := flags.String("out", "", "with --fit: write the fitted weight table to this file (evidence/weights.json is the one recall scores with)")
	folds := flags.Int("folds", eval.DefaultFolds, "with --fit: cross-validate each set in this many folds of its conversations")
	positional, err := parseArgs(flags, args)
	if err != nil {
		return err
	}
	if *fit {
		return runFit(env, positional, *out, *folds, *asJSON)
	}
	if *out != "" {
		return fmt.Errorf("--out is for --fit")
	}
	var dir string
	switch len(positional) {
	case 0:
	case 1:
		dir = positional[0]
	default:
		fmt.Fprintf(env.Stderr, "recall eval: at most one DIR, got %d arguments\n", len(positional))
		flags.Usage()
		return errUsage
	}
	for name, v := range map[string]float64{"--min-retention": *minRetention, "--min-long-retention": *minLong, "--min-probe-recall": *minProbe} {
		if v < 0 || v > 1 {
			return fmt.Errorf("%s must be between 0 and 1, not %g", name, v)
		}
	}
	profile, err := evidence.ParseProfile(*profileName)
	if err != nil {
		return err
	}
	mins := evalMins{retention: *minRetention, long: *minLong, probe: *minProbe}
	if model.Extractor == extractorModel {
		return runModelEval(ctx, env, &model, dir, *asJSON, mins)
	}
	if err := model.validate(profile); err != nil {
		return err
	}
	var heldOut, dev []eval.Fixture
	if dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s is not a directory of fixtures", dir)
		}
		if heldOut, err = eval.Load(os.DirFS(dir)); err != nil {
			return err
		}
	} else {
		if heldOut, err = eval.Load(eval.HeldOutFixtures()); err != nil {
			return err
		}
		if dev, err = eval.Load(eval.DevFixtures()); err != nil {
			return err
		}
	}
	c, err := eval.Compare(heldOut, dev)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return err
		}
	} else if err := c.WriteTable(env.Stdout, profile, *verbose); err != nil {
		return err
	}
	var failures []string
	for _, p := range eval.Profiles {
		for _, s := range []*eval.Summary{&c.Profiles[p].Summary, c.Profiles[p].Development} {
			if s == nil {
				continue
			}
			if s.Leakage > 0 {
				failures = append(failures, fmt.Sprintf("%s: leakage %d: forbidden strings found in the evidence", p, s.Leakage))
			}
			if s.OverBudget > 0 || s.Invalid > 0 {
				failures = append(failures, fmt.Sprintf("%s: %d messages over budget, %d invalid", p, s.OverBudget, s.Invalid))
			}
			if s.Inconsistent > 0 {
				failures = append(failures, fmt.Sprintf("%s: %d conversations whose turn-by-turn state differs from a whole fold", p, s.Inconsistent))
			}
		}
	}
	failures = append(failures, mins.check(string(profile), &c.Profiles[profile].Summary)...)
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

// evalMins are the --min-… flags.
type evalMins struct{ retention, long, probe float64 }

// check returns what of s is below m, for the run named name.
func (m evalMins) check(name string, s *eval.Summary) []string {
	var failures []string
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"retention", s.Retention, m.retention}, {"long retention", s.LongRetention, m.long}, {"probe recall", s.ProbeRecall, m.probe}} {
		if f.got < f.want {
			failures = append(failures, fmt.Sprintf("%s: %s %.3f is below %.3f", name, f.name, f.got, f.want))
		}
	}
	return failures
}

// runFit is "recall eval --fit [--out FILE] DIR…": each DIR a set of
// fixtures.
func runFit(env *Env, dirs []string, out string, folds int, asJSON bool) error {
	if len(dirs) == 0 {
		return errors.New("recall eval --fit: name the directories of fixtures to fit on (each one set)")
	}
	if folds < 2 {
		return fmt.Errorf("recall eval --fit: --folds is %d: a cross-validation needs at least 2 folds", folds)
	}
	var sets []eval.FitSet
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s is not a directory of fixtures", dir)
		}
		fixtures, err := eval.Load(os.DirFS(dir))
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		sets = append(sets, eval.FitSet{Name: filepath.Base(filepath.Clean(dir)), Fixtures: fixtures})
	}
	r, err := eval.Fit(sets, nil, folds)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := r.WriteTable(env.Stdout); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	b, err := evidence.MarshalWeights(r.Weights, r)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
