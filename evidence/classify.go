package evidence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bucket is one of the four evidence buckets.
type Bucket int

// The buckets, in the order they are tried by the classifier.
const (
	Constraints Bucket = iota
	Decisions
	OpenWork
	RecentContext
	numBuckets
)

var bucketNames = [numBuckets]string{"constraints", "decisions", "open_work", "recent_context"}

func (b Bucket) String() string {
	if b < 0 || b >= numBuckets {
		return "unknown"
	}
	return bucketNames[b]
}

// DefaultKeywords are the keywords of the first three buckets;
// RecentContext takes everything else. Each entry is a word or a phrase of
// words, matched case-insensitively on whole words. Each list starts with
// the words docs/protocol.md lists, in its order; the words after them are more,
// as the contract allows ("more may"): English variants of the contract's
// words and their translations into German, French, Spanish, Italian,
// Portuguese, Dutch, Arabic and Hebrew, kept for what they did to retention
// in the offline evaluation (eval/README.md). Words of languages written
// without spaces (Japanese, Chinese) cannot match whole words and are not
// listed.
var DefaultKeywords = [3][]string{
	Constraints: {
		"must", "never", "always", "required", "cannot", "can't", "don't", "do not", "only", "at most", "at least", "deadline",
		// More: English.
		"mustn't", "can not", "no later than", "no more than", "not more than", "no fewer than", "not allowed", "forbidden", "prohibited", "mandatory", "requirement", "requirements", "non-negotiable", "no exceptions", "hard limit", "capped at", "at the latest", "due by",
		// More: German.
		"muss", "müssen", "musst", "müsst", "nie", "niemals", "immer", "nur", "darf nicht", "dürfen nicht", "höchstens", "mindestens", "spätestens", "verboten", "pflicht", "erforderlich", "frist",
		// More: French.
		"doit", "doivent", "devons", "devez", "jamais", "toujours", "seulement", "uniquement", "au plus", "au moins", "au plus tard", "obligatoire", "interdit", "date limite",
		// More: Spanish.
		"debe", "deben", "debemos", "nunca", "siempre", "sólo", "únicamente", "como máximo", "como mínimo", "obligatorio", "prohibido", "fecha límite",
		// More: Italian.
		"deve", "devono", "dobbiamo", "sempre", "soltanto", "al massimo", "almeno", "vietato", "scadenza",
		// More: Portuguese.
		"devem", "devemos", "apenas", "somente", "no máximo", "pelo menos", "obrigatório", "proibido", "prazo",
		// More: Dutch.
		"moet", "moeten", "nooit", "altijd", "alleen", "hoogstens", "minstens", "uiterlijk", "verplicht", "verboden",
		// More: Arabic.
		"يجب", "أبدا", "أبداً", "دائما", "دائماً", "فقط", "مطلوب", "لا يمكن", "ممنوع", "على الأقل", "على الأكثر", "الموعد النهائي", "لا نريد", "لا أريد",
		// More: Hebrew.
		"חייב", "חייבת", "חייבים", "אסור", "אף פעם", "תמיד", "רק", "לפחות", "לכל היותר", "לא יכול", "לא יכולים",
	},
	Decisions: {
		"decided", "agreed", "confirmed", "chose", "approved", "go with", "we'll use", "settled",
		// More: English.
		"going with", "let's use", "opted", "opt for", "signed off", "signs off", "locked in", "finalised", "finalized",
		// More: German.
		"entschieden", "beschlossen", "vereinbart", "festgelegt", "bestätigt", "genehmigt",
		// More: French.
		"décidé", "convenu", "choisi", "validé", "approuvé", "confirmé",
		// More: Spanish and Portuguese.
		"decidimos", "decidido", "acordamos", "acordado", "confirmado", "aprobado", "aprovado", "elegimos", "escolhemos", "combinado",
		// More: Italian.
		"deciso", "concordato", "confermato", "approvato", "scelto",
		// More: Dutch.
		"besloten", "afgesproken", "bevestigd", "goedgekeurd", "gekozen",
		// More: Arabic.
		"قررنا", "اتفقنا", "تمت الموافقة",
		// More: Hebrew.
		"החלטנו", "סיכמנו", "אושר",
	},
	OpenWork: {
		"todo", "next step", "follow up", "pending", "still need", "need to", "tbd", "open question",
		// More: English.
		"next steps", "action item", "action items", "open item", "open items", "open questions", "blocked on",
		// More: German.
		"nächster schritt", "nächste schritte", "offene frage", "noch zu tun",
		// More: French.
		"prochaine étape", "à faire", "question ouverte", "en attente",
		// More: Spanish, Portuguese and Italian.
		"próximo paso", "pendiente", "por hacer", "próximo passo", "pendente", "prossimo passo", "da fare", "in sospeso",
		// More: Dutch.
		"volgende stap", "nog te doen",
		// More: Arabic.
		"الخطوة التالية",
		// More: Hebrew.
		"הצעד הבא",
	},
}

// Classifier assigns text to a bucket by keywords. Build one with
// NewClassifier; the zero value classifies everything as RecentContext.
type Classifier struct {
	// byFirst maps a phrase's first word to the phrases starting with it.
	byFirst map[string][]phrase
	// maxWord is the length of the longest keyword word: longer words of a
	// text match none.
	maxWord int
}

type phrase struct {
	words  []string
	bucket Bucket
}

// NewClassifier compiles keyword lists for Constraints, Decisions and
// OpenWork. Words are split as the classifier splits text, so "follow-up"
// and "follow up" are the same phrase.
func NewClassifier(keywords [3][]string) *Classifier {
	c := &Classifier{byFirst: make(map[string][]phrase)}
	for b, list := range keywords {
		for _, kw := range list {
			words := splitWords(kw, nil)
			if len(words) == 0 {
				continue
			}
			c.byFirst[words[0]] = append(c.byFirst[words[0]], phrase{words: words, bucket: Bucket(b)})
			for _, w := range words {
				c.maxWord = max(c.maxWord, len(w))
			}
		}
	}
	return c
}

var defaultClassifier = NewClassifier(DefaultKeywords)

// FocusKeywords are the focus profile's keywords: DefaultKeywords, the
// forms people who type fast write without an apostrophe, and "may not"
// (which the seed profile left out because it files a whole message by one
// hedge; focus files each sentence by its own words). The seed profile keeps
// DefaultKeywords exactly.
var FocusKeywords = func() [3][]string {
	k := DefaultKeywords
	k[Constraints] = append(append([]string(nil), k[Constraints]...), "dont", "cant", "mustnt", "may not")
	k[Constraints] = append(k[Constraints], limitWords...)
	return k
}()

var focusClassifier = NewClassifier(FocusKeywords)

// limitWords name a limit or an obligation ("max 9 000 kr per person",
// "has to follow the old one", "el pedido mínimo es de 20 kilos"); the focus
// profile files them as constraints.
var limitWords = []string{
	"max", "maximum", "min", "minimum", "limit", "budget", "has to", "have to", "needs to",
	"maximal", "minimal", "höchstgrenze", "obergrenze",
	"maximale", "minimale", "plafond",
	"máximo", "mínimo", "tope", "presupuesto", "tiene que", "tienen que", "tengo que", "hay que",
	"massimo", "minimo", "tetto",
	"teto", "orçamento", "tem que", "têm que",
	"maximaal", "minimaal",
	"högst", "minst", "måste",
	"en fazla", "en az", "bütçe", "lazım", "gerek",
	"максимум", "минимум", "не больше", "не меньше", "бюджет", "нужно", "надо", "должен", "должны",
	// A bound after its value: "28% or less", "o menos", "oder weniger".
	"or less", "or fewer", "o menos", "ou menos", "ou moins", "oder weniger", "o meno", "of minder", "eller mindre",
	// Rules said of no one: "nobody works inside the flats on a Sunday".
	"nobody", "no one", "niemand", "personne ne", "nadie", "ninguém", "nessuno", "ingen", "никто",
}

// Classify returns the first bucket, in bucket order, that has a keyword
// anywhere in text; RecentContext when none has.
func (c *Classifier) Classify(text string) Bucket {
	if c == nil || len(c.byFirst) == 0 {
		return RecentContext
	}
	// Words are normalised into buf one at a time, without allocating: the
	// fold classifies every summarised message.
	var stack [64]byte
	buf := stack[:0]
	if c.maxWord+utf8.UTFMax > len(stack) {
		buf = make([]byte, 0, c.maxWord+utf8.UTFMax)
	}
	best := RecentContext
	for i := 0; i < len(text); {
		start, end := nextWord(text, i)
		if start < 0 {
			break
		}
		i = end
		w, ok := c.normalise(buf, text[start:end])
		if !ok || len(w) == 0 {
			continue
		}
		for _, p := range c.byFirst[string(w)] {
			if p.bucket >= best || !c.followedBy(buf, text, end, p.words[1:]) {
				continue
			}
			best = p.bucket
			if best == Constraints {
				return best
			}
		}
	}
	return best
}

// followedBy reports whether the words of text from byte i on start with
// want.
func (c *Classifier) followedBy(buf []byte, text string, i int, want []string) bool {
	for len(want) > 0 {
		start, end := nextWord(text, i)
		if start < 0 {
			return false
		}
		i = end
		w, ok := c.normalise(buf, text[start:end])
		if !ok {
			return false
		}
		if len(w) == 0 {
			continue // a lone quotation mark is no word
		}
		if string(w) != want[0] {
			return false
		}
		want = want[1:]
	}
	return true
}

// normalise writes word into buf as normaliseWord does (lower case,
// typographic apostrophes as ASCII ones, apostrophes around it dropped) and
// returns it; ok is false when it is longer than every keyword word, so
// that buf never grows past c.maxWord+utf8.UTFMax.
func (c *Classifier) normalise(buf []byte, word string) (w []byte, ok bool) {
	quotes := 0 // apostrophes not yet written: they count only inside the word
	for _, r := range word {
		if r == '\'' || r == '’' {
			if len(buf) > 0 {
				quotes++
			}
			continue
		}
		if len(buf)+quotes > c.maxWord {
			return nil, false
		}
		for ; quotes > 0; quotes-- {
			buf = append(buf, '\'')
		}
		switch {
		case 'A' <= r && r <= 'Z':
			buf = append(buf, byte(r+'a'-'A'))
		case r < utf8.RuneSelf:
			buf = append(buf, byte(r))
		default:
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		}
	}
	return buf, len(buf) <= c.maxWord
}

// nextWord returns the bounds of the first word of s at or after byte i, or
// -1, -1 when there is none. Words are runs of isWordRune.
func nextWord(s string, i int) (start, end int) {
	start = -1
	for i < len(s) {
		c := s[i]
		size := 1
		var isWord bool
		if c < utf8.RuneSelf {
			isWord = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '\''
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			isWord = isWordRune(r)
		}
		switch {
		case isWord && start < 0:
			start = i
		case !isWord && start >= 0:
			return start, i
		}
		i += size
	}
	if start < 0 {
		return -1, -1
	}
	return start, len(s)
}

// isWordRune reports whether r belongs to a word: letters, digits and
// apostrophes (so that "can't" is one word).
func isWordRune(r rune) bool {
	return r == '\'' || r == '’' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// splitWords appends the lower-cased words of s to dst. Typographic
// apostrophes become ASCII ones, and apostrophes that open or close a word
// (quotation marks) are dropped.
func splitWords(s string, dst []string) []string {
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := s[start:end]
		start = -1
		w = normaliseWord(w)
		if w != "" {
			dst = append(dst, w)
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			isWord := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '\''
			if isWord {
				if start < 0 {
					start = i
				}
			} else {
				flush(i)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
		} else {
			flush(i)
		}
		i += size
	}
	flush(len(s))
	return dst
}

func normaliseWord(w string) string {
	if strings.Contains(w, "’") {
		w = strings.ReplaceAll(w, "’", "'")
	}
	w = strings.Trim(w, "'")
	if w == "" {
		return ""
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(w)
		}
	}
	return w
}
