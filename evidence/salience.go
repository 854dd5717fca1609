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
// conversation that look most like facts: a user's statement that names
// specific things (amounts, dates, times, names, versions, identifiers),
// states a rule, a decision or open work, or corrects what was said before.
// Questions, requests to the assistant, acknowledgements and lines of
// pasted documents weigh less. The weights were chosen on the development
// fixtures and on long conversations written outside the project
// (eval/README.md).

// The salience score's parts.
const (
	// specificPoints0 is what the first specific thing a sentence names
	// adds; each further one adds less: a sentence that names one thing is
	// a fact, one that names ten is a table row.
	specificPoints0 = 12
	// specificStep: each further specific thing adds this much less, down
	// to 2.
	specificStep = 3
	// keywordPoints: a constraint or decision keyword; openWorkPoints: an
	// open-work one.
	keywordPoints  = 8
	openWorkPoints = 6
	// ruleBonus: a user's sentence with rule or limit words ("never",
	// "must", "no more than", "lenen willen we niet") adds this to its
	// keyword, so that a plain rule keeps its place before sentences that
	// only name more things.
	ruleBonus = 6
	// correctionPoints: a cue that it revises something said before.
	correctionPoints = 10
	// negationPoints: a negation ("no drilling", "doesn't eat meat") states
	// a limit or a preference.
	negationPoints = 6
	// questionPenalty: a question or a request to the assistant.
	questionPenalty = 14
	// addressPenalty: a sentence that talks to the assistant ("can you…",
	// "kannst du…") is about the work, not the world.
	addressPenalty = 6
	// fragmentPoints is what a sentence of no text at all would lose,
	// falling to nothing at fragmentBytes: a short one is mostly a reply
	// whose sense is in the question it answers ("90 min.", "option 2",
	// "ok, Tuesday then"), and on the conversations we measured, facts
	// were in longer sentences, even for the room they take. (The penalty
	// for every 50 bytes that this replaced kept fewer facts.)
	fragmentPoints = 25
	fragmentBytes  = 70
	// perRankPenalty: each better sentence of the same message costs a
	// sentence this much, so that one pasted document does not fill the
	// view.
	perRankPenalty = 3
	// tablePenalty: a row of a pasted table (tableRow) or a line of a
	// pasted document (pastedLines) names many things and states none of
	// the user's facts; a row in a pasted document loses it twice.
	tablePenalty = 36
	// earlyPoints is what a sentence of the conversation's first message
	// adds, falling to nothing at message earlyMessages.
	earlyPoints   = 10
	earlyMessages = 100
)

// densityScale and densityFrame turn a score into a weight,
// score × densityScale ÷ (excerpt bytes + densityFrame): a mild preference
// for sentences that take less room (each entry has its frame).
const (
	densityScale = 10000
	densityFrame = 1000
)

// assistantPlainDivisor divides the weight of an assistant's sentence that
// proposes nothing.
const assistantPlainDivisor = 4

// The score bands of the user's tiers.
const (
	keyScore  = 30
	factScore = 16
)

// MaxWeight bounds Item.Weight.
const MaxWeight = 10000

// scoreItems sets the tier and weight of the items of one message, which
// are all of its items: a sentence's own salience (the specific things it
// names weighed by how rare each kind is in the conversation so far, rare),
// less perRankPenalty for each sentence of the message that scores better.
func scoreItems(items []Item, rare *rarity) {
	order := make([]int, len(items))
	scores := make([]int, len(items))
	proposals := make([]bool, len(items))
	frags := make([]int, len(items))
	names := make([]named, len(items))
	specific := make([]int, len(items))
	paste := pastedLines(items)
	for i := range items {
		order[i] = i
		var c cues
		names[i] = specifics(items[i].Excerpt)
		specific[i] = rare.points(names[i])
		scores[i], c = salience(items[i].Role, items[i].Bucket, items[i].Excerpt)
		scores[i] += specific[i]
		if paste[i] {
			scores[i] -= tablePenalty
		}
		// A conversation's first messages set it up: who, what, where,
		// the limits. What they say weighs a little more.
		scores[i] += max(0, earlyPoints-earlyPoints*items[i].Index/earlyMessages)
		proposals[i] = items[i].Role == checkpoint.RoleAssistant && c.proposing
		// A short sentence is as much a statement as a long one (its
		// tier), but less often a fact (its rank and weight).
		frags[i] = fragment(items[i].Excerpt)
		scores[i] -= frags[i]
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(scores[y], scores[x]) })
	for rank, i := range order {
		s := scores[i] - perRankPenalty*rank
		items[i].Tier = tierOf(items[i].Role, items[i].Bucket, items[i].Excerpt, s+frags[i], proposals[i])
		// The assistant's facts are what it proposed and the user took;
		// the rest of what it says restates, explains or asks.
		plain := items[i].Role == checkpoint.RoleAssistant && !proposals[i]
		items[i].Weight = weightOf(s, len(items[i].Excerpt), plain)
		items[i].Traits = packTraits(names[i], specific[i], plain)
	}
}

// weightOf returns the weight of an entry of n bytes whose score is s: the
// score for the room the entry takes, divided for an assistant's sentence
// that proposes nothing (plain), within [0, MaxWeight].
func weightOf(s, n int, plain bool) int {
	w := s * densityScale / (n + densityFrame)
	if plain {
		w /= assistantPlainDivisor
	}
	return max(0, min(MaxWeight, w))
}

// tierOf ranks an entry by its role, bucket and score.
func tierOf(role checkpoint.Role, b Bucket, text string, score int, proposal bool) Tier {
	switch role {
	case checkpoint.RoleUser:
		st := statement(text) || b == Constraints && !question(text)
		switch {
		case st && score >= keyScore:
			return TierUserKey
		case st && score >= factScore:
			return TierUserFact
		case st, score >= keyScore:
			return TierUserStatement
		}
	case checkpoint.RoleAssistant:
		if b != RecentContext || score >= keyScore || proposal {
			return TierAssistantRule
		}
	}
	return TierContext
}

// salience scores how much text, one sentence, looks like a fact worth
// keeping, besides the specific things it names (rarity.go), and returns
// the cues it read.
func salience(role checkpoint.Role, b Bucket, text string) (int, cues) {
	s := 0
	switch b {
	case Constraints, Decisions:
		s += keywordPoints
	case OpenWork:
		s += openWorkPoints
	}
	c := readCues(text)
	if c.correction {
		s += correctionPoints
	}
	if c.negated {
		s += negationPoints
	}
	if role == checkpoint.RoleAssistant && c.proposing {
		s += keywordPoints
	}
	if role == checkpoint.RoleUser && b == Constraints && !question(text) {
		s += ruleBonus
	}
	if role == checkpoint.RoleUser {
		// "Please never…", "please keep them out of it, they only…": a
		// request that states a rule or a limit is the user's standing
		// instruction, not a request of the moment.
		if c.requesting && b != Constraints || question(text) {
			s -= questionPenalty
		}
		if c.addressing {
			s -= addressPenalty
		}
	}
	if header(text) {
		s -= 2 * specificPoints0
	}
	if tableRow(text) {
		s -= tablePenalty
	}
	return s, c
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

// fragment is what text, one sentence, loses for being short: up to
// fragmentPoints.
func fragment(text string) int {
	return fragmentPoints * max(0, fragmentBytes-len(text)) / fragmentBytes
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
func readCues(text string) cues {
	var c cues
	words := splitWords(text, nil)
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
