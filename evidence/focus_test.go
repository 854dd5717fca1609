package evidence

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/checkpointtest"
)

func TestSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"We must ship by Friday. Postgres is fine!", []string{"We must ship by Friday.", "Postgres is fine!"}},
		{"  one line  ", []string{"one line"}},
		{"- first item\n- second item\n\n3. third", []string{"- first item", "- second item", "3. third"}},
		{"Version 3.5 of example.com, e.g. the new one. Done", []string{"Version 3.5 of example.com, e.g. the new one.", "Done"}},
		{"Ask Dr. Smith. He knows.", []string{"Ask Dr. Smith.", "He knows."}},
		{"Wir müssen am 3. August zurück sein. Danke.", []string{"Wir müssen am 3. August zurück sein.", "Danke."}},
		{"予算は20万円です。会場は東京！よろしく", []string{"予算は20万円です。", "会場は東京！", "よろしく"}},
		{`He said "stop." Then left?! Ok…`, []string{`He said "stop."`, "Then left?!", "Ok…"}},
		// A letter of a script without capitals is a word, not an initial.
		{"네. 회의는 금요일이에요.", []string{"네.", "회의는 금요일이에요."}},
		{"बजट 5 लाख है। मीटिंग कल है।", []string{"बजट 5 लाख है।", "मीटिंग कल है।"}},
		{"--- \n ... \n", nil},
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, sp := range Segment(tt.text) {
			got = append(got, tt.text[sp[0]:sp[1]])
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Segment(%q) (-want +got):\n%s", tt.text, diff)
		}
	}
}

func TestTerms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"How many chairs should we rent?", []string{"chair", "rent"}},
		{"The venue holds 120 people.", []string{"120", "hold", "peopl", "venu"}},
		{"Kemal's agenda", []string{"agenda", "kemal"}},
		// Each language's stemmer and stop words.
		{"Wir brauchen 11 Busse statt 8, mit den Bussen", []string{"11", "brauch", "buss", "statt"}},
		{"i want this filed by march 7 / new target for filing", []string{"file", "march", "new", "target", "want"}},
		{"Il faut que je retrouve l'état des lieux", []string{"faut", "lieux", "retrouv", "état"}},
		{"Mert'e bir not yaz, Mert kesiyor", []string{"kesiyor", "mert", "yaz"}},
		{"dont use printwise they flaked", []string{"flake", "printwis", "use"}},
		// No stop word: the letters tell the language, so both stem alike.
		{"Вылетать хочу 13 сентября", []string{"13", "вылета", "сентябр", "хоч"}},
		{"вылет переносим на 11 сентября", []string{"11", "вылет", "перенос", "сентябр"}},
		{"会場は東京", []string{"は東", "会場", "場は", "東京"}},
		{"the a is", nil},
	}
	for _, tt := range tests {
		if got := Terms(tt.text); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	// A request finds the entry it shares a term with, in either script.
	q := NewQuery("東京の会場はどこ？", nil)
	if !sharesTerm(Terms("会場は東京駅の近くです。"), q.RequestTerms()) {
		t.Error("a Japanese request does not match a Japanese entry on shared bigrams")
	}
}

// TestTiers checks which tier an entry's role, text and chance put it in:
// a user's statement in one of the user's tiers by its chance, the user's
// questions, requests and chatter in the context, the assistant's rules
// and proposals apart.
func TestTiers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		role     checkpoint.Role
		text     string
		p        float64
		proposal bool
		chatter  bool
		want     Tier
	}{
		{checkpoint.RoleUser, "We must never take billing offline before 9 in March.", 0.95, false, false, TierUserKey},
		{checkpoint.RoleUser, "Actually, make it 150 people.", 0.8, false, false, TierUserFact},
		{checkpoint.RoleUser, "The venue holds 120 people.", 0.3, false, false, TierUserStatement},
		{checkpoint.RoleUser, "我们店一共有3800个SKU", 0.8, false, false, TierUserFact},
		{checkpoint.RoleUser, "we're closed mondays btw", 0.1, false, false, TierUserStatement},
		{checkpoint.RoleUser, "Please draft section 4 of the report.", 0.5, false, false, TierContext},
		{checkpoint.RoleUser, "How do we include the people who can't travel?", 0.5, false, false, TierContext},
		{checkpoint.RoleUser, "what do i write on the menu board", 0.5, false, false, TierContext},
		{checkpoint.RoleUser, "Thanks, sounds good!", 0.5, false, false, TierContext},
		// Chatter is context, whatever its chance.
		{checkpoint.RoleUser, "Hey James, good to see you again today!", 0.99, false, true, TierContext},
		{checkpoint.RoleAssistant, "We agreed on Postgres.", 0.2, false, false, TierAssistantRule},
		{checkpoint.RoleAssistant, "My recommendation: use the regular method at 20% business use.", 0.2, true, false, TierAssistantRule},
		{checkpoint.RoleAssistant, "The hall has two projectors.", 0.2, false, false, TierContext},
		{checkpoint.RoleAssistant, "The hall has two projectors.", 0.95, false, false, TierAssistantRule},
	}
	for _, tt := range tests {
		b := focusClassifier.Classify(tt.text)
		if got := tierOf(tt.role, b, tt.text, tt.p, tt.proposal, tt.chatter); got != tt.want {
			t.Errorf("%s %q at %.2f: tier %s, want %s", tt.role, tt.text, tt.p, TierName(got), TierName(tt.want))
		}
	}
}

// TestWeights checks the order salience puts sentences in: a sentence that
// names specific things before one that names none, a statement before the
// same words asked, a sentence before a reply of a few words, and the
// second-best line of a message below its best.
func TestWeights(t *testing.T) {
	t.Parallel()
	weight := func(role checkpoint.Role, texts ...string) []int {
		items := make([]Item, len(texts))
		for i, text := range texts {
			items[i] = Item{Entry: Entry{Role: role, Excerpt: text}, Bucket: focusClassifier.Classify(text)}
		}
		scoreItems(items, nil, nil)
		w := make([]int, len(items))
		for i := range items {
			w[i] = items[i].Weight
		}
		return w
	}
	heavier := [][2]string{
		{"The retention team can handle 2,000 users a month.", "The retention team can handle a lot of users."},
		{"Marta needs the list every Monday by 9am.", "Marta needs the list every Monday by 9am?"},
		// A question word before a colon is a label.
		{"When: Friday 12 May at the harbour hall.", "When Friday 12 May at the harbour hall"},
		{"landlord said no drilling in the flat", "landlord said something about the flat"},
		{"Die Volunteers koordiniert Deniz Aydın.", "Kannst du Deniz Aydın eine Nachricht schreiben."},
		// A reply of a few words is rarely a fact of its own.
		{"The budget for the launch is 4k, print and ads included.", "4k then."},
	}
	for _, p := range heavier {
		a, b := weight(checkpoint.RoleUser, p[0])[0], weight(checkpoint.RoleUser, p[1])[0]
		if a <= b {
			t.Errorf("weight(%q) = %d, not above weight(%q) = %d", p[0], a, p[1], b)
		}
	}
	// The same sentence early in a conversation weighs more than late.
	early := []Item{{Entry: Entry{Role: checkpoint.RoleUser, Index: 2, Excerpt: "Budget is 4k."}}, {Entry: Entry{Role: checkpoint.RoleUser, Index: 150, Excerpt: "Budget is 4k."}}}
	scoreItems(early[:1], nil, nil)
	scoreItems(early[1:], nil, nil)
	if early[0].Weight <= early[1].Weight {
		t.Errorf("weights early and late = %d, %d; want the early one heavier", early[0].Weight, early[1].Weight)
	}
}

// TestFocusEntries checks what the focus profile keeps of one message: a
// sentence an entry, each with the span of its excerpt, classified by its
// own words, and an over-long sentence cut with its span cut too.
func TestFocusEntries(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 600) // 1,200 bytes
	text := "Hi there. We must ship by Friday.\n- " + long
	h := []checkpoint.Message{checkpointtest.User("m0", text), checkpointtest.Assistant("m1", "Agreed: we'll use Postgres."), checkpointtest.User("m2", "next")}
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	items := s.Archive.Items()
	if len(items) != 4 {
		t.Fatalf("%d archive items, want 4", len(items))
	}
	for _, it := range items {
		msgText := h[it.Index].Text
		if got := msgText[it.Span[0]:it.Span[1]]; got != it.Excerpt {
			t.Errorf("span %v covers %q, not the excerpt %q", it.Span, got, it.Excerpt)
		}
	}
	if b := items[1].Bucket; b != Constraints || items[0].Bucket != RecentContext {
		t.Errorf("buckets %s, %s; want recent_context, constraints (each sentence by its own words)", items[0].Bucket, b)
	}
	if it := items[2]; !it.Truncated || len(it.Excerpt) > DefaultMaxExcerptBytes || !strings.HasPrefix(it.Excerpt, "- é") {
		t.Errorf("long line: truncated %v, %d bytes", it.Truncated, len(it.Excerpt))
	}
	if s.OmittedEntries != 0 || s.Buckets.Len() != 4 {
		t.Errorf("view shows %d entries, omits %d; want 4 and 0", s.Buckets.Len(), s.OmittedEntries)
	}
	msg := Render(&s)
	if !json.Valid([]byte(msg.Content)) || !strings.Contains(msg.Content, `"user #0: We must ship by Friday."`) ||
		strings.Contains(msg.Content, `"span"`) || strings.Contains(msg.Content, "m0") {
		t.Errorf("rendered message is not JSON, lacks a model line, or carries ids or spans: %s", msg.Content)
	}
	if want := `"user #0: ` + items[2].Excerpt + `…"`; !strings.Contains(msg.Content, want) {
		t.Errorf("the cut line lacks its mark: %s", msg.Content)
	}
}

// TestRestatementReplaces checks that a restatement (same words, other case
// and punctuation) replaces the earlier copy instead of adding one.
func TestRestatementReplaces(t *testing.T) {
	t.Parallel()
	h := []checkpoint.Message{
		checkpointtest.User("m0", "We must never take billing offline."),
		checkpointtest.Assistant("m1", "Understood."),
		checkpointtest.User("m2", "WE MUST NEVER take billing offline!!"),
		checkpointtest.Assistant("m3", "Understood."),
		checkpointtest.User("m4", "next"),
	}
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range s.Archive.Items() {
		got = append(got, fmt.Sprintf("%d:%s", it.Index, it.Excerpt))
	}
	want := []string{"2:WE MUST NEVER take billing offline!!", "3:Understood."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
}

// TestArchiveBound checks that beyond its bound the archive loses its
// oldest recent_context items first, and its oldest items when it has no
// recent_context left.
func TestArchiveBound(t *testing.T) {
	t.Parallel()
	item := func(i int, b Bucket) Item {
		return Item{Entry: Entry{Index: i, Excerpt: fmt.Sprint(i), Span: Span{0, 1}}, Bucket: b, Key: fmt.Sprint(i)}
	}
	var a Archive
	add := func(items ...Item) {
		t.Helper()
		if _, err := AddToArchive(t.Context(), &a, items, a.Len(), 3); err != nil {
			t.Fatal(err)
		}
	}
	add(item(0, Constraints), item(1, RecentContext), item(2, Decisions), item(3, RecentContext))
	if got := indexes(a.Items()); !reflect.DeepEqual(got, []int{0, 2, 3}) {
		t.Errorf("after the first add: %v, want [0 2 3]", got)
	}
	add(item(4, Constraints), item(5, Constraints))
	if got := indexes(a.Items()); !reflect.DeepEqual(got, []int{2, 4, 5}) {
		t.Errorf("after the second add: %v, want [2 4 5]", got)
	}
}

func indexes(items []Item) []int {
	var out []int
	for _, it := range items {
		out = append(out, it.Index)
	}
	return out
}

// TestViewKeepsEarlyRules checks the point of the focus profile: a rule the
// user stated first survives hundreds of later turns of chatter, and a fact
// stated without any keyword is shown when a request refers to it.
func TestViewKeepsEarlyRules(t *testing.T) {
	t.Parallel()
	h := []checkpoint.Message{
		checkpointtest.User("m0", "We must not take the billing database offline during business hours."),
		checkpointtest.Assistant("a0", "Understood."),
		checkpointtest.User("m1", "The venue holds 120 people."),
		checkpointtest.Assistant("a1", "Noted."),
	}
	for i := range 300 {
		h = append(h, checkpointtest.User(fmt.Sprintf("u%d", i), fmt.Sprintf("Please draft section %d of the report about topic %d.", i, i*7)),
			checkpointtest.Assistant(fmt.Sprintf("r%d", i), fmt.Sprintf("Here is section %d; it covers topic %d in three paragraphs.", i, i*7)))
	}
	h = append(h, checkpointtest.User("last", "How many people fit into the venue?"))
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := Render(&s)
	for _, fact := range []string{"billing database offline", "The venue holds 120 people."} {
		if !strings.Contains(msg.Content, fact) {
			t.Errorf("the view for the last request lacks %q", fact)
		}
	}
	if n := EstimateTokens(len(msg.Content)); n > DefaultMaxTokens {
		t.Errorf("message of %d estimated tokens, over %d", n, DefaultMaxTokens)
	}
	if s.OmittedEntries != s.Archive.Len()-s.Buckets.Len() {
		t.Errorf("omitted_entries %d, want %d (archive) - %d (shown)", s.OmittedEntries, s.Archive.Len(), s.Buckets.Len())
	}
}

// TestFocusDeterministic folds random histories in random batches and
// retries, and checks that the state after each request (messages, view
// order, archive) equals one fold over the history up to it: the view is a
// function of the history alone.
func TestFocusDeterministic(t *testing.T) {
	t.Parallel()
	words := []string{"venue", "budget", "must", "never", "decided", "todo", "Lisbon", "120", "chairs", "会場", "東京", "Frist", "müssen", "?", "thanks"}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var h []checkpoint.Message
		n := 20 + rng.IntN(120)
		for i := range n {
			var sb strings.Builder
			for range 1 + rng.IntN(3) {
				for range 2 + rng.IntN(6) {
					sb.WriteString(words[rng.IntN(len(words))] + " ")
				}
				sb.WriteString([]string{". ", "! ", "\n", "? "}[rng.IntN(4)])
			}
			if rng.IntN(2) == 0 {
				h = append(h, checkpointtest.User(fmt.Sprint(i), sb.String()))
			} else {
				h = append(h, checkpointtest.Assistant(fmt.Sprint(i), sb.String()))
			}
		}
		h = append(h, checkpointtest.User("end", "what about the venue?"))
		cfg := &Config{MaxArchiveEntries: 10 + rng.IntN(60), MaxTokens: 200 + rng.IntN(1600)}
		s := NewState()
		for end := 1; end <= len(h); end += 1 + rng.IntN(8) {
			var err error
			if s, _, err = Fold(s, h[:end], cfg); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(3) == 0 { // a retry of the same history changes nothing
				again, _, _ := Fold(s, h[:end], cfg)
				if !reflect.DeepEqual(again, s) {
					t.Fatalf("seed %d: folding the same history twice changed the state", seed)
				}
			}
			whole, _, err := Fold(NewState(), h[:end], cfg)
			if err != nil {
				t.Fatal(err)
			}
			whole.Version = s.Version
			if !reflect.DeepEqual(whole, s) {
				t.Fatalf("seed %d, %d messages: batched state differs from one fold:\n%s", seed, end, cmp.Diff(whole, s, cmp.AllowUnexported(Archive{})))
			}
			if m := Render(&s); m != nil && EstimateTokens(len(m.Content)) > cfg.MaxTokens {
				t.Fatalf("seed %d: message over its bound", seed)
			}
		}
	}
}

func TestAcceptance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reply  string
		ok     bool
		option int
		names  []string
	}{
		{"ok, the second one", true, 2, nil},
		{"go with option 2. Hana will live", true, 2, nil},
		{"dale, la B", true, 2, nil},
		{"la 2, obvio, sofi va a estar muerta", true, 2, nil},
		{"yes, do that.", true, 0, nil},
		{"ja, die zweite", true, 2, nil},
		{"ok, Calm Canine then", true, 0, []string{"calm", "canine"}},
		{"ok where are we. what's still open?", false, 0, nil},
		{"ok but not the second one", false, 0, nil},
		{"which one is cheaper?", false, 0, nil},
		{"I ordered the treats yesterday and he loves them", false, 0, nil},
	}
	for _, tt := range tests {
		ok, option, names := acceptance(tt.reply)
		if ok != tt.ok || option != tt.option || !slices.Equal(names, tt.names) {
			t.Errorf("acceptance(%q) = %v, %d, %q; want %v, %d, %q", tt.reply, ok, option, names, tt.ok, tt.option, tt.names)
		}
	}
}

// TestAcceptedProposalWeighsAsTheUsers checks that the option of an
// assistant's proposal that the user took with a bare "ok, the second
// one" weighs as the user's own decision: it outlasts chatter that would
// push out an assistant's sentence, and the options not taken do not.
func TestAcceptedProposalWeighsAsTheUsers(t *testing.T) {
	t.Parallel()
	h := []checkpoint.Message{
		checkpointtest.User("m0", "We need a venue for the team offsite in May."),
		checkpointtest.Assistant("m1", "Three options I found:\n1. Harbour Loft, 40 seats, city centre.\n2. Mill House in Orvik, 60 seats, with rooms for the night.\n3. The Glasshouse, 35 seats, by the station."),
		checkpointtest.User("m2", "ok, the second one"),
		checkpointtest.Assistant("m3", "Noted."),
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for i, n := range chatterNotes(rng, 150) {
		h = append(h, checkpointtest.User(fmt.Sprintf("c%d", i), n), checkpointtest.Assistant(fmt.Sprintf("r%d", i), "Logged."))
	}
	h = append(h, checkpointtest.User("last", "Draft the invitation."))
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	var taken []string
	for _, e := range s.Buckets.Decisions {
		if e.Index == 1 {
			taken = append(taken, e.Excerpt)
			if e.Role != checkpoint.RoleAssistant {
				t.Errorf("the accepted entry's role is %q: it is the assistant's words", e.Role)
			}
		}
	}
	if want := []string{"2. Mill House in Orvik, 60 seats, with rooms for the night."}; !slices.Equal(taken, want) {
		t.Errorf("the proposal's entries shown as decisions: %q, want %q\n%v", taken, want, Render(&s))
	}
	for _, it := range s.Archive.Items() {
		if it.Index == 1 && it.Tier != TierUserKey && strings.HasPrefix(it.Excerpt, "2.") {
			t.Errorf("the option taken is of tier %d, not the user's first", it.Tier)
		}
	}
}

func TestCorrectionCues(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]bool{
		"Dat verandert de kilometers: reken maar met zo'n 19.000 km per jaar.": true,
		"Your engineer visit is now Saturday 9 March, 08:00-13:00.":            true,
		"Die Übergabe ist jetzt am Freitag.":                                   true,
		"Actually, make it 150 people.":                                        true,
		"O teto dele agora é R$ 16 mil.":                                       true,
		"Jetzt ist die Übergabe am Freitag.":                                   true,
		"Now we need to talk about the budget.":                                false,
		"The venue holds 120 people.":                                          false,
		"We change the oil every 10,000 km.":                                   false,
	} {
		if got := readCues(text).correction; got != want {
			t.Errorf("readCues(%q).correction = %v, want %v", text, got, want)
		}
	}
}

// TestIrregularPast checks that a question in the present finds a fact
// told in the past tense of an irregular English verb.
func TestIrregularPast(t *testing.T) {
	t.Parallel()
	for _, tt := range [][2]string{
		{"How did Melanie feel while watching the meteor shower?", "I felt tiny and in awe of the universe."},
		{"What did she buy for the trip?", "I bought new hiking shoes."},
		{"Where did they swim last summer?", "We swam in the lake every morning."},
	} {
		q := NewQuery(tt[0], nil)
		if !sharesTerm(Terms(tt[1]), q.RequestTerms()) {
			t.Errorf("%q shares no term with %q: %q, %q", tt[0], tt[1], q.RequestTerms(), Terms(tt[1]))
		}
	}
}

// TestQueryScans checks the reads a request's terms cost: a question reads
// each of its terms' newest items in a scan of its own (their rarity is
// its ranking), any other request the newest items of all its terms in
// one scan.
func TestQueryScans(t *testing.T) {
	t.Parallel()
	question := NewQuery("When did Caroline start the pottery class?", nil)
	scans := QueryScans(question)
	if len(scans) != len(question.RequestTerms()) || len(scans) < 3 {
		t.Fatalf("a question of %d terms reads %d scans, want one a term", len(question.RequestTerms()), len(scans))
	}
	for _, s := range scans {
		if len(s.Terms) != 1 || s.Limit != TermLimit {
			t.Errorf("a question's scan %+v, want one term and limit %d", s, TermLimit)
		}
	}
	statement := NewQuery("Draft the weekly update for the owner about the pottery class.", nil)
	scans = QueryScans(statement)
	if len(scans) != 1 || len(scans[0].Terms) != len(statement.RequestTerms()) || scans[0].Limit != StatementLimit {
		t.Errorf("an instruction reads %+v, want one scan of its %d terms, limit %d", scans, len(statement.RequestTerms()), StatementLimit)
	}
}

// TestEstimateDF checks the estimate of how many items of an archive hold a
// term from a scan of the newest: the count where the scan read all there
// is, else the count scaled by the share of the history the scan spans.
func TestEstimateDF(t *testing.T) {
	t.Parallel()
	if got := estimateDF(7, 10, 999, 5000, false); got != 7 {
		t.Errorf("a scan that read all: %v, want 7", got)
	}
	// 48 of the newest, reaching back over the last 100 of 1,000 messages:
	// about ten times as many in the whole history.
	if got := estimateDF(48, 900, 999, 5000, true); got != 480 {
		t.Errorf("a full scan over a tenth of the history: %v, want 480", got)
	}
	if got := estimateDF(48, 990, 999, 300, true); got != 300 {
		t.Errorf("an estimate over the archive's size: %v, want the size 300", got)
	}
}

// TestRequestFindsANameSaidOnce checks that the entries a request's own
// words match keep relevance's share of the view whatever the other
// classes' shares add up to: a search for a name said once, among more of
// the user's statements than the view holds, shows the one entry that has
// it.
func TestRequestFindsANameSaidOnce(t *testing.T) {
	t.Parallel()
	var h []checkpoint.Message
	for i := range 200 {
		text := fmt.Sprintf("The crate for order %d weighs %d kg and ships from depot %d on Tuesday.", 4000+i, 10+i%37, i%9)
		if i == 61 {
			text = "Quarlotte signed the freight contract for the northern depot on ticket 3141."
		}
		h = append(h, checkpointtest.User(fmt.Sprintf("u%d", i), text),
			checkpointtest.Assistant(fmt.Sprintf("r%d", i), "Noted."))
	}
	h = append(h, checkpointtest.User("last", "Quarlotte"))
	s, _, err := Fold(NewState(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, q := s.Candidates("Quarlotte")
	full := FittedWeights()
	full.Statement.User, full.Statement.Correction = 1, 0.2
	for name, w := range map[string]*Weights{"fitted": nil, "user and corrections over the whole": full} {
		v := SelectViewWith(c, q, DefaultMaxTokens, w)
		found := false
		for _, sh := range v.Shown {
			found = found || strings.Contains(sh.Entry.Excerpt, "Quarlotte")
		}
		if !found {
			t.Errorf("%s: the view of %d entries for the request %q lacks the one entry that has it", name, len(v.Shown), "Quarlotte")
		}
	}
}
