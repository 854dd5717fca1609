package metrics_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/recallhq/recall/internal/metrics"
)

// rulesDir holds recall's Prometheus alert rules and their promtool tests.
var rulesDir = filepath.Join("..", "..", "deploy", "prometheus")

const (
	rulesFile     = "recall-rules.yml"
	rulesTestFile = "recall-rules.test.yml"
)

// alertRule is what the tests read of one rule of recall-rules.yml.
type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readRules(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rulesDir, rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string      `yaml:"name"`
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("parse %s: %v", rulesFile, err)
	}
	var rules []alertRule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatalf("%s has no rules", rulesFile)
	}
	return rules
}

// TestAlertRulesUseExportedMetrics: every series an alert rule selects is
// one recall's /metrics exports (or Prometheus's own up), with only labels
// it carries, so that no rule watches a name that was renamed or never
// existed and so never fires.
func TestAlertRulesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	exported := exportedSeries(t, metrics.New())
	for _, r := range readRules(t) {
		checkExported(t, exported, r.Alert, r.Expr)
	}
}

// checkExported fails t for each series expr selects that exported (from
// exportedSeries) lacks, or selects by a label it does not carry, and if
// expr selects no series at all. what names expr in the messages.
func checkExported(t *testing.T, exported map[string]map[string]bool, what, expr string) {
	t.Helper()
	sels, err := selectors(expr)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if len(sels) == 0 {
		t.Errorf("%s: its expression selects no series:\n%s", what, expr)
	}
	for _, s := range sels {
		labels, ok := exported[s.name]
		if !ok {
			t.Errorf("%s uses %s, which recall's /metrics does not export", what, s.name)
			continue
		}
		for _, l := range s.labels {
			if !labels[l] && !targetLabels[l] {
				t.Errorf("%s selects %s by label %q, which it does not carry (it has %v)", what, s.name, l, keys(labels))
			}
		}
	}
}

// TestAlertRulesDocumented: every rule has a name, a severity a pager can
// route on, a summary and a runbook, and the promtool tests make it fire
// and also keep it quiet.
func TestAlertRulesDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(rulesDir, rulesTestFile))
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTests []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatalf("parse %s: %v", rulesTestFile, err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, g := range tests.Tests {
		for _, at := range g.AlertRuleTests {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				quiet[at.Alertname] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range readRules(t) {
		switch {
		case r.Alert == "":
			t.Errorf("a rule without an alert name (recording rules belong elsewhere):\n%s", r.Expr)
			continue
		case seen[r.Alert]:
			t.Errorf("%s: two rules of that name", r.Alert)
		}
		seen[r.Alert] = true
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
		}
		for _, a := range []string{"summary", "runbook"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if rb := r.Annotations["runbook"]; !strings.Contains(rb, "Check") || !strings.Contains(rb, "Do") {
			t.Errorf("%s: the runbook says neither what to check nor what to do:\n%s", r.Alert, rb)
		}
		if !fires[r.Alert] || !quiet[r.Alert] {
			t.Errorf("%s: %s tests it firing: %v, and quiet: %v; want both", r.Alert, rulesTestFile, fires[r.Alert], quiet[r.Alert])
		}
	}
}

// TestPromtool checks the rules and runs their unit tests with promtool
// (Debian's prometheus package). Without promtool it is skipped, except in
// CI, where it fails.
func TestPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("promtool is missing, and CI is set: install it (apt-get install prometheus) so that the alert rules are checked: %v", err)
		}
		t.Skipf("promtool is missing (apt-get install prometheus): the alert rules are not checked or tested")
	}
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		cmd := exec.CommandContext(t.Context(), promtool, args...)
		cmd.Dir = rulesDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = map[string]bool{"job": true, "instance": true}

// exportedSeries returns the names of the series m's registry exports, a
// histogram's _bucket, _sum and _count and a summary's _sum and _count
// included, with the labels of each. It lists the collectors of Metrics by
// their descriptions (a vector with no children exports nothing yet), and
// gathers the rest (the Go and process collectors).
func exportedSeries(t *testing.T, m *metrics.Metrics) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{
		// Prometheus's own, per target.
		"up": {},
	}
	add := func(name string, labels []string, histogram, summary bool) {
		set := map[string]bool{}
		for _, l := range labels {
			set[l] = true
		}
		switch {
		case histogram:
			out[name+"_bucket"] = with(set, "le")
			out[name+"_sum"], out[name+"_count"] = set, set
		case summary:
			out[name] = with(set, "quantile")
			out[name+"_sum"], out[name+"_count"] = set, set
		default:
			out[name] = set
		}
	}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		c, ok := v.Field(i).Interface().(prometheus.Collector)
		if !ok || v.Type().Field(i).Name == "Registry" {
			continue
		}
		// By the field's declared type: Histogram and Summary have the
		// same methods.
		var histogram, summary bool
		switch v.Type().Field(i).Type {
		case reflect.TypeFor[prometheus.Histogram](), reflect.TypeFor[*prometheus.HistogramVec]():
			histogram = true
		case reflect.TypeFor[prometheus.Summary](), reflect.TypeFor[*prometheus.SummaryVec]():
			summary = true
		}
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			name, labels, err := parseDesc(d)
			if err != nil {
				t.Fatalf("field %s: %v", v.Type().Field(i).Name, err)
			}
			add(name, labels, histogram, summary)
		}
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		var labels []string
		for _, mt := range f.GetMetric() {
			for _, lp := range mt.GetLabel() {
				labels = append(labels, lp.GetName())
			}
		}
		add(f.GetName(), labels, f.GetType().String() == "HISTOGRAM", f.GetType().String() == "SUMMARY")
	}
	return out
}

// descPattern reads the name and variable labels out of a Desc's String,
// the only way client_golang shows them.
var descPattern = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)

func parseDesc(d *prometheus.Desc) (name string, labels []string, err error) {
	m := descPattern.FindStringSubmatch(d.String())
	if m == nil {
		return "", nil, fmt.Errorf("cannot read %s", d)
	}
	for _, lp := range strings.Split(m[2], ",") {
		if n, _, ok := strings.Cut(lp, "="); ok {
			labels = append(labels, n)
		}
	}
	for _, l := range strings.Split(m[3], ",") {
		if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
			labels = append(labels, l)
		}
	}
	return m[1], labels, nil
}

func with(set map[string]bool, label string) map[string]bool {
	out := map[string]bool{label: true}
	for l := range set {
		out[l] = true
	}
	return out
}

func keys(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// selector is a series selector of a PromQL expression: a metric name and
// the labels it matches on.
type selector struct {
	name   string
	labels []string
}

// promqlWords are PromQL's keywords and the grouping modifiers, whose
// parenthesised lists hold label names, not series.
var (
	promqlWords    = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
	groupModifiers = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// selectors returns the series selectors of expr. It knows enough PromQL
// for alert rules: names, label matchers, range selectors, functions,
// aggregations with by or without, vector matching, strings and numbers.
func selectors(expr string) ([]selector, error) {
	var out []selector
	i := 0
	skipSpace := func() {
		for i < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[i])) {
			i++
		}
	}
	// skipTo moves past the next close that is not in a string.
	skipTo := func(close byte) error {
		for i < len(expr) {
			switch c := expr[i]; {
			case c == close:
				i++
				return nil
			case c == '"' || c == '\'' || c == '`':
				if err := skipString(expr, &i); err != nil {
					return err
				}
			default:
				i++
			}
		}
		return fmt.Errorf("no %q in %q", close, expr)
	}
	for {
		skipSpace()
		if i >= len(expr) {
			return out, nil
		}
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			if err := skipString(expr, &i); err != nil {
				return nil, err
			}
		case c == '[':
			if err := skipTo(']'); err != nil {
				return nil, err
			}
		case c == '{':
			return nil, fmt.Errorf("a selector without a metric name at %d of %q: name the metric", i, expr)
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdentPart(expr[i]) {
				i++
			}
			word := expr[start:i]
			skipSpace()
			switch {
			case groupModifiers[word]:
				if i < len(expr) && expr[i] == '(' {
					i++
					if err := skipTo(')'); err != nil {
						return nil, err
					}
				}
			case promqlWords[word]:
			case i < len(expr) && expr[i] == '(' || followedByGrouping(expr[i:]):
				// A function or an aggregation.
			default:
				s := selector{name: word}
				if i < len(expr) && expr[i] == '{' {
					i++
					labels, err := matcherLabels(expr, &i)
					if err != nil {
						return nil, err
					}
					s.labels = labels
				}
				out = append(out, s)
			}
		default:
			// Numbers, operators, parentheses, commas.
			if c >= '0' && c <= '9' || c == '.' {
				for i < len(expr) && (isIdentPart(expr[i]) || expr[i] == '.') {
					i++
				}
				continue
			}
			i++
		}
	}
}

// followedByGrouping reports whether rest starts with by or without: the
// word before it is an aggregation ("sum by (job) (…)").
func followedByGrouping(rest string) bool {
	for _, w := range []string{"by", "without"} {
		if after, ok := strings.CutPrefix(rest, w); ok && (after == "" || !isIdentPart(after[0])) {
			return true
		}
	}
	return false
}

// matcherLabels reads label matchers up to the closing brace, from just
// after the opening one, and returns their label names.
func matcherLabels(expr string, i *int) ([]string, error) {
	var labels []string
	for {
		for *i < len(expr) && strings.ContainsRune(" \t\r\n,", rune(expr[*i])) {
			*i++
		}
		if *i >= len(expr) {
			return nil, fmt.Errorf("unclosed label matchers in %q", expr)
		}
		if expr[*i] == '}' {
			*i++
			return labels, nil
		}
		start := *i
		for *i < len(expr) && isIdentPart(expr[*i]) {
			*i++
		}
		if start == *i {
			return nil, fmt.Errorf("a label name expected at %d of %q", start, expr)
		}
		labels = append(labels, expr[start:*i])
		for *i < len(expr) && strings.ContainsRune(" \t\r\n=!~", rune(expr[*i])) {
			*i++
		}
		if err := skipString(expr, i); err != nil {
			return nil, err
		}
	}
}

// skipString moves *i past the string literal that starts there.
func skipString(expr string, i *int) error {
	if *i >= len(expr) || !strings.ContainsRune("\"'`", rune(expr[*i])) {
		return fmt.Errorf("a string expected at %d of %q", *i, expr)
	}
	quote := expr[*i]
	for j := *i + 1; j < len(expr); j++ {
		switch expr[j] {
		case '\\':
			if quote != '`' {
				j++
			}
		case quote:
			*i = j + 1
			return nil
		}
	}
	return fmt.Errorf("unclosed string in %q", expr)
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// TestSelectors: the PromQL reading the rules test relies on.
func TestSelectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want []selector
	}{
		{`up{job="recall"} == 0`, []selector{{"up", []string{"job"}}}},
		{`absent(up{job="recall"})`, []selector{{"up", []string{"job"}}}},
		{`histogram_quantile(0.99, sum by (job, le) (rate(a_bucket[5m]))) > 5`, []selector{{"a_bucket", nil}}},
		{`sum(rate(a{route="GET /v1/{user_id}", code!~"5.."}[1m])) without (instance) / on (job) group_left b`,
			[]selector{{"a", []string{"route", "code"}}, {"b", nil}}},
		{`x > 0 unless y offset 5m and bool z`, []selector{{"x", nil}, {"y", nil}, {"z", nil}}},
		{`max without(instance) (bytes) / sum by(job)(rate(by_name[5m]))`, []selector{{"bytes", nil}, {"by_name", nil}}},
		{`a{l='it\'s'} * 1e3 + 0.5`, []selector{{"a", []string{"l"}}}},
	}
	for _, tt := range tests {
		got, err := selectors(tt.expr)
		if err != nil {
			t.Errorf("selectors(%q): %v", tt.expr, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("selectors(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
	if _, err := selectors(`{__name__="a"}`); err == nil {
		t.Error(`selectors({__name__="a"}): no error, want one asking for the metric's name`)
	}
}
