package metrics_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/recallhq/recall/internal/metrics"
)

// dashboardFile is recall's Grafana dashboard.
var dashboardFile = filepath.Join("..", "..", "deploy", "grafana", "recall-dashboard.json")

// dashboardPanel is what the tests read of a Grafana panel; a row holds
// its panels in Panels when it is collapsed.
type dashboardPanel struct {
	Title      string            `json:"title"`
	Type       string            `json:"type"`
	Datasource *dashboardSource  `json:"datasource"`
	Targets    []dashboardTarget `json:"targets"`
	Panels     []dashboardPanel  `json:"panels"`
}

type dashboardTarget struct {
	RefID      string           `json:"refId"`
	Expr       string           `json:"expr"`
	Datasource *dashboardSource `json:"datasource"`
}

type dashboardSource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboard struct {
	SchemaVersion int              `json:"schemaVersion"`
	Panels        []dashboardPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// labelValuesQuery is a Grafana Prometheus variable query
// label_values(selector, label).
var labelValuesQuery = regexp.MustCompile(`^\s*label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// TestDashboardUsesExportedMetrics: every series a query of the Grafana
// dashboard selects is one recall's /metrics exports, with only labels it
// carries, so that no panel stays empty for a renamed or never exported
// metric; and every panel queries the ${datasource} variable.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("parse %s: %v", dashboardFile, err)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want a current one (36 or later)", d.SchemaVersion)
	}
	exported := exportedSeries(t, metrics.New())

	hasDatasource := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && string(v.Query) == `"prometheus"` {
			hasDatasource = true
		}
		if v.Type != "query" {
			continue
		}
		m := labelValuesQuery.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, v.Definition)
			continue
		}
		what := fmt.Sprintf("variable %s", v.Name)
		checkExported(t, exported, what, m[1])
		if sels, err := selectors(m[1]); err == nil && len(sels) == 1 {
			if l := m[2]; !exported[sels[0].name][l] && !targetLabels[l] {
				t.Errorf("%s lists label %q of %s, which it does not carry", what, l, sels[0].name)
			}
		}
	}
	if !hasDatasource {
		t.Error(`no Prometheus datasource variable named "datasource"`)
	}

	exprs := 0
	var walk func([]dashboardPanel)
	walk = func(panels []dashboardPanel) {
		for _, p := range panels {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no queries", p.Title)
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q does not query the ${datasource} variable", p.Title)
			}
			for _, tg := range p.Targets {
				what := fmt.Sprintf("panel %q query %s", p.Title, tg.RefID)
				if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
					t.Errorf("%s does not query the ${datasource} variable", what)
				}
				if tg.Expr == "" {
					t.Errorf("%s has no expr", what)
					continue
				}
				exprs++
				checkExported(t, exported, what, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	if exprs == 0 {
		t.Errorf("%s has no queries", dashboardFile)
	}
}
