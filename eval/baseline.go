package eval

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/recallhq/recall/evidence"
)

// The baseline a user could pick instead of a memory service: BM25 over
// the sentences of the conversation before the request, ranked against the
// request's text, filling the same token budget with bare text (a JSON
// array of the sentences, nothing else). Every figure of the profiles is
// read against it.

// BaselineName names the baseline in reports.
const BaselineName = "bm25"

// BM25's parameters, the usual ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// sentence is one sentence of an evidential message, with its terms.
type sentence struct {
	index int
	text  string
	terms []string
}

// RunBaseline scores the baseline on fixtures: retention after the last
// turn, probe recall and superseded facts shown, as Run scores a profile.
func RunBaseline(fixtures []Fixture, maxTokens int) (*Score, error) {
	if maxTokens <= 0 {
		maxTokens = evidence.DefaultMaxTokens
	}
	var total Score
	for i := range fixtures {
		f := &fixtures[i]
		convs := f.convs
		if convs == nil {
			var err error
			if convs, err = f.conversations(); err != nil {
				return nil, err
			}
		}
		for ci := range convs {
			scoreBaseline(&convs[ci], maxTokens, &total)
		}
	}
	total.finish()
	return &total, nil
}

func scoreBaseline(c *conversation, maxTokens int, s *Score) {
	var sentences []sentence
	for i := range c.messages {
		m := &c.messages[i]
		if !m.Evidential() {
			continue
		}
		for _, sp := range evidence.Segment(m.Text) {
			text := m.Text[sp[0]:sp[1]]
			sentences = append(sentences, sentence{index: i, text: text, terms: evidence.Terms(text)})
		}
	}
	before := func(k int) []sentence {
		n, _ := slices.BinarySearchFunc(sentences, k, func(s sentence, k int) int { return cmp.Compare(s.index, k) })
		return sentences[:n]
	}
	s.Conversations++
	s.Messages += len(c.messages)
	for _, p := range c.probes {
		shown := bm25View(before(p.index), c.messages[p.index].Text, maxTokens)
		hits := 0
		for _, fact := range p.Facts {
			s.ProbeFacts++
			if anyContains(shown, fact) {
				s.ProbeHits++
				hits++
			}
		}
		s.addProbe(p.Why, len(p.Facts), hits)
	}
	last := evidence.NewestRequest(c.messages)
	shown := bm25View(before(last), c.messages[last].Text, maxTokens)
	for _, r := range c.required {
		s.Required++
		ok := anyContains(shown, r.Text)
		if ok {
			s.Retained++
		}
		if len(c.messages) >= LongMessages {
			s.LongRequired++
			if ok {
				s.LongRetained++
			}
		}
		if at := firstEvidential(c.messages, r.Text); at >= 0 && ClauseOfLonger(c.messages[at].Text, r.Text) {
			s.ClauseRequired++
			if ok {
				s.ClauseRetained++
			}
		}
	}
	for _, sc := range c.superseded {
		s.Superseded++
		if anyContains(shown, sc.Text) {
			s.SupersededShown++
			if !anyContains(shown, sc.By) {
				s.StaleShown++
			}
		}
	}
}

// bm25View returns the sentences BM25 ranks first against request, as many
// as fit in maxTokens estimated tokens as a JSON array of strings.
func bm25View(sentences []sentence, request string, maxTokens int) []string {
	query := evidence.Terms(request)
	if len(sentences) == 0 || len(query) == 0 {
		return nil
	}
	df := make(map[string]int, len(query))
	avg := 0.0
	for _, s := range sentences {
		avg += float64(len(s.terms))
		for _, t := range query {
			if _, ok := slices.BinarySearch(s.terms, t); ok {
				df[t]++
			}
		}
	}
	n := float64(len(sentences))
	avg /= n
	type scored struct {
		i     int
		score float64
	}
	var ranked []scored
	for i, s := range sentences {
		score := 0.0
		for _, t := range query {
			if _, ok := slices.BinarySearch(s.terms, t); !ok {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			// Each term counts once in a sentence (terms are distinct).
			score += idf * (bm25K1 + 1) / (1 + bm25K1*(1-bm25B+bm25B*float64(len(s.terms))/max(avg, 1)))
		}
		if score > 0 {
			ranked = append(ranked, scored{i, score})
		}
	}
	slices.SortStableFunc(ranked, func(x, y scored) int { return cmp.Compare(y.score, x.score) })
	budget := 3*(maxTokens-4) - len("[]")
	var out []string
	for _, r := range ranked {
		text := sentences[r.i].text
		cost := len(text) + len(`"",`) + strings.Count(text, `"`)
		if cost > budget {
			continue
		}
		budget -= cost
		out = append(out, text)
	}
	return out
}
