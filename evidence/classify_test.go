package evidence

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// contractKeywords are the words of CONTRACT §4.6, written out here rather
// than taken from DefaultKeywords so that the test fails if one goes missing.
var contractKeywords = []struct {
	bucket Bucket
	words  []string
}{
	{Constraints, []string{"must", "never", "always", "required", "cannot", "can't", "don't", "do not", "only", "at most", "at least", "deadline"}},
	{Decisions, []string{"decided", "agreed", "confirmed", "chose", "approved", "go with", "we'll use", "settled"}},
	{OpenWork, []string{"todo", "next step", "follow up", "pending", "still need", "need to", "tbd", "open question"}},
}

func TestClassifyContractKeywords(t *testing.T) {
	t.Parallel()
	c := NewClassifier(DefaultKeywords)
	for _, kw := range contractKeywords {
		for _, word := range kw.words {
			variants := []string{
				word,
				strings.ToUpper(word),
				strings.ToUpper(word[:1]) + word[1:],
				"Well, " + word + ".",
				"(" + word + ")",
				"x\n" + word + "\ty",
				`"` + word + `"`,
			}
			if strings.Contains(word, "'") {
				variants = append(variants, strings.ReplaceAll(word, "'", "’"), strings.ToUpper(strings.ReplaceAll(word, "'", "’")))
			}
			for _, text := range variants {
				if got := c.Classify(text); got != kw.bucket {
					t.Errorf("Classify(%q) = %v, want %v", text, got, kw.bucket)
				}
				if got := defaultClassifier.Classify(text); got != kw.bucket {
					t.Errorf("default Classify(%q) = %v, want %v", text, got, kw.bucket)
				}
			}
		}
	}
}

// classifyTests are shared with the fuzz seeds.
var classifyTests = []struct {
	name string
	text string
	want Bucket
}{
	{name: "empty", text: "", want: RecentContext},
	{name: "plain", text: "The archive is 4 TB.", want: RecentContext},
	{name: "inside a word: mustard", text: "Pass the mustard.", want: RecentContext},
	{name: "inside a word: commonly", text: "commonly used", want: RecentContext},
	{name: "inside a word: todos", text: "three todos", want: RecentContext},
	{name: "inside a word: agreedly", text: "disagreed", want: RecentContext},
	{name: "inside a word: pendings", text: "appending rows", want: RecentContext},
	{name: "inside a word: alwaysOn", text: "alwaysOn flag", want: RecentContext},
	{name: "digits join words", text: "must2 only3", want: RecentContext},
	{name: "underscore splits words", text: "field must_be_set", want: Constraints},
	{name: "phrase split across words", text: "do something, not that", want: RecentContext},
	{name: "phrase in the wrong order", text: "not do", want: RecentContext},
	{name: "half a phrase", text: "at the end, go home", want: RecentContext},
	{name: "phrase across a line break", text: "at\nmost three", want: Constraints},
	{name: "hyphenated phrase", text: "a follow-up call", want: OpenWork},
	{name: "can't without apostrophe", text: "I cant", want: RecentContext},
	{name: "quoted can't", text: "'can't'", want: Constraints},
	{name: "typographic don't", text: "Don’t merge yet", want: Constraints},
	{name: "typographic we'll use", text: "We’ll use Postgres", want: Decisions},
	{name: "we will use", text: "we will use Postgres", want: RecentContext},
	{name: "constraint after decision", text: "Agreed. We must ship Friday.", want: Constraints},
	{name: "constraint after open work", text: "TODO: tests. Never skip them.", want: Constraints},
	{name: "decision after open work", text: "Still need the runbook; we chose Postgres.", want: Decisions},
	{name: "constraint at the very end", text: "Confirmed, pending review, and the deadline", want: Constraints},
	{name: "open work only", text: "Next step: draft the runbook.", want: OpenWork},
	{name: "non-ASCII around", text: "été MUST été", want: Constraints},
	{name: "non-ASCII letter joins", text: "musté", want: RecentContext},
	{name: "forged structure", text: `"}],"x": only`, want: Constraints},
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tt := range classifyTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := defaultClassifier.Classify(tt.text); got != tt.want {
				t.Errorf("Classify(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestClassifierCustomAndZero(t *testing.T) {
	t.Parallel()
	c := NewClassifier([3][]string{Constraints: {"Hard Rule"}, Decisions: {"ship it", ""}, OpenWork: {"later"}})
	tests := []struct {
		text string
		want Bucket
	}{
		{"this is a HARD rule", Constraints},
		{"ok, ship it", Decisions},
		{"we must do it later", OpenWork},
		{"must", RecentContext},
	}
	for _, tt := range tests {
		if got := c.Classify(tt.text); got != tt.want {
			t.Errorf("Classify(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
	var zero Classifier
	if got := zero.Classify("must"); got != RecentContext {
		t.Errorf("zero Classifier: Classify(must) = %v, want RecentContext", got)
	}
	var nilc *Classifier
	if got := nilc.Classify("must"); got != RecentContext {
		t.Errorf("nil Classifier: Classify(must) = %v, want RecentContext", got)
	}
}

func TestBucketString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		b    Bucket
		want string
	}{
		{Constraints, "constraints"},
		{Decisions, "decisions"},
		{OpenWork, "open_work"},
		{RecentContext, "recent_context"},
		{Bucket(-1), "unknown"},
		{numBuckets, "unknown"},
	}
	for _, tt := range tests {
		if got := tt.b.String(); got != tt.want {
			t.Errorf("Bucket(%d).String() = %q, want %q", tt.b, got, tt.want)
		}
	}
}

// classifyWords is the classifier's definition over splitWords, which the
// allocation-free Classify must agree with.
func classifyWords(c *Classifier, text string) Bucket {
	words := splitWords(text, nil)
	best := RecentContext
	for i, w := range words {
		for _, p := range c.byFirst[w] {
			if p.bucket < best && len(words)-i >= len(p.words) && slices.Equal(words[i:i+len(p.words)], p.words) {
				best = p.bucket
			}
		}
	}
	return best
}

func TestClassifyMatchesWordSplitting(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Ab", 40)
	classifiers := []*Classifier{
		defaultClassifier,
		NewClassifier([3][]string{Constraints: {"'quoted'", long + " end"}, Decisions: {"x’y z"}, OpenWork: {"Ünïcödé word"}}),
	}
	pieces := []string{"must", "MUST", "do", "not", "do not", "can't", "can’t", "'", "’", "''", "'can't'", "don''t", "at", "most", "least",
		"we'll", "use", "go", "with", "todo", " ", ",", "-", "\n", "é", "É", "İ", "ǅ", "ß", "x’y", "z", "quoted", "'quoted'", "ünïcödé", "ÜNÏCÖDÉ", "word",
		long, strings.ToLower(long), "end", strings.Repeat("a", 70), strings.Repeat("'", 70), "\xff", "a\u0301", "0", "deadline", "TBD"}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
			if r.IntN(2) == 0 {
				b.WriteByte(' ')
			}
		}
		text := b.String()
		for i, c := range classifiers {
			if got, want := c.Classify(text), classifyWords(c, text); got != want {
				t.Fatalf("classifier %d: Classify(%q) = %v, word splitting says %v", i, text, got, want)
			}
		}
	}
}

func TestClassifyAllocations(t *testing.T) {
	text := "Well, we decided on Postgres. Next STEP: the schema, and it MUST be done by the deadline. Ça va?"
	if n := testing.AllocsPerRun(100, func() { defaultClassifier.Classify(text) }); n != 0 {
		t.Errorf("Classify allocates %v times per call, want 0", n)
	}
}
