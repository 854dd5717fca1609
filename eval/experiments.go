package eval

import (
	"fmt"
	"strings"

	"github.com/recallhq/recall/evidence"
)

// Experiment is a named change to the fold that the contract does not
// allow, behind a switch of evidence.Config that is off by default. The
// evaluation measures it with the switch on ("recall eval --experiment
// NAME") against the contract's fold.
type Experiment struct {
	Name    string
	Summary string
	enable  func(*evidence.Config)
}

var experiments = []Experiment{
	{
		Name:    "dedupe",
		Summary: "a new entry that restates an older one of its bucket (80% of its words) replaces it",
		enable:  func(c *evidence.Config) { c.ExperimentalDedupe = true },
	},
	{
		Name:    "user-first",
		Summary: "a full bucket, or the token bound, evicts the oldest assistant entry before any user entry",
		enable:  func(c *evidence.Config) { c.ExperimentalUserFirst = true },
	},
	{
		Name:    "protect",
		Summary: "the token bound evicts from recent_context and open_work before decisions and constraints",
		enable:  func(c *evidence.Config) { c.ExperimentalProtect = true },
	},
}

// Experiments lists the experiments, by name.
func Experiments() []Experiment { return append([]Experiment(nil), experiments...) }

// ConfigFor returns the fold configuration with the named experiments on;
// nil (the contract's fold) for none. "all" turns every experiment on.
func ConfigFor(names []string) (*evidence.Config, error) {
	if len(names) == 0 {
		return nil, nil
	}
	cfg := &evidence.Config{}
	for _, name := range names {
		if name == "all" {
			for _, e := range experiments {
				e.enable(cfg)
			}
			continue
		}
		found := false
		for _, e := range experiments {
			if name == e.Name {
				e.enable(cfg)
				found = true
			}
		}
		if !found {
			known := make([]string, len(experiments))
			for i, e := range experiments {
				known[i] = e.Name
			}
			return nil, fmt.Errorf("unknown experiment %q (known: %s, all)", name, strings.Join(known, ", "))
		}
	}
	return cfg, nil
}
