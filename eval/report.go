package eval

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/recallhq/recall/evidence"
)

// WriteTable writes the report for people: one row per fixture and a total,
// then the leaks, problems and lost facts. With verbose every fact is
// listed.
func (r *Report) WriteTable(w io.Writer, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fixture\tconvs\tmsgs\tsteps\tretained\tretention\tprobes\tclassified\tin bucket\tleaks\tover budget\tinvalid\tevidence tok\thistory tok\tratio\tfold µs/msg\t")
	row := func(name string, s *Score) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d/%d\t%.1f%%\t%d/%d\t%d/%d\t%d/%d\t%d\t%d\t%d\t%d\t%d\t%.1fx\t%.1f\t\n",
			name, s.Conversations, s.Messages, s.Steps, s.Retained, s.Required, 100*s.Retention, s.ProbeHits, s.ProbeFacts,
			s.Classified, s.Bucketed, s.InBucket, s.Bucketed, s.Leakage, s.BudgetViolations, s.InvalidMessages,
			s.EvidenceTokens, s.HistoryTokens, s.Compression, s.NanosPerMessage/1e3)
	}
	for i := range r.Fixtures {
		row(r.Fixtures[i].Name, &r.Fixtures[i].Score)
	}
	row("TOTAL", &r.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for i := range r.Fixtures {
		f := &r.Fixtures[i]
		for _, l := range f.Leaks {
			fmt.Fprintf(&b, "LEAK %s/%s step %d in %s: %q", f.Name, l.Conversation, l.Step, l.Where, clip(l.Text))
			if l.Why != "" {
				fmt.Fprintf(&b, " (%s)", l.Why)
			}
			b.WriteByte('\n')
		}
		for _, p := range f.Problems {
			fmt.Fprintf(&b, "PROBLEM %s: %s\n", f.Name, p)
		}
	}
	for i := range r.Fixtures {
		f := &r.Fixtures[i]
		for _, fact := range f.Facts {
			if fact.Retained && !verbose {
				continue
			}
			state := "lost"
			switch {
			case fact.Retained:
				state = "kept in " + fact.Bucket
			case !fact.EverPresent:
				state = "never in evidence"
			default:
				state = fmt.Sprintf("lost from %s after step %d", fact.FirstBucket, fact.LostAtStep)
			}
			fmt.Fprintf(&b, "%-5s %s/%s: %q: %s", "fact", f.Name, fact.Conversation, clip(fact.Text), state)
			if fact.WantBucket != "" && fact.WantBucket != fact.Bucket {
				fmt.Fprintf(&b, " (belongs in %s)", fact.WantBucket)
			}
			b.WriteByte('\n')
		}
	}
	for i := range r.Fixtures {
		f := &r.Fixtures[i]
		for _, sc := range f.Stale {
			fmt.Fprintf(&b, "%-5s %s: %q shown without %q, which corrects it\n", "stale", f.Name, clip(sc.Text), clip(sc.By))
		}
		for _, sc := range f.Corrected {
			fmt.Fprintf(&b, "%-5s %s: %q still shown, corrected by %q\n", "old", f.Name, clip(sc.Text), clip(sc.By))
		}
	}
	for i := range r.Fixtures {
		f := &r.Fixtures[i]
		for _, p := range f.Probes {
			if len(p.Missing) == 0 && !verbose {
				continue
			}
			fmt.Fprintf(&b, "%-5s %s/%s: at message %d, %q: ", "probe", f.Name, p.Conversation, p.Index, clip(p.Request))
			if len(p.Missing) == 0 {
				fmt.Fprintf(&b, "all %d facts shown\n", p.Facts)
				continue
			}
			for j, m := range p.Missing {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%q", clip(m))
			}
			fmt.Fprintf(&b, " not shown (%d of %d)\n", len(p.Missing), p.Facts)
		}
	}
	if b.Len() > 0 {
		if _, err := io.WriteString(w, "\n"+b.String()); err != nil {
			return err
		}
	}
	return nil
}

// clauseCell writes the retention of the required facts said as one
// clause of a longer sentence beside that of the others ("" where a set has
// none of the first).
func clauseCell(s *Score) string {
	if s.ClauseRequired == 0 {
		return ""
	}
	alone := s.Required - s.ClauseRequired
	return fmt.Sprintf("%.1f%% (%d/%d) / %.1f%% (%d/%d)", 100*ratio(s.ClauseRetained, s.ClauseRequired), s.ClauseRetained, s.ClauseRequired,
		100*ratio(s.Retained-s.ClauseRetained, alone), s.Retained-s.ClauseRetained, alone)
}

// clip shortens s for a table line.
func clip(s string) string {
	const n = 60
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// WriteTable writes the comparison for people: the headline figures of
// every profile on the held-out set, then on the development set, then the
// per-fixture report of profile detail for each set.
func (c *Comparison) WriteTable(w io.Writer, detail evidence.Profile, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "profile\tset\tfixtures\tretention\tlong retention\tclause / alone\tprobe recall\tcontext probe recall\tsuperseded kept\tstale only\texcerpt share\tchatter\tleakage\tmax tokens\tover budget\tinvalid\tinconsistent\t")
	row := func(p evidence.Profile, set string, s *Summary) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t%s\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t%.1f%%\t%.1f%% (%d/%d)\t%d\t%d\t%d\t%d\t%d\t\n",
			p, set, s.Fixtures, 100*s.Retention, s.Score.Retained, s.Score.Required,
			100*s.LongRetention, s.Score.LongRetained, s.Score.LongRequired, clauseCell(&s.Score),
			100*s.ProbeRecall, s.Score.ProbeHits, s.Score.ProbeFacts,
			100*s.ContextProbeRecall, s.Score.ContextProbeHits, s.Score.ProbeFacts,
			100*s.Score.SupersededKept, s.Score.SupersededShown, s.Score.Superseded,
			100*s.Score.StaleOnly, s.Score.StaleShown, s.Score.Superseded, 100*s.Score.ExcerptShare,
			100*s.ChatterShare, s.Score.ChatterServed, s.Score.Served, s.Leakage, s.MaxEstimatedTokens, s.OverBudget, s.Invalid, s.Inconsistent)
	}
	for _, p := range Profiles {
		if ps := c.Profiles[p]; ps != nil {
			row(p, c.Set, &ps.Summary)
		}
	}
	baseline := func(set string, s *Summary) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t%s\t%.1f%% (%d/%d)\t\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t\t\t\t\t\t\t\n",
			BaselineName, set, s.Fixtures, 100*s.Retention, s.Score.Retained, s.Score.Required,
			100*s.LongRetention, s.Score.LongRetained, s.Score.LongRequired, clauseCell(&s.Score),
			100*s.ProbeRecall, s.Score.ProbeHits, s.Score.ProbeFacts,
			100*s.Score.SupersededKept, s.Score.SupersededShown, s.Score.Superseded,
			100*s.Score.StaleOnly, s.Score.StaleShown, s.Score.Superseded)
	}
	if c.Baseline != nil {
		baseline(c.Set, &c.Baseline.Summary)
	}
	for _, p := range Profiles {
		if ps := c.Profiles[p]; ps != nil && ps.Development != nil {
			row(p, "development", ps.Development)
		}
	}
	if c.Baseline != nil && c.Baseline.Development != nil {
		baseline("development", c.Baseline.Development)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := c.writeKinds(w); err != nil {
		return err
	}
	ps := c.Profiles[detail]
	if ps == nil {
		return nil
	}
	if c.Set == "held-out" {
		fmt.Fprintf(w, "\n%s, held-out set (never used for tuning):\n\n", detail)
	} else {
		fmt.Fprintf(w, "\n%s:\n\n", detail)
	}
	if err := ps.Report.WriteTable(w, verbose); err != nil {
		return err
	}
	if ps.Development != nil {
		fmt.Fprintf(w, "\n%s, development set:\n\n", detail)
		return ps.Development.Report.WriteTable(w, verbose)
	}
	return nil
}

// writeKinds writes, for a set whose probes name their kind of request,
// probe recall by kind for the focus profile and the baseline side by
// side: the facts found, and the probes whose every fact was found.
func (c *Comparison) writeKinds(w io.Writer) error {
	focus := c.Profiles[evidence.ProfileFocus]
	if focus == nil || c.Baseline == nil {
		return nil
	}
	sets := []struct {
		name    string
		got, bm *Summary
	}{{c.Set, &focus.Summary, &c.Baseline.Summary}}
	if focus.Development != nil && c.Baseline.Development != nil {
		sets = append(sets, struct {
			name    string
			got, bm *Summary
		}{"development", focus.Development, c.Baseline.Development})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, set := range sets {
		kinds := slices.Sorted(maps.Keys(set.got.Score.Kinds))
		for _, kind := range kinds {
			if !header {
				fmt.Fprintln(w)
				fmt.Fprintln(tw, "set\tkind\tprobes\tfocus probe recall\tfocus complete\tbm25 probe recall\tbm25 complete\t")
				header = true
			}
			g, b := set.got.Score.Kinds[kind], set.bm.Score.Kinds[kind]
			if b == nil {
				b = &KindScore{}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t\n", set.name, kind, g.Probes,
				100*g.Recall, g.Hits, g.Facts, percent(g.Complete, g.Probes), g.Complete, g.Probes,
				100*b.Recall, b.Hits, b.Facts, percent(b.Complete, b.Probes), b.Complete, b.Probes)
		}
	}
	return tw.Flush()
}

func percent(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return 100 * float64(n) / float64(d)
}
