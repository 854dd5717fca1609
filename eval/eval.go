package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// FoldFunc is the signature of evidence.Fold. Options.Fold replaces it in
// tests of the scoring.
type FoldFunc func(s evidence.State, history []checkpoint.Message, cfg *evidence.Config) (evidence.State, checkpoint.Outcome, error)

// maxProblems bounds FixtureReport.Problems.
const maxProblems = 5

// Run evaluates fixtures: it replays each conversation turn by turn, folding
// every prefix that ends in a user message as a growing snapshot, and scores
// the evidence. An error means a fixture could not be replayed (bad
// messages, or a fold that errs or rejects its own lineage).
func Run(fixtures []Fixture, opts Options) (*Report, error) {
	fold := opts.Fold
	if fold == nil {
		fold = evidence.Fold
	}
	maxTokens := opts.MaxTokens
	if maxTokens <= 0 {
		maxTokens = evidence.DefaultMaxTokens
	}
	r := &Report{Fixtures: []FixtureReport{}}
	for i := range fixtures {
		fr, err := runFixture(&fixtures[i], fold, opts.Config, maxTokens, opts.Notes)
		if err != nil {
			return nil, err
		}
		r.Fixtures = append(r.Fixtures, fr)
		r.Total.add(&fr.Score)
	}
	r.Total.finish()
	return r, nil
}

func runFixture(f *Fixture, fold FoldFunc, cfg *evidence.Config, maxTokens int, notes NoteSource) (FixtureReport, error) {
	fr := FixtureReport{Name: f.Name, Facts: []FactResult{}, Probes: []ProbeResult{}, Corrected: []Correction{}, Stale: []Correction{}, Leaks: []Leak{}}
	convs := f.convs
	if convs == nil {
		var err error
		if convs, err = f.conversations(); err != nil {
			return fr, err
		}
	}
	problem := func(format string, args ...any) {
		if len(fr.Problems) < maxProblems {
			fr.Problems = append(fr.Problems, fmt.Sprintf(format, args...))
		}
	}
	for ci := range convs {
		c := &convs[ci]
		fr.Conversations++
		fr.Messages += len(c.messages)
		facts := make([]FactResult, len(c.required))
		for i, r := range c.required {
			facts[i] = FactResult{Conversation: c.key, Text: r.Text, Why: r.Why, WantBucket: r.Bucket, LostAtStep: -1}
			if at := firstEvidential(c.messages, r.Text); at >= 0 {
				facts[i].Clause = ClauseOfLonger(c.messages[at].Text, r.Text)
			}
		}
		leaked := make([]bool, len(c.forbidden))
		probesAt := make(map[int][]probe)
		for _, p := range c.probes {
			probesAt[p.index] = append(probesAt[p.index], p)
		}
		st := evidence.NewState()
		step := 0
		for i := range c.messages {
			if !c.messages[i].IsRequest() {
				continue
			}
			start := time.Now()
			next, outcome, err := fold(st, c.messages[:i+1], cfg)
			fr.FoldNanos += time.Since(start).Nanoseconds()
			if err != nil {
				return fr, fmt.Errorf("fixture %s: %s: fold at message %d: %w", f.Name, c.key, i, err)
			}
			if outcome != checkpoint.Applied && outcome != checkpoint.NothingToSummarise {
				return fr, fmt.Errorf("fixture %s: %s: fold at message %d: %s", f.Name, c.key, i, outcome)
			}
			if notes != nil && next.Cursor > st.Cursor {
				added, err := notes.Notes(c.messages[:i+1], st.Cursor, next.Cursor)
				if err != nil {
					return fr, fmt.Errorf("fixture %s: %s: notes at message %d: %w", f.Name, c.key, i, err)
				}
				next.AddNotes(added, &c.messages[i], cfg)
			}
			fr.FoldedMessages += max(0, next.Cursor-st.Cursor)
			for b := range evidence.Bucket(len(bucketNames)) {
				for _, e := range *next.Buckets.Get(b) {
					if e.Index >= st.Cursor {
						fr.Inflow[b]++
					}
				}
			}
			st = next
			msg := evidence.Render(&st)
			tokens := 0
			if msg != nil {
				tokens = evidence.EstimateTokens(len(msg.Content))
			}
			fr.MaxEvidenceTokens = max(fr.MaxEvidenceTokens, tokens)
			if tokens > maxTokens {
				fr.BudgetViolations++
				problem("%s step %d: message of %d estimated tokens, over %d", c.key, step, tokens, maxTokens)
			}
			if err := checkMessage(&st, msg); err != nil {
				fr.InvalidMessages++
				problem("%s step %d: %v", c.key, step, err)
			}
			for j, m := range c.forbidden {
				if leaked[j] {
					continue
				}
				if where, ok := find(&st, msg, m); ok {
					leaked[j] = true
					fr.Leaks = append(fr.Leaks, Leak{Conversation: c.key, Text: m.Text, Why: m.Why, Step: step, Where: where})
				}
			}
			if len(probesAt[i]) > 0 {
				fr.countServed(&st)
			}
			for _, p := range probesAt[i] {
				pr := ProbeResult{Conversation: c.key, Request: p.Request, Why: p.Why, Index: i, Facts: len(p.Facts), Missing: []string{}}
				for _, fact := range p.Facts {
					if _, ok := findFact(&st, fact); !ok {
						pr.Missing = append(pr.Missing, fact)
					}
				}
				fr.ProbeFacts += pr.Facts
				fr.ProbeHits += pr.Facts - len(pr.Missing)
				fr.addProbe(p.Why, pr.Facts, pr.Facts-len(pr.Missing))
				prompt, err := contextText(&st, c.messages[:i+1], cfg)
				if err != nil {
					return fr, fmt.Errorf("fixture %s: %s: context at message %d: %w", f.Name, c.key, i, err)
				}
				for _, fact := range p.Facts {
					if anyContains(prompt, fact) {
						fr.ContextProbeHits++
					}
				}
				fr.Probes = append(fr.Probes, pr)
			}
			for j := range facts {
				if b, ok := findFact(&st, facts[j].Text); ok {
					if !facts[j].EverPresent {
						facts[j].FirstBucket = b
					}
					facts[j].EverPresent = true
					facts[j].LostAtStep = -1
				} else if facts[j].EverPresent && facts[j].LostAtStep < 0 {
					facts[j].LostAtStep = step
				}
			}
			step++
		}
		fr.Steps += step
		for j := range facts {
			if b, ok := findFact(&st, facts[j].Text); ok {
				facts[j].Retained, facts[j].Bucket = true, b
			}
		}
		if len(c.messages) >= LongMessages {
			fr.LongRequired += len(facts)
			for j := range facts {
				if facts[j].Retained {
					fr.LongRetained++
				}
			}
		}
		fr.Facts = append(fr.Facts, facts...)
		for _, sc := range c.superseded {
			fr.Superseded++
			if _, ok := findFact(&st, sc.Text); ok {
				fr.SupersededShown++
				fr.Corrected = append(fr.Corrected, sc)
				if _, ok := findFact(&st, sc.By); !ok {
					fr.StaleShown++
					fr.Stale = append(fr.Stale, sc)
				}
			}
		}
		for _, l := range leaked {
			if l {
				fr.Leakage++
			}
		}
		// The turn-by-turn state equals one fold over the history.
		whole, _, err := fold(evidence.NewState(), c.messages, cfg)
		if err != nil {
			return fr, fmt.Errorf("fixture %s: %s: whole fold: %w", f.Name, c.key, err)
		}
		whole.Version, whole.MessageCount = st.Version, st.MessageCount
		if notes == nil && !reflect.DeepEqual(whole, st) {
			fr.Inconsistent++
			problem("%s: the turn-by-turn state differs from one fold over the whole history", c.key)
		}
		fr.OmittedEntries += st.OmittedEntries
		fr.countServed(&st)
		if msg := evidence.Render(&st); msg != nil {
			fr.EvidenceTokens += evidence.EstimateTokens(len(msg.Content))
			fr.MessageBytes += len(msg.Content)
			for b := range evidence.Bucket(len(bucketNames)) {
				for _, e := range *st.Buckets.Get(b) {
					fr.ExcerptBytes += len(e.Excerpt)
				}
			}
		}
		fr.HistoryTokens += HistoryTokens(c.messages[:st.Cursor])
	}
	for _, fact := range fr.Facts {
		fr.Required++
		if fact.Retained {
			fr.Retained++
		}
		if fact.Clause {
			fr.ClauseRequired++
			if fact.Retained {
				fr.ClauseRetained++
			}
		}
		if fact.WantBucket != "" {
			fr.Bucketed++
			if fact.FirstBucket == fact.WantBucket {
				fr.Classified++
			}
			if fact.Bucket == fact.WantBucket {
				fr.InBucket++
			}
		}
	}
	fr.finish()
	return fr, nil
}

// countServed counts the entries of the view st serves, and those that are
// chatter.
func (s *Score) countServed(st *evidence.State) {
	for b := range evidence.Bucket(len(bucketNames)) {
		for _, e := range *st.Buckets.Get(b) {
			s.Served++
			if evidence.Chatter(e.Excerpt) {
				s.ChatterServed++
			}
		}
	}
}

// ContextBudget is the prompt budget of the context a probe is scored on
// (ContextProbeRecall).
const ContextBudget = 4000

// contextText returns the texts of the prompt context assembly builds for
// the newest request of history at ContextBudget tokens: the history it
// keeps, and the evidence of st beside it (in focus, chosen from the
// messages older than those it keeps, as the context endpoint does).
func contextText(st *evidence.State, history []checkpoint.Message, cfg *evidence.Config) ([]string, error) {
	budget := assemble.DefaultBudget()
	budget.Prompt = ContextBudget
	req := &assemble.Request{Messages: history, Budget: budget,
		Evidence: &assemble.Evidence{Message: evidence.Render(st), Version: st.Version, Cursor: st.Cursor}}
	if st.Archive != nil {
		maxTokens := cfg.WithDefaults().MaxTokens
		req.Complement = func(request string, before, room int) (*evidence.EvidenceMessage, error) {
			c, q := st.Candidates(request)
			view := evidence.State{Cursor: st.Cursor}
			view.SetView(evidence.SelectView(c.Before(before), q, maxTokens))
			return evidence.RenderWithin(&view, room), nil
		}
	}
	res, err := assemble.Build(req)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range res.Messages {
		out = appendStrings(out, m.Content)
	}
	// The evidence message's content is a JSON envelope in a string: its
	// excerpts are strings inside it.
	for _, text := range slices.Clone(out) {
		if strings.HasPrefix(text, "{") {
			out = appendStrings(out, json.RawMessage(text))
		}
	}
	return out, nil
}

// HistoryTokens estimates the prompt tokens of msgs sent as they are, by the
// contract's estimate (ceil(bytes/3) + 4 per message): a message's text
// and, for an assistant message, its tool calls' names and arguments.
// Messages off the conversation channel (thinking, status, …) and artifacts
// are not sent to a model and count nothing.
func HistoryTokens(msgs []checkpoint.Message) int {
	n := 0
	for i := range msgs {
		m := &msgs[i]
		if !m.IsConversation() {
			continue
		}
		size := len(m.Text)
		for _, tc := range m.ToolCalls {
			size += len(tc.Name) + len(tc.Args)
		}
		n += evidence.EstimateTokens(size)
	}
	return n
}

// findFact reports whether text is in an excerpt of s, and in which bucket.
func findFact(s *evidence.State, text string) (string, bool) {
	for b := range evidence.Bucket(len(bucketNames)) {
		for _, e := range *s.Buckets.Get(b) {
			if strings.Contains(e.Excerpt, text) {
				return b.String(), true
			}
		}
	}
	return "", false
}

// find looks for a forbidden marker: in the entries of s (unless it is
// WhereRendered) and in the rendered message's content.
func find(s *evidence.State, msg *evidence.EvidenceMessage, m Marker) (string, bool) {
	if m.Where != WhereRendered {
		for b := range evidence.Bucket(len(bucketNames)) {
			for _, e := range *s.Buckets.Get(b) {
				if strings.Contains(e.Excerpt, m.Text) || strings.Contains(e.MessageID, m.Text) {
					return b.String(), true
				}
			}
		}
	}
	if msg != nil && strings.Contains(msg.Content, m.Text) {
		return "message", true
	}
	return "", false
}

// checkMessage checks the rendered message against the evidence message's rules: null with nothing
// summarised, the sentinel with no entries, and otherwise an assistant
// message whose content is a JSON object of exactly the envelope's members
// whose buckets decode to the state's entries, so that no text inside
// forged structure.
func checkMessage(s *evidence.State, msg *evidence.EvidenceMessage) error {
	n := s.Buckets.Len()
	switch {
	case msg == nil:
		if n > 0 || s.Cursor > 0 {
			return fmt.Errorf("message is null but %d entries and cursor %d", n, s.Cursor)
		}
		return nil
	case msg.Role != checkpoint.RoleAssistant:
		return fmt.Errorf("message role is %q, not assistant", msg.Role)
	case n == 0:
		if msg.Content != evidence.Sentinel {
			return fmt.Errorf("no entries, but the content is not the sentinel")
		}
		return nil
	}
	var env struct {
		Type           string                     `json:"type"`
		Note           string                     `json:"note"`
		OmittedEntries int                        `json:"omitted_entries"`
		Buckets        map[string]json.RawMessage `json:"buckets"`
	}
	dec := json.NewDecoder(strings.NewReader(msg.Content))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return fmt.Errorf("content is not the envelope: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("content has data after the envelope")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(msg.Content), &members); err != nil || len(members) != 4 {
		return fmt.Errorf("content must have exactly type, note, omitted_entries and buckets")
	}
	if env.Type != "untrusted_historical_evidence" || !strings.Contains(env.Note, "not instructions") || !strings.Contains(env.Note, "heuristic") {
		return fmt.Errorf("envelope does not name itself untrusted evidence with heuristic labels")
	}
	if env.OmittedEntries != s.OmittedEntries {
		return fmt.Errorf("omitted_entries %d, state has %d", env.OmittedEntries, s.OmittedEntries)
	}
	if len(env.Buckets) != len(bucketNames) {
		return fmt.Errorf("envelope has %d buckets, want %d", len(env.Buckets), len(bucketNames))
	}
	for i, name := range bucketNames {
		raw, ok := env.Buckets[name]
		if !ok {
			return fmt.Errorf("envelope lacks bucket %s", name)
		}
		want := *s.Buckets.Get(evidence.Bucket(i))
		if s.Shown != nil {
			// The focus profile writes each entry as its model line.
			var got []string
			if err := json.Unmarshal(raw, &got); err != nil {
				return fmt.Errorf("bucket %s: %v", name, err)
			}
			if len(got) != len(want) {
				return fmt.Errorf("bucket %s has %d entries, state has %d", name, len(got), len(want))
			}
			for j := range got {
				if got[j] != evidence.ModelLine(&want[j]) || !strings.Contains(got[j], want[j].Excerpt) {
					return fmt.Errorf("bucket %s entry %d differs from the state's", name, j)
				}
			}
			continue
		}
		var got []evidence.Entry
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			return fmt.Errorf("bucket %s: %v", name, err)
		}
		if len(got) != len(want) {
			return fmt.Errorf("bucket %s has %d entries, state has %d", name, len(got), len(want))
		}
		for j := range got {
			if got[j] != want[j] {
				return fmt.Errorf("bucket %s entry %d differs from the state's", name, j)
			}
		}
	}
	return nil
}
