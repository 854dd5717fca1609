package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/recallhq/recall/eval"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/modelnote"
)

// runModelEval is `recall eval --extractor model [DIR]`: the focus profile
// over the held-out fixtures (or DIR's), without and with the notes of the
// model at RECALL_MODEL_URL, asked as the model lane asks it. It makes a
// call for every user turn of every conversation: the cost is the
// model's. It fails on any leak, message over budget or invalid, and on a
// figure of the run with notes below its --min-… flag.
func runModelEval(ctx context.Context, env *Env, m *modelSettings, dir string, asJSON bool, mins evalMins) error {
	if err := m.validate(evidence.ProfileFocus); err != nil {
		return err
	}
	client, err := m.client()
	if err != nil {
		return err
	}
	var fixtures []eval.Fixture
	set := "held-out"
	if dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s is not a directory of fixtures", dir)
		}
		fixtures, err = eval.Load(os.DirFS(dir))
		set = "fixtures"
	} else {
		fixtures, err = eval.Load(eval.HeldOutFixtures())
	}
	if err != nil {
		return err
	}
	focus := &evidence.Config{Profile: evidence.ProfileFocus}
	plain, err := eval.Run(fixtures, eval.Options{Config: focus})
	if err != nil {
		return err
	}
	src := &eval.ModelNotes{Ctx: ctx, Model: client,
		Config: modelnote.Config{ContextTurns: m.ContextTurns, CaptureAssistant: m.CaptureAssistant}}
	fmt.Fprintf(env.Stderr, "recall eval: asking %q at %s for the notes of %d fixtures, one call a turn…\n", m.Name, redact.ConnString(m.URL), len(fixtures))
	withNotes, err := eval.Run(fixtures, eval.Options{Config: focus, Notes: src})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"set": set, "model": m.Name, "focus": plain.Total, "focus_with_notes": withNotes.Total, "calls": src.Stats}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(env.Stdout, "%s set (%d fixtures), the focus profile without and with the notes of %q:\n\n", set, len(fixtures), m.Name)
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "extractor\tretention\tlong retention\tprobe recall\tcontext probe recall\tsuperseded kept\tleakage\tover budget / invalid")
		for _, r := range []struct {
			name string
			t    *eval.Score
		}{{"lexical", &plain.Total}, {"model", &withNotes.Total}} {
			fmt.Fprintf(tw, "%s\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%d/%d\t%d\t%d / %d\n", r.name, 100*r.t.Retention, 100*r.t.LongRetention,
				100*r.t.ProbeRecall, 100*r.t.ContextProbeRecall, r.t.SupersededShown, r.t.Superseded, r.t.Leakage, r.t.BudgetViolations, r.t.InvalidMessages)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		st := src.Stats
		fmt.Fprintf(env.Stdout, "\ncalls %d (failed %d, answers that were not JSON notes %d), notes %d (dropped %d), tokens %d in, %d out\n",
			st.Calls, st.Failed, st.Invalid, st.Notes, st.Dropped, st.TokensIn, st.TokensOut)
	}
	t := &withNotes.Total
	var failures []string
	if t.Leakage > 0 {
		failures = append(failures, fmt.Sprintf("model: leakage %d: forbidden strings found in the evidence", t.Leakage))
	}
	if t.BudgetViolations > 0 || t.InvalidMessages > 0 {
		failures = append(failures, fmt.Sprintf("model: %d messages over budget, %d invalid", t.BudgetViolations, t.InvalidMessages))
	}
	s := eval.Summary{Retention: t.Retention, LongRetention: t.LongRetention, ProbeRecall: t.ProbeRecall}
	failures = append(failures, mins.check("model", &s)...)
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}
