package evidence

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// clauseTexts returns the clauses Clauses cuts text, one sentence, into.
func clauseTexts(text string) []string {
	var out []string
	for _, sp := range Clauses(text, Span{0, len(text)}) {
		out = append(out, text[sp[0]:sp[1]])
	}
	return out
}

// TestClauses checks where a long sentence is cut into clauses, in the
// languages and scripts recall reads, and where it is not.
func TestClauses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		text string
		want []string
	}{
		{"a comma before a conjunction and a relative pronoun",
			"She came out in hives all over her arms after the second dose on the Tuesday evening, and that's how we found out she can't have ibuprofen, which the GP has on file but the pharmacy apparently does not.",
			[]string{"She came out in hives all over her arms after the second dose on the Tuesday evening,",
				"and that's how we found out she can't have ibuprofen,", "which the GP has on file but the pharmacy apparently does not."}},
		{"a semicolon and a dash",
			"The van goes back to the rental place on the 14th before noon after we load the last boxes; the keys stay with Lena at the flat until the cleaners are done — the deposit comes back in cash at the counter a week later.",
			[]string{"The van goes back to the rental place on the 14th before noon after we load the last boxes;", "the keys stay with Lena at the flat until the cleaners are done —", "the deposit comes back in cash at the counter a week later."}},
		{"a colon",
			"Oh and one more thing from the consultant this morning, it's important for the whole trip: she can only take the tablets with food and never on an empty stomach, even on the early flight to Lisbon next Friday.",
			[]string{"Oh and one more thing from the consultant this morning, it's important for the whole trip:", "she can only take the tablets with food and never on an empty stomach, even on the early flight to Lisbon next Friday."}},
		{"German weil",
			"Ich habe im Frühjahr bei der alten Firma in Kassel gekündigt, weil die ständigen Überstunden meine Migräne jede Woche schlimmer gemacht haben und ich abends nur noch im dunklen Schlafzimmer lag und nichts mehr geschafft habe.",
			[]string{"Ich habe im Frühjahr bei der alten Firma in Kassel gekündigt,", "weil die ständigen Überstunden meine Migräne jede Woche schlimmer gemacht haben und ich abends nur noch im dunklen Schlafzimmer lag und nichts mehr geschafft habe."}},
		{"a short sentence is one entry",
			"We eat halal, so I want a version that isn't from pigs, which the pharmacy can check.",
			[]string{"We eat halal, so I want a version that isn't from pigs, which the pharmacy can check."}},
		{"no cut inside brackets or quotation marks",
			`The booking note says "arrive before nine, and bring the paperwork, which the desk will copy" and the manager repeated it twice on the phone (again, and slowly, which helped) before she hung up.`,
			[]string{`The booking note says "arrive before nine, and bring the paperwork, which the desk will copy" and the manager repeated it twice on the phone (again, and slowly, which helped) before she hung up.`}},
		{"a transcript's date and speaker are no clause",
			"[4:04 pm on 20 January, 2023] Gina: I started carrying a refillable bottle after the café kept giving me plastic cups every single morning on the way to the studio.",
			[]string{"[4:04 pm on 20 January, 2023] Gina: I started carrying a refillable bottle after the café kept giving me plastic cups every single morning on the way to the studio."}},
		{"Japanese after a connective before the comma",
			"引越し代は会社が出してくれるって話やったけど、上限は四十万円までで、それを超えたぶんはうちの持ち出しになるって健太が昨日の夜に言うてた。",
			[]string{"引越し代は会社が出してくれるって話やったけど、", "上限は四十万円までで、それを超えたぶんはうちの持ち出しになるって健太が昨日の夜に言うてた。"}},
		{"Chinese before a connective after the comma",
			"山嵐精釀昨天晚上打電話來答應贊助我們這次巡迴的全部周邊費用，但是條件是T恤背面一定要印他們的標誌而且要放在最大最明顯的位置上面才可以，這點他們說沒有商量的餘地。",
			[]string{"山嵐精釀昨天晚上打電話來答應贊助我們這次巡迴的全部周邊費用，", "但是條件是T恤背面一定要印他們的標誌而且要放在最大最明顯的位置上面才可以，這點他們說沒有商量的餘地。"}},
		{"Korean after a connective ending",
			"운동유발성 천식이 있어서 뛸 때는 벤토린 흡입기를 러닝벨트 앞주머니에 넣어 다니는데, 대회 날에는 물품 보관소에 맡기지 말고 꼭 몸에 지니고 뛰라고 하셨어요.",
			[]string{"운동유발성 천식이 있어서 뛸 때는 벤토린 흡입기를 러닝벨트 앞주머니에 넣어 다니는데,", "대회 날에는 물품 보관소에 맡기지 말고 꼭 몸에 지니고 뛰라고 하셨어요."}},
		{"a sentence under 200 bytes is one entry, however many clauses",
			"Generative AI is allowed for drafting and checking code in the weekly labs, but every submission needs an AI-use log as an appendix.",
			[]string{"Generative AI is allowed for drafting and checking code in the weekly labs, but every submission needs an AI-use log as an appendix."}},
		{"a word that also opens a clause, not after a comma",
			"The keys stay with Lena at the flat until the cleaners are done and the deposit comes back in cash later once the landlord has checked the walls and the floors and the windows.",
			[]string{"The keys stay with Lena at the flat until the cleaners are done and the deposit comes back in cash later once the landlord has checked the walls and the floors and the windows."}},
		{"a clause too short to stand alone stays with its neighbour",
			"Yes, and the rest of the plan for the long weekend stays exactly as we wrote it down in the shared document last Thursday evening after dinner.",
			[]string{"Yes, and the rest of the plan for the long weekend stays exactly as we wrote it down in the shared document last Thursday evening after dinner."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := clauseTexts(tt.text)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Clauses:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestClauseEntries checks that the entries of a long sentence are its
// clauses, each with its own span and cut marked on the sides where the
// sentence goes on, and that a view marks the cut in the model line.
func TestClauseEntries(t *testing.T) {
	t.Parallel()
	text := "She came out in hives all over her arms after the second dose on the Tuesday evening, and that's how we found out she can't have ibuprofen, which the GP has on file but the pharmacy apparently does not."
	items := ExtractItems([]checkpoint.Message{checkpointtest.User("m0", text)}, 0, nil, nil)
	if len(items) != 3 {
		t.Fatalf("%d entries, want 3", len(items))
	}
	want := []Cut{CutAfter, CutBefore | CutAfter, CutBefore}
	for i, it := range items {
		if text[it.Span[0]:it.Span[1]] != it.Excerpt {
			t.Errorf("entry %d: span %v covers %q, not its excerpt %q", i, it.Span, text[it.Span[0]:it.Span[1]], it.Excerpt)
		}
		if it.Traits.Cut() != want[i] {
			t.Errorf("entry %d: cut %v, want %v", i, it.Traits.Cut(), want[i])
		}
	}
	e := items[1].Entry
	e.Cut = items[1].Traits.Cut()
	if line := ModelLine(&e); line != "user #0: …and that's how we found out she can't have ibuprofen,…" {
		t.Errorf("model line %q", line)
	}
	if b := appendEntry(nil, &e); !strings.Contains(string(b), `"cut":"both"`) || len(b) != entryLen(&e) {
		t.Errorf("entry JSON %s (len %d, entryLen %d)", b, len(b), entryLen(&e))
	}
}

// FuzzClauses checks that clauses cover their sentence in order, each
// trimmed and of valid UTF-8, that a cut falls only after a clause's
// punctuation or at white space, so that it never splits a word, a number,
// a URL or a name, and that nothing but white space is left out.
func FuzzClauses(f *testing.F) {
	for _, s := range []string{
		"She came out in hives, and that's how we found out she can't have ibuprofen, which the GP has on file.",
		"The van goes back on the 14th; the keys stay with Lena — the deposit comes back in cash: 1,200 EUR, see https://example.com/a,b?c=1;d=2 for it.",
		"引越し代は会社が出してくれるけど、上限は四十万円まで。",
		`He said "no, and never, which is final" and left (again, and slowly).`,
	} {
		f.Add(strings.Repeat(s+" ", 3))
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		for _, sent := range Segment(text) {
			clauses := Clauses(text, sent)
			at := sent[0]
			for i, c := range clauses {
				if c[0] < at || c[1] > sent[1] || c[0] >= c[1] {
					t.Fatalf("clause %d %v out of its sentence %v in %q", i, c, sent, text)
				}
				if strings.TrimFunc(text[at:c[0]], unicode.IsSpace) != "" {
					t.Fatalf("bytes %d..%d of %q are left out", at, c[0], text)
				}
				s := text[c[0]:c[1]]
				if !utf8.ValidString(s) || strings.TrimSpace(s) != s {
					t.Fatalf("clause %q is not trimmed valid UTF-8", s)
				}
				if i > 0 {
					before, _ := utf8.DecodeLastRuneInString(text[:clauses[i-1][1]])
					if !strings.ContainsRune(",;:—–-、，；：", before) && !unicode.IsSpace(rune(text[clauses[i-1][1]])) {
						t.Fatalf("a cut after %q splits a word in %q", before, text[sent[0]:sent[1]])
					}
				}
				at = c[1]
			}
			if strings.TrimFunc(text[at:sent[1]], unicode.IsSpace) != "" {
				t.Fatalf("the end of %q is left out", text[sent[0]:sent[1]])
			}
		}
	})
}
