package evidence

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

// TestStanding checks the standing-fact feature: a lasting trait of the
// speaker or of someone they speak for, said as a statement, in several
// languages; and not narration of one occasion, a question, or a trait of
// nobody.
func TestStanding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want bool
	}{
		// Conditions, of the speaker and of someone they speak for.
		{"My husband is allergic to penicillin, so keep that in mind.", true},
		{"Codeine makes him see things, he can't take it.", false}, // no condition word: left to the other features
		{"Seit meiner Knieoperation nehme ich immer den Aufzug.", true},
		{"Soy vegetariana desde hace veinte años.", true},
		{"我对花生过敏。", true},
		{"娘は乳製品アレルギーがあります。", true},
		// Preferences, values, goals, habits, circumstances.
		{"I can't stand crowded trains, I'd rather cycle.", true},
		{"Je préfère qu'on m'écrive plutôt que de m'appeler.", true},
		{"I never post client work without their consent; it matters to me.", true},
		{"Ik wil volgend jaar de marathon lopen, dat is mijn doel.", true},
		{"Nós sempre jantamos às sete por causa das crianças.", true},
		{"I'm at work until half five Monday to Thursday.", true},
		{"Jag bor i Uppsala och pendlar till Stockholm.", true},
		// Not standing: one occasion, a question, nobody's trait.
		{"Yesterday I went bowling with the team.", false},
		{"Ayer fui al mercado con mi hermana.", false},
		{"Do you always use the same template?", false},
		{"The report is due on Friday.", false},
	}
	for _, tt := range tests {
		s := readSentence(tt.text)
		if got := s.standing(question(tt.text)); got != tt.want {
			t.Errorf("standing(%q) = %v, want %v (lexicon %+v)", tt.text, got, tt.want, s.lex)
		}
	}
}

// TestChatter checks the chatter feature: greetings, thanks, praise,
// acknowledgements, fillers and small-talk questions are chatter in every
// language the lexicon covers, with a transcript's date and speaker label
// read past; a sentence that states something is not.
func TestChatter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want bool
	}{
		{"Confirmed.", true},
		{"Understood.", true},
		{"ok", true},
		{"👍", true},
		{"Wow, that's great!", true},
		{"Thanks so much, that's really helpful!", true},
		{"[11:04 am on 23 April, 2022] John: Hey James!", true},
		{"Maria: Hey Tom! Good to see you.", true},
		{"How are you?", true},
		{"How was your weekend?", true},
		{"Danke, super!", true},
		{"Merci beaucoup, parfait.", true},
		{"¡Hola! Gracias.", true},
		{"Спасибо, отлично!", true},
		// Not chatter: a fact, a decision, a date, a rule, a question of substance.
		{"Thanks, I'll send the invoice on Tuesday.", false},
		{"Sounds good, let's book the 3 pm slot.", false},
		{"Great, we must finish before noon.", false},
		{"Hey, my daughter is allergic to nuts.", false},
		{"What time does the venue open?", false},
		{"I love that you kept the old name.", false},
	}
	for _, tt := range tests {
		s := readSentence(tt.text)
		b := focusClassifier.Classify(tt.text)
		if got := s.chatter(b); got != tt.want {
			t.Errorf("chatter(%q) = %v, want %v (words %q)", tt.text, got, tt.want, s.words)
		}
	}
}

// TestEpisodic checks the narration feature: one occasion, in several
// languages, unless the sentence also states something lasting.
func TestEpisodic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want bool
	}{
		{"Yesterday we tried the new ramen place.", true},
		{"Gestern war ich im Kino.", true},
		{"Hier, on a visité le musée.", true},
		{"昨天我们去了公园。", true},
		{"Ever since the accident last year I avoid driving at night.", false},
		{"We meet every Monday at nine.", false},
	}
	for _, tt := range tests {
		v := features(checkpoint.RoleUser, RecentContext, tt.text, 500, 0, 1, false, 0)
		if got := v[FeatEpisodic] > 0; got != tt.want {
			t.Errorf("episodic(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// TestStatementBody checks that a transcript's date and speaker label are
// read past, and nothing else is.
func TestStatementBody(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"[4:04 pm on 20 January, 2023] Gina: Hey Jon!", "Hey Jon!"},
		{"Jon: I lost my job.", "I lost my job."},
		{"Anna Maria: Ciao.", "Ciao."},
		{"Note: we must ship by Friday.", "we must ship by Friday."},
		{"When: Friday at 9", "When: Friday at 9"}, // a question word labels what follows
		{"the plan: ship by Friday", "the plan: ship by Friday"},
		{"We need three things: a, b, c", "We need three things: a, b, c"},
	}
	for _, tt := range tests {
		if got := statementBody(tt.text); got != tt.want {
			t.Errorf("statementBody(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestFittedOrders checks that the fitted table orders sentences as a
// reader would: a standing fact above narration and chatter, a statement
// above the same words asked, a specific fact above a vague one. A refit
// that breaks one of these fails here.
func TestFittedOrders(t *testing.T) {
	t.Parallel()
	chance := func(text string) float64 {
		items := []Item{{Entry: Entry{Role: checkpoint.RoleUser, Index: 500, Excerpt: text}, Bucket: focusClassifier.Classify(text)}}
		scoreItems(items, nil, nil)
		return chanceOf(items[0].Weight)
	}
	heavier := [][2]string{
		{"My son is allergic to penicillin, so no penicillin for him.", "We went to the pharmacy near the station yesterday."},
		{"Ever since my knee surgery I avoid stairs whenever I can.", "Wow, that's great, good for you!"},
		{"I always take the night train because I hate flying.", "Confirmed."},
		{"Marta needs the list every Monday by 9am.", "Marta needs the list every Monday by 9am?"},
		{"The retention team can handle 2,000 users a month.", "Hey James!"},
	}
	for _, p := range heavier {
		if a, b := chance(p[0]), chance(p[1]); a <= b {
			t.Errorf("chance(%q) = %.3f, not above chance(%q) = %.3f", p[0], a, p[1], b)
		}
	}
}

// TestWeightsTable checks the table's form: every feature weighed once, no
// other name, shares within their bounds; a table that does not match is
// refused with what is wrong, never read as a silent zero.
func TestWeightsTable(t *testing.T) {
	t.Parallel()
	w, err := ParseWeights(weightsJSON)
	if err != nil {
		t.Fatalf("evidence/weights.json: %v", err)
	}
	b, err := MarshalWeights(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseWeights(b)
	if err != nil || *again != *w {
		t.Fatalf("a table written and read back differs: %v", err)
	}
	drop := strings.Replace(string(b), `"chatter":`, `"chatterbox":`, 1)
	if _, err := ParseWeights([]byte(drop)); !errors.Is(err, ErrWeights) || !strings.Contains(err.Error(), "chatter") {
		t.Errorf("a table without chatter's weight: %v, want ErrWeights naming it", err)
	}
	bad := strings.Replace(string(b), `"frame": `, `"frame": -`, 1)
	if _, err := ParseWeights([]byte(bad)); err == nil || !strings.Contains(err.Error(), "frame") {
		t.Errorf("a negative frame: %v, want an error naming it", err)
	}
	if _, err := ParseWeights([]byte(`{"features": {}, "question": {}, "statement": {}, "extra": 1}`)); err == nil {
		t.Error("a table with an unknown member was read")
	}
	for f := range NumFeatures {
		if f.String() == "" || strings.Contains(f.String(), "(") {
			t.Errorf("feature %d has no name", f)
		}
	}
}

// TestChatterLast checks the view's rule for chatter: it is shown only when
// every other candidate is. With room for a few entries, none of the many
// greetings and acknowledgements is shown while a fact is left out; with
// room for everything, they are.
func TestChatterLast(t *testing.T) {
	t.Parallel()
	var h []checkpoint.Message
	for i := range 40 {
		h = append(h,
			checkpointtest.User(fmt.Sprintf("u%d", i), fmt.Sprintf("Thanks! The shed number %d holds %d boxes of tiles.", i, 3*i+2)),
			checkpointtest.Assistant(fmt.Sprintf("a%d", i), "Confirmed."),
			checkpointtest.User(fmt.Sprintf("g%d", i), "ok"),
			checkpointtest.Assistant(fmt.Sprintf("b%d", i), "Understood."))
	}
	h = append(h, checkpointtest.User("last", "Where are the tiles?"))
	for _, tt := range []struct {
		maxTokens   int
		wantChatter bool
	}{{300, false}, {600, false}, {20000, true}} {
		s, _, err := Fold(NewState(), h, &Config{MaxTokens: tt.maxTokens})
		if err != nil {
			t.Fatal(err)
		}
		chatter, facts := 0, 0
		for _, e := range s.Shown {
			if Chatter(e.Excerpt) {
				chatter++
			} else {
				facts++
			}
		}
		if facts == 0 {
			t.Fatalf("max_tokens %d: no fact shown", tt.maxTokens)
		}
		if !tt.wantChatter && facts == 40 {
			t.Fatalf("max_tokens %d: every fact fits; the case tests nothing", tt.maxTokens)
		}
		if got := chatter > 0; got != tt.wantChatter {
			t.Errorf("max_tokens %d: %d chatter entries shown beside %d facts of 40, omitted %d; want chatter shown %v",
				tt.maxTokens, chatter, facts, s.OmittedEntries, tt.wantChatter)
		}
	}
}

// TestStandingMoreLanguages checks standing facts in the other languages
// of the held-out conversations: Polish, Hindi and Hinglish, Vietnamese,
// Greek.
func TestStandingMoreLanguages(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"Mój mąż ma alergię na orzechy, więc bez orzechów.",
		"Main hamesha subah 6 baje uthta hoon kyunki shop 7 baje khulti hai.",
		"मेरी बेटी शाकाहारी है।",
		"Con trai tôi bị dị ứng hải sản.",
		"Η κόρη μου είναι χορτοφάγος εδώ και χρόνια.",
	} {
		if s := readSentence(text); !s.standing(question(text)) {
			t.Errorf("standing(%q) = false, want true (lexicon %+v)", text, s.lex)
		}
	}
}

// TestOldArchiveEntries checks entries of archives written before the
// weights were fitted: their Weight is the old score for the room they
// take, not a chance, so a view weighs them from their text, and reads
// chatter and corrections from it too, rather than ranking every old
// entry below every new one.
func TestOldArchiveEntries(t *testing.T) {
	t.Parallel()
	old := func(role checkpoint.Role, text string, weight int) *Item {
		return &Item{Entry: Entry{Role: role, Index: 40, Excerpt: text}, Bucket: focusClassifier.Classify(text), Weight: weight,
			Traits: packTraits(specifics(text), 12, false) &^ traitsFitted}
	}
	fact := old(checkpoint.RoleUser, "My son is allergic to penicillin, so never give him any.", 250)
	items := []Item{{Entry: Entry{Role: checkpoint.RoleUser, Index: 40, Excerpt: fact.Excerpt}, Bucket: fact.Bucket}}
	scoreItems(items, nil, nil)
	if got, want := chanceNow(fact, nil, nil), chanceOf(items[0].Weight); got < want-0.05 || got > want+0.05 {
		t.Errorf("an old entry's chance is %.3f, want about %.3f, the chance of the same entry written now", got, want)
	}
	if chanceNow(fact, nil, nil) <= chanceOf(fact.Weight) {
		t.Error("an old entry is weighed by its old score as a chance")
	}
	if !chatterItem(old(checkpoint.RoleUser, "Thanks, sounds good!", 0)) || chatterItem(fact) {
		t.Error("an old entry's chatter is not read from its text")
	}
	if !correctionItem(old(checkpoint.RoleUser, "Actually, make it 150 people.", 300)) || correctionItem(fact) {
		t.Error("an old entry's correction is not read from its text")
	}
}

// TestTraitsPoints checks that the marks packed above the points (chatter,
// a correction, the fitted table) never read as points.
func TestTraitsPoints(t *testing.T) {
	t.Parallel()
	tr := packTraits(named{2, 1, 0, 1}, 17, true) | traitsCorrection
	if got := tr.points(); got != 17 {
		t.Errorf("points = %d, want 17", got)
	}
	if got := tr.named(); got != (named{2, 1, 0, 1}) {
		t.Errorf("named = %v", got)
	}
}
