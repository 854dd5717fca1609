package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the report for people: one row per fixture and a total,
// then the leaks, problems and lost facts. With verbose every fact is
// listed.
func (r *Report) WriteTable(w io.Writer, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fixture\tconvs\tmsgs\tsteps\tretained\tretention\tclassified\tin bucket\tleaks\tover budget\tinvalid\tevidence tok\thistory tok\tratio\tfold µs/msg\t")
	row := func(name string, s *Score) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d/%d\t%.1f%%\t%d/%d\t%d/%d\t%d\t%d\t%d\t%d\t%d\t%.1fx\t%.1f\t\n",
			name, s.Conversations, s.Messages, s.Steps, s.Retained, s.Required, 100*s.Retention,
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
	if b.Len() > 0 {
		if _, err := io.WriteString(w, "\n"+b.String()); err != nil {
			return err
		}
	}
	return nil
}

// clip shortens s for a table line.
func clip(s string) string {
	const n = 60
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
