package evidence

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/recallhq/recall/checkpoint"
)

// Accepted proposals. People take what the assistant proposed in few
// words: "ok, the second one", "yes, do that", "la segunda", "go with
// option B". Then the assistant's words are the user's decision, and they
// weigh as one: when the fold summarises such a reply, the entries of the
// assistant's message before it that the reply took (the option it names,
// or, when it names none, what the message proposed) move to the user's
// first tier, as decisions. The reply itself says nothing a later request
// needs, and stays the chatter it is.

// maxAcceptWords bounds the words of a reply that accepts: a longer one
// says more than yes.
const maxAcceptWords = 8

// acceptance reads a user's reply: whether its first sentence, or the
// first part of it before a comma, accepts what came before ("ok, the
// second one", "la 2, obvio, …"), which option it names (1 for the first,
// …; 0 for none), and the words it names the option by otherwise ("ok,
// Calm Canine then").
func acceptance(text string) (ok bool, option int, names []string) {
	first := text
	if segs := Segment(text); len(segs) > 0 {
		first = text[segs[0][0]:segs[0][1]]
	}
	if question(first) {
		return false, 0, nil
	}
	if ok, option, names := accepts(first); ok {
		return ok, option, names
	}
	if head, _, found := strings.Cut(first, ","); found {
		return accepts(head)
	}
	return false, 0, nil
}

// accepts reads one part of a reply for acceptance.
func accepts(text string) (ok bool, option int, names []string) {
	words := splitWords(text, nil)
	if len(words) == 0 || len(words) > maxAcceptWords {
		return false, 0, nil
	}
	yes := false
	for i, w := range words {
		phrase := i+1 < len(words) && acceptPhrases[w+" "+words[i+1]] || i > 0 && acceptPhrases[words[i-1]+" "+w]
		switch {
		case acceptWords[w] || phrase:
			yes = true
		case ordinalOf(w) > 0:
			option = cmp.Or(option, ordinalOf(w))
		case labelOf(w) > 0 && (i == 0 || optionWords[words[i-1]] || acceptFiller[words[i-1]] || acceptWords[words[i-1]]):
			// "option B", "la 2", "ok B".
			option = cmp.Or(option, labelOf(w))
		case optionWords[w] || acceptFiller[w]:
		case negationWords[w] || requestWords[w] && len(words) > 2 || len(Terms(w)) == 0:
			// "ok but not that one", "ok where are we": it says more
			// than yes.
			return false, 0, nil
		default:
			names = append(names, w)
		}
	}
	// A reply that names something else than the option says more than
	// yes ("ok where are we"), unless it names it with few words after a
	// yes ("ok, Calm Canine then").
	if len(names) > 2 || len(names) > 0 && !yes {
		return false, 0, nil
	}
	return yes || option > 0, option, names
}

// acceptFiller are the words a reply that accepts may hold besides yes and
// the option it names: "ok, let's take the second one then".
var acceptFiller = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`the one that it this then let's lets let us take do go with for we'll i'll i we so
die den das nehmen wir dann la le el lo los las una uno la prendo prendiamo fico com a o de het die nemen`) {
		m[w] = true
	}
	return m
}()

// acceptWords and acceptPhrases say yes to a proposal.
var acceptWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`ok okay yes yeah yep sure perfect great agreed deal fine alright sounds lgtm
ja genau passt gut einverstanden prima oui d'accord parfait entendu vale perfecto dale listo claro
sì va perfetto sim beleza combinado perfeito fechado akkoord prima goed okej evet tamam olur да давай хорошо ок`) {
		m[w] = true
	}
	return m
}()

var acceptPhrases = map[string]bool{"go with": true, "go for": true, "do that": true, "let's do": true, "let's go": true,
	"machen wir": true, "nehmen wir": true, "de acuerdo": true, "va bene": true, "pode ser": true, "doen we": true, "vamos de": true, "vamos con": true}

// optionWords name an option before its label: "option B", "plan 2".
var optionWords = map[string]bool{"option": true, "plan": true, "variant": true, "choice": true, "opción": true, "opcion": true,
	"opção": true, "opcao": true, "variante": true, "opzione": true, "optie": true, "alternativ": true, "seçenek": true, "вариант": true}

// ordinalOf returns the position an ordinal word names, or 0.
func ordinalOf(w string) int {
	for n, words := range ordinals {
		for _, o := range words {
			if w == o {
				return n + 1
			}
		}
	}
	return 0
}

var ordinals = [][]string{
	{"first", "1st", "erste", "ersten", "erster", "première", "premier", "primera", "primero", "prima", "primo", "primeira", "eerste", "första", "birinci", "первый", "первая", "первое"},
	{"second", "2nd", "zweite", "zweiten", "zweiter", "deuxième", "seconde", "segunda", "segundo", "seconda", "secondo", "tweede", "andra", "ikinci", "второй", "вторая", "второе"},
	{"third", "3rd", "dritte", "dritten", "dritter", "troisième", "tercera", "tercero", "terza", "terzo", "terceira", "derde", "tredje", "üçüncü", "третий", "третья", "третье"},
	{"fourth", "4th", "vierte", "vierten", "quatrième", "cuarta", "cuarto", "quarta", "quarto", "vierde", "fjärde", "dördüncü", "четвёртый", "четвертый"},
}

// labelOf returns the position an option's label names ("2", "b"), or 0.
func labelOf(w string) int {
	switch {
	case len(w) == 1 && '1' <= w[0] && w[0] <= '9':
		return int(w[0] - '0')
	case len(w) == 1 && 'a' <= w[0] && w[0] <= 'f':
		return int(w[0]-'a') + 1
	}
	return ordinalOf(w)
}

// optionNumber returns the position an entry's text gives itself as an
// option of a list ("2. …", "B) …", "**Option B**: …"), or 0.
func optionNumber(text string) int {
	t := strings.TrimLeft(text, "#*_ \t")
	words := splitWords(t, nil)
	if len(words) == 0 {
		return 0
	}
	if optionWords[words[0]] && len(words) > 1 {
		return labelOf(words[1])
	}
	// "2." "2)" "b)" "B." at the start.
	first := words[0]
	rest := strings.TrimLeftFunc(t[len(first):], func(r rune) bool { return r == '*' || r == '_' })
	if len(first) == 1 && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, ")") || strings.HasPrefix(rest, ":")) {
		if n := labelOf(strings.ToLower(first)); n > 0 && (unicode.IsDigit(rune(first[0])) || unicode.IsUpper(rune(t[0])) || strings.HasPrefix(rest, ")")) {
			return n
		}
	}
	return 0
}

// promoteAccepted finds, among msgs (the history's messages from index
// from), the user's replies that accept a proposal, and moves the entries
// of the assistant's message before each that the reply took to the
// user's first tier, as decisions, in the archive a.
func promoteAccepted(ctx context.Context, a ArchiveStore, msgs []checkpoint.Message, from int) error {
	for i := range msgs {
		m := &msgs[i]
		if m.Role != checkpoint.RoleUser || !m.IsConversation() {
			continue
		}
		ok, option, names := acceptance(m.Text)
		if !ok {
			continue
		}
		proposal := from + i - 1
		if i > 0 && !msgs[i-1].Evidential() || proposal < 0 {
			continue // what it answers is not evidence (a tool call, a status)
		}
		lists, err := a.Scan(ctx, []Scan{{Tier: Any, Bucket: Any, Role: checkpoint.RoleAssistant, After: proposal - 1, Indexes: []int{proposal}, Order: Oldest, Limit: acceptScanLimit}})
		if err != nil {
			return err
		}
		took := accepted(lists[0], option, names)
		if len(took) == 0 {
			continue
		}
		keys := make([]string, len(took))
		for j := range took {
			// An archive need not give items back with their keys: the
			// key is the excerpt's.
			took[j].Key = restatementKey(took[j].Excerpt)
			keys[j] = took[j].Key
			promote(&took[j])
		}
		if _, err := a.Replace(ctx, keys, took); err != nil {
			return err
		}
	}
	return nil
}

// acceptScanLimit bounds the entries of a proposal read.
const acceptScanLimit = 64

// accepted returns the entry of a proposal (one assistant message's, in
// order) that a reply took: the one that gives itself the number of the
// option the reply names; among options, the one option that holds the
// words the reply names it by; or, for a reply that names none (a
// message that proposes one thing), its first sentence that proposes.
func accepted(items []Item, option int, names []string) []Item {
	var options []Item
	for _, it := range items {
		if n := optionNumber(it.Excerpt); n > 0 {
			if n == option {
				return []Item{it}
			}
			options = append(options, it)
		}
	}
	if len(names) > 0 {
		var found []Item
		for _, it := range items {
			words := splitWords(it.Excerpt, nil)
			if sharesAll(words, names) {
				found = append(found, it)
			}
		}
		if len(found) == 1 {
			return found
		}
	}
	if option > 0 || len(options) > 0 {
		return nil // options, and the reply names none of them
	}
	for _, it := range items {
		if readCues(it.Excerpt).proposing || proposes(it.Excerpt) {
			return []Item{it}
		}
	}
	return nil
}

// sharesAll reports whether words hold every one of names.
func sharesAll(words, names []string) bool {
	for _, n := range names {
		if !slices.Contains(words, n) {
			return false
		}
	}
	return true
}

// proposes reports whether text opens as a proposal does: "I'd book…",
// "I would…", "my advice is…".
func proposes(text string) bool {
	words := splitWords(text, nil)
	if len(words) < 2 {
		return false
	}
	return proposalOpeners[words[0]] || proposalOpeners[words[0]+" "+words[1]]
}

var proposalOpeners = map[string]bool{"i'd": true, "i would": true, "my advice": true, "my suggestion": true, "we could": true,
	"ich würde": true, "mein vorschlag": true, "je propose": true, "je suggère": true, "yo haría": true, "te recomiendo": true,
	"io farei": true, "eu faria": true, "mijn advies": true, "ik zou": true, "jag skulle": true}

// promote makes an assistant's entry the user took weigh as the user's
// decision.
func promote(it *Item) {
	it.Tier = TierUserKey
	it.Bucket = Decisions
	if it.Traits&traitsFitted == 0 {
		it.Weight, it.Traits = 0, it.Traits&^(1<<16)|traitsFitted // an entry weighed before the fitted table
	}
	it.Weight = max(it.Weight, weightOfChance(keyChance))
	it.Traits &^= traitsChatter
}
