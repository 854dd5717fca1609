package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/recallhq/recall/eval"
	"github.com/recallhq/recall/evidence"
)

func init() {
	register("eval", "measure evidence quality on fixture conversations (retention, leakage, budget)", runEval)
}

// runEval is "recall eval [flags] [DIR]": it replays the fixtures of DIR
// (default: the fixtures built into recall) turn by turn through the fold
// and prints the scores. It fails when anything leaks, a message breaks its
// bound or shape, or retention is below --min-retention.
func runEval(_ context.Context, env *Env, args []string) error {
	flags := newFlags(env, "eval", "[DIR]")
	asJSON := flags.Bool("json", false, "print the report as JSON")
	verbose := flags.Bool("v", false, "list every required fact, not only the lost ones")
	minRetention := flags.Float64("min-retention", 0, "fail when total retention (0..1) is below this")
	profileName := flags.String("profile", "", "the evidence profile to measure: focus (default) or seed")
	positional, err := parseArgs(flags, args)
	if err != nil {
		return err
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
	if *minRetention < 0 || *minRetention > 1 {
		return fmt.Errorf("--min-retention must be between 0 and 1, not %g", *minRetention)
	}
	profile, err := evidence.ParseProfile(*profileName)
	if err != nil {
		return err
	}
	cfg := &evidence.Config{Profile: profile}
	sets := []fs.FS{eval.HeldOutFixtures(), eval.DevFixtures()}
	if dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s is not a directory of fixtures", dir)
		}
		sets = []fs.FS{os.DirFS(dir)}
	}
	var list []eval.Fixture
	for _, set := range sets {
		l, err := eval.Load(set)
		if err != nil {
			return err
		}
		list = append(list, l...)
	}
	report, err := eval.Run(list, eval.Options{Config: cfg})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else if err := report.WriteTable(env.Stdout, *verbose); err != nil {
		return err
	}
	t := &report.Total
	var failures []string
	if t.Leakage > 0 {
		failures = append(failures, fmt.Sprintf("leakage %d: forbidden strings found in the evidence", t.Leakage))
	}
	if t.BudgetViolations > 0 || t.InvalidMessages > 0 {
		failures = append(failures, fmt.Sprintf("%d messages over budget, %d invalid", t.BudgetViolations, t.InvalidMessages))
	}
	if t.Inconsistent > 0 {
		failures = append(failures, fmt.Sprintf("%d conversations whose turn-by-turn state differs from a whole fold", t.Inconsistent))
	}
	if t.Retention < *minRetention {
		failures = append(failures, fmt.Sprintf("retention %.3f is below --min-retention %.3f", t.Retention, *minRetention))
	}
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

// listFlag collects repeated, comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
