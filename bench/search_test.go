package bench

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// TestChatter checks the search scenario's synthetic history: the same seed
// writes the same messages, every sentence becomes an entry of its own (no
// restatement collapses two), and German and Japanese sentences are among
// them.
func TestChatter(t *testing.T) {
	write := func() []json.RawMessage {
		c := newChatter(7)
		msgs := make([]json.RawMessage, 200)
		for i := range msgs {
			msgs[i] = c.message(3, 7)
		}
		return msgs
	}
	a, b := write(), write()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("the same seed wrote different histories (-first +second):\n%s", diff)
	}
	var decoded []checkpoint.Message
	for i, raw := range a {
		m, err := checkpoint.DecodeMessage(raw)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		decoded = append(decoded, m)
	}
	items := evidence.ExtractItems(decoded, 0, nil, nil)
	if kept := len(evidence.LatestByKey(items)); kept != len(items) || len(items) < 3*len(a) {
		t.Errorf("%d messages gave %d entries, %d after restatements, want at least %d and none collapsed", len(a), len(items), kept, 3*len(a))
	}
	var german, japanese int
	for _, it := range items {
		german += strings.Count(it.Excerpt, " für Vorgang ")
		japanese += strings.Count(it.Excerpt, "チケット")
	}
	if german == 0 || japanese == 0 {
		t.Errorf("%d German and %d Japanese entries, want some of each", german, japanese)
	}
}

// TestChatterQueries checks that queries have one to eight words and that
// names find exactly the sentence they were made for.
func TestChatterQueries(t *testing.T) {
	c := newChatter(7)
	var texts []string
	for range 100 {
		var m struct{ Content string }
		if err := json.Unmarshal(c.message(3, 7), &m); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, m.Content)
	}
	for i, q := range c.queries(100) {
		words, asked := strings.CutPrefix(q, "What did we say about ")
		if asked != (i%2 == 1) {
			t.Errorf("query %d %q: put as a question %v, want every other one", i, q, asked)
		}
		words = strings.TrimSuffix(words, "?")
		if n := len(strings.Fields(words)); n < 1 || n > 8 {
			t.Errorf("query %q asks for %d words, want 1 to 8", q, n)
		}
	}
	all := strings.Join(texts, " ")
	for _, n := range []int{1, 3, 40, c.seq} {
		if got := len(regexp.MustCompile(`\b`+c.name(n)+`\b`).FindAllString(all, -1)); got != 1 {
			t.Errorf("name %q of sentence %d stands in %d sentences, want 1", c.name(n), n, got)
		}
	}
}

func TestPlanGist(t *testing.T) {
	plan := []string{
		"Append (actual time=0.031..1.020 rows=448 loops=1)",
		"  ->  Limit (actual time=0.030..0.061 rows=32 loops=1)",
		"        ->  Index Scan using recall_archive_tier on recall_archive (actual time=0.029..0.057 rows=32 loops=1)",
		"              Index Cond: ((user_id = $1) AND (conversation_id = $2) AND (tier = 0))",
		"  ->  Limit (actual time=0.024..0.655 rows=256 loops=1)",
		"        ->  Index Scan Backward using recall_archive_pkey on recall_archive recall_archive_6 (actual time=0.024..0.633 rows=256 loops=1)",
		"              Filter: (term_hashes && $3)",
		"              Rows Removed by Filter: 46",
		"              ->  Bitmap Index Scan on recall_archive_terms (never executed)",
		"Planning Time: 0.973 ms",
		"Execution Time: 1.066 ms",
	}
	want := []string{
		"Index Scan using recall_archive_tier on recall_archive → 32 rows",
		"Index Scan Backward using recall_archive_pkey on recall_archive recall_archive_6 → 256 rows",
		"  Rows Removed by Filter: 46",
		"Bitmap Index Scan on recall_archive_terms → never executed",
		"Planning Time: 0.973 ms",
		"Execution Time: 1.066 ms",
	}
	if diff := cmp.Diff(want, planGist(plan)); diff != "" {
		t.Errorf("planGist (-want +got):\n%s", diff)
	}
	if got := planGist(nil); !slices.Equal(got, nil) {
		t.Errorf("planGist(nil) = %q, want nothing", got)
	}
}
