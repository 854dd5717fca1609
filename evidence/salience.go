package evidence

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
)

// What a fact looks like. The focus view shows first the sentences of a
// conversation that look most like what a later request needs: a rule, a
// decision, a correction, a specific thing named, a lasting trait of the
// speaker or of someone they speak for. Questions, requests to the
// assistant, chatter and lines of pasted documents weigh less. What each
// trait is lives in features.go; how much it weighs in the fitted table
// (weights.go).

// The shape of the specific-things feature (rarity.points): the first rare
// thing a sentence names counts specificPoints0, each further one
// specificStep less, down to 2; a sentence that names one thing is a fact,
// one that names ten is a table row.
const (
	specificPoints0 = 12
	specificStep    = 3
)

// MaxWeight bounds Item.Weight: an entry's weight is its chance of being
// one a later request needs, in ten thousandths.
const MaxWeight = 10000

// The bands of the user's tiers, as chances. The tiers only split the
// index's scans (each tier's oldest, newest and heaviest are candidates);
// the view orders the user's three tiers together, by weight. The bands
// are set so that the heaviest scans reach further down the user's
// statements than one list would.
const (
	keyChance  = 0.9
	factChance = 0.75
)

// scoreItems sets the tier, weight and traits of the items of one message,
// which are all of its items, by the weights w: the chance that each is one
// a later request needs, from its features, the specific things it names
// weighed by how rare each kind is in the conversation so far (rare).
func scoreItems(items []Item, rare *rarity, w *Weights) {
	scoreItemsFeatures(items, nil, rare, w, nil)
}

// scoreItemsFeatures is scoreItems, calling with (when not nil) with each
// item's features. sentences holds, for each item that is a clause cut out of
// a longer sentence, that sentence ("" for the others; nil for none).
func scoreItemsFeatures(items []Item, sentences []string, rare *rarity, w *Weights, with func(i int, v *Vector)) {
	w = weightsOr(w)
	paste := pastedLines(items)
	vs := make([]Vector, len(items))
	names := make([]named, len(items))
	points := make([]int, len(items))
	order := make([]int, len(items))
	base := make([]float64, len(items))
	for i := range items {
		it := &items[i]
		names[i] = specifics(it.Excerpt)
		points[i] = rare.points(names[i])
		s := readSentence(it.Excerpt)
		vs[i] = s.features(it.Role, it.Bucket, it.Excerpt, it.Index, i, len(items), paste[i], points[i])
		if i < len(sentences) && sentences[i] != "" {
			vs[i].addSentence(sentences[i])
		}
		base[i] = vs[i].Dot(&w.Features)
		order[i] = i
	}
	// Each entry's rank in its message by the rest of its weight: the
	// best sentence of a paragraph keeps its weight, the tenth line of a
	// pasted document does not.
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(base[y], base[x]) })
	for rank, i := range order {
		vs[i][FeatRank] = float64(min(rank, rankScale)) / rankScale
	}
	for i := range items {
		it, v := &items[i], &vs[i]
		if with != nil {
			with(i, v)
		}
		p := sigmoid(base[i] + v[FeatRank]*w.Features[FeatRank])
		chatter := v[FeatChatter] > 0
		it.Tier = tierOf(it.Role, it.Bucket, it.Excerpt, p, v[FeatProposal] > 0, chatter)
		it.Weight = weightOfChance(p)
		it.Traits = packTraits(names[i], points[i], chatter) | it.Traits&(3<<traitsCutFrom)
		if v[FeatUserCorrection] > 0 && !chatter && it.Tier != TierContext {
			// A view must see the user's corrections to leave out what
			// they correct, and to show them where it cannot tell what
			// they correct: they go in the tier scanned first.
			it.Tier = TierUserKey
			it.Traits |= traitsCorrection
		}
	}
}

// tierOf ranks an entry by its role, bucket and chance p.
func tierOf(role checkpoint.Role, b Bucket, text string, p float64, proposal, chatter bool) Tier {
	if chatter {
		return TierContext
	}
	switch role {
	case checkpoint.RoleUser:
		st := statement(text) || b == Constraints && !question(text)
		switch {
		case st && p >= keyChance:
			return TierUserKey
		case st && p >= factChance:
			return TierUserFact
		case st, p >= keyChance:
			return TierUserStatement
		}
	case checkpoint.RoleAssistant:
		if b != RecentContext || p >= keyChance || proposal {
			return TierAssistantRule
		}
	}
	return TierContext
}

// pasteLines is the least number of entries (its lines and sentences) of
// a message that is a pasted document when most of them end without a
// sentence's end.
const pasteLines = 6

// pastedLines reports which items of one message are lines of a pasted
// document (a datasheet, an invoice, a log, an API's reference): in a
// message of pasteLines entries or more, most of which end without a
// sentence's end, those that do and name a number or an identifier (what
// makes a line look like a fact). A line without one, a bullet and a line
// with rule or limit words stay what they are: rules and requirements
// typed one a line are written so too.
func pastedLines(items []Item) []bool {
	out := make([]bool, len(items))
	if len(items) < pasteLines {
		return out
	}
	open := 0
	for i := range items {
		if !endsSentence(items[i].Excerpt) {
			open++
		}
	}
	if 2*open <= len(items) {
		return out
	}
	for i := range items {
		t := strings.TrimSpace(items[i].Excerpt)
		n := specifics(t)
		out[i] = !endsSentence(t) && n[kindNumber]+n[kindID] > 0 && items[i].Bucket != Constraints && !bullet(t)
	}
	return out
}

// endsSentence reports whether text ends as a sentence does, by the
// segmenter's marks (segment.go): a full stop, a question or exclamation
// mark, an ellipsis, or their equivalents in other scripts, closing quotes
// and round or square brackets aside.
func endsSentence(text string) bool {
	text = strings.TrimRight(text, " \t\"'»”’)]")
	r, _ := utf8.DecodeLastRuneInString(text)
	return r == '.' || r == '!' || r == '?' || r == '…' || isDanda(r) || isCJKStop(r)
}

// bullet reports whether text opens as an item of a list does: "- ",
// "* ", "• ", or a number and "." or ")" ("2. The dining room seats 38").
func bullet(text string) bool {
	if strings.HasPrefix(text, "- ") || strings.HasPrefix(text, "* ") || strings.HasPrefix(text, "• ") {
		return true
	}
	i := 0
	for i < len(text) && i < 3 && '0' <= text[i] && text[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(text) && (text[i] == '.' || text[i] == ')') && text[i+1] == ' '
}

// tableRow reports whether text is a row of a pasted table, a sheet or a
// datasheet: three cells or more, set apart by "|", tabs or runs of
// spaces ("Voc 318 V  Isc 13.9 A  Pmax 445 W").
func tableRow(text string) bool {
	text = strings.Trim(text, " \t|")
	cells := 1 + strings.Count(text, "|") + strings.Count(text, "\t")
	for i := 0; i+1 < len(text); i++ {
		if text[i] == ' ' && text[i+1] == ' ' {
			cells++
			for i+1 < len(text) && text[i+1] == ' ' {
				i++
			}
		}
	}
	return cells >= 3
}

// question reports whether text asks something: it ends with a question
// mark, or (as people who type fast write) opens with a question word that
// is not a label.
func question(text string) bool {
	t := strings.TrimRightFunc(text, isCloser)
	if strings.HasSuffix(t, "?") || strings.HasSuffix(t, "？") || strings.HasSuffix(t, "؟") {
		return true
	}
	start, end := nextWord(text, 0)
	// A question word before a colon labels what follows ("When: Friday
	// at 9"), as in a list of the things settled.
	label := strings.HasPrefix(strings.TrimLeft(text[max(end, 0):], " "), ":")
	return start >= 0 && questionWords[normaliseWord(text[start:end])] && !label
}

// questionWords open a question in the languages the keywords cover.
var questionWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`what whats what's how who whom whose when where why which should shall is are does did can could would will
was wie wer wann wo warum welche welcher soll sollen kann können
que quoi comment qui quand où pourquoi quel quelle est-ce
qué cómo quién cuándo dónde cuál
cosa come chi quando dove perché quale
quem onde qual
wat hoe wanneer waar waarom welke
vad hur vem när var varför vilken
nasıl kim nerede neden hangi
что как кто когда где почему какой`) {
		m[w] = true
	}
	return m
}()

var secondPerson = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`you you'll you're you've your can't
du dich dir dein deine kannst könntest
tu vous ton ta tes votre pourrais pourriez peux
usted puedes podrías
puoi potresti
você podes
jij je kun kunt jouw
sen sana senin
ты вы тебя вас можешь
du dig kan`) {
		m[w] = true
	}
	delete(m, "can't")
	delete(m, "kan")
	delete(m, "je") // also French "I"
	return m
}()

var negationWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`no not never nothing none nobody don't doesn't didn't isn't aren't won't can't cannot dont doesnt cant wont isnt without
nicht kein keine keinen nie nichts ohne
pas ne jamais rien aucun aucune sans
no nunca nada ningún ninguna sin
non mai niente nessun nessuna senza
não nunca nada nenhum nenhuma sem
niet geen nooit niets zonder
inte ingen inget aldrig utan
değil yok hiç asla olmaz
не нет никогда ничего без
नहीं ना मत
nahi nahin mat
안 못 없어요 없다 않아요`) {
		m[w] = true
	}
	return m
}()

// unspacedNegations are negative forms of Japanese, Chinese and Korean,
// found inside unspaced words.
var unspacedNegations = []string{"ない", "ません", "不", "沒", "没", "別", "别", "없", "않", "못"}

var proposalWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`suggest suggestion recommend recommendation propose proposal
vorschlag empfehle empfehlung schlage
suggère suggestion recommande recommandation propose proposition conseille
sugiero sugerencia recomiendo recomendación propongo propuesta
suggerisco consiglio raccomando raccomandazione propongo proposta
sugiro sugestão recomendo recomendação proponho proposta
stel voorstel aanbeveling advies adviseer
föreslår förslag rekommenderar
öneririm önerim öneri tavsiye tavsiyem
предлагаю предложение рекомендую
salah sujhav`) {
		m[w] = true
	}
	return m
}()

var unspacedProposals = []string{"建议", "建議", "提案", "おすすめ", "お勧め", "提案", "제안", "추천"}

// cues are what salience reads of a sentence's words.
type cues struct {
	correction bool // it revises something said before
	negated    bool // a negation: a limit or a preference
	proposing  bool // it proposes something
	requesting bool // a request to the assistant
	addressing bool // it speaks to the assistant
}

// readCues reads text's words once for every cue.
func readCues(text string) cues { return readCuesOf(splitWords(text, nil)) }

// readCuesOf reads the cues of a sentence's words.
func readCuesOf(words []string) cues {
	var c cues
	for i, w := range words {
		c.correction = c.correction || correctionWords[w] || i+1 < len(words) && correctionPhrases[w+" "+words[i+1]]
		c.negated = c.negated || negationWords[w]
		c.proposing = c.proposing || proposalWords[w]
		c.requesting = c.requesting || requestWords[w]
		c.addressing = c.addressing || secondPerson[w]
		if hasUnspaced(w) {
			c.correction = c.correction || containsAny(w, unspacedCorrections)
			c.negated = c.negated || containsAny(w, unspacedNegations)
			c.proposing = c.proposing || containsAny(w, unspacedProposals)
		}
	}
	return c
}

// correction reports whether text revises something said before ("Actually,
// make it 150 people.").
func correction(text string) bool { return readCues(text).correction }

func containsAny(w string, parts []string) bool {
	for _, p := range parts {
		if strings.Contains(w, p) {
			return true
		}
	}
	return false
}

// header reports whether text is written in capitals only, as the
// headings of pasted documents are.
func header(text string) bool {
	letters, upper := 0, 0
	for _, r := range text {
		if unicode.IsLetter(r) {
			letters++
			if unicode.IsUpper(r) {
				upper++
			}
		}
	}
	return letters >= 8 && upper == letters
}

// specifics counts, by kind, the specific things text names: words with a
// digit (numbers), acronyms and capitalised words that do not open the
// sentence (names; "I" and its contractions aside), identifiers (words
// joined by "_", "/", "@" or "."), days and months (dates), and in text
// written without spaces the runs of digits (numbers) and of Latin
// capitals (names).
func specifics(text string) named {
	var n named
	first := true
	for i := 0; i < len(text); {
		start, end := nextWord(text, i)
		if start < 0 {
			break
		}
		// A word joined to the next by an identifier's punctuation is one
		// thing: "fx/rates.py", "hello@example.com", "last_seen_at".
		for end < len(text)-1 && strings.IndexByte("_/@.-", text[end]) >= 0 {
			s2, e2 := nextWord(text, end+1)
			if s2 != end+1 {
				break
			}
			end = e2
		}
		i = end
		w := text[start:end]
		if hasUnspaced(w) {
			digits, capitals := specificRuns(w)
			n[kindNumber] += digits
			n[kindName] += capitals
			first = false
			continue
		}
		upper, digit, joined := 0, false, false
		for _, r := range w {
			switch {
			case unicode.IsDigit(r):
				digit = true
			case unicode.IsUpper(r):
				upper++
			case r == '_' || r == '/' || r == '@' || r == '.':
				joined = true
			}
		}
		r, _ := utf8.DecodeRuneInString(w)
		switch {
		case joined:
			n[kindID]++
		case digit:
			n[kindNumber]++
		case upper >= 2 && upper == countLetters(w), // "EU", "SAP"
			!first && unicode.IsUpper(r) && !pronounI(w):
			n[kindName]++
		case calendarWords[normaliseWord(w)]:
			n[kindDate]++
		}
		first = false
	}
	return n
}

func countLetters(w string) int {
	n := 0
	for _, r := range w {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}
