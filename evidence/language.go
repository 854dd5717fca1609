package evidence

import (
	"strings"
	"unicode"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/dutch"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/french"
	"github.com/blevesearch/snowballstem/german"
	"github.com/blevesearch/snowballstem/italian"
	"github.com/blevesearch/snowballstem/portuguese"
	"github.com/blevesearch/snowballstem/russian"
	"github.com/blevesearch/snowballstem/spanish"
	"github.com/blevesearch/snowballstem/swedish"
	"github.com/blevesearch/snowballstem/turkish"
)

// A language recall stems search terms in: its stop words (left out of
// terms) and its Snowball stemmer, so that "Busse" finds "Bussen" and
// "filing" finds "filed".
type language struct {
	name string
	stop map[string]bool
	stem func(*snowballstem.Env) bool
}

// languages are the languages recall tells apart, by their stop words.
// Text in none of them (Hindi, Hinglish, Korean, Japanese, Chinese, …)
// keeps its words as they are.
var languages = []*language{
	newLanguage("english", english.Stem, `a an the and or but if then so of to in on at by for with from into onto about as is are was were be been being am
it its this that these those there here what which who whom whose when where why how
i me my mine we us our ours you your yours he him his she her they them their theirs one
do does did done doing have has had having will would shall should can could may might must
not no yes ok okay also just very too more most less much many some any all each every other
than up down out over under again further once same own only both few such nor let`),
	newLanguage("german", german.Stem, `der die das den dem des ein eine einen einem einer eines und oder aber doch wenn dann
ist sind war waren bin bist sein wird werden wurde hat haben hatte ich du er sie es wir ihr mich dich sich uns euch
mein dein unser euer ihr zu mit von auf für an in im am aus bei nach vor über unter um nicht auch noch schon nur
wie was wer wo so da dass ob als kein keine man mal ja nein`),
	newLanguage("french", french.Stem, `le la les un une des du de et ou mais donc car si est sont était être avoir ai as a avons avez ont
je tu il elle nous vous ils elles me te se lui leur mon ma mes ton ta tes son sa ses notre votre nos vos
pour avec dans sur sous par pas ne plus que qui quoi dont où ce cette ces au aux en y très aussi bien oui non`),
	newLanguage("spanish", spanish.Stem, `el la los las un una unos unas y o pero si es son era ser estar está están fue he ha han hay
yo tú él ella nosotros vosotros ellos ellas me te se le les lo mi mis tu tus su sus nuestro nuestra
para con en por de del al a que qué quien como cuando donde no sí muy también ya este esta estos estas ese esa`),
	newLanguage("italian", italian.Stem, `il lo la i gli le un uno una e o ma se è sono era essere avere ho hai ha abbiamo hanno
io tu lui lei noi voi loro mi ti si ci vi mio mia miei mie tuo tua suo sua nostro nostra
per con in su da di del della dei delle al alla a che chi come quando dove non sì molto anche già questo questa`),
	newLanguage("portuguese", portuguese.Stem, `o a os as um uma uns umas e ou mas se é são era ser estar está estão foi tem têm há
eu tu ele ela nós vós eles elas me te se lhe lhes meu minha meus minhas seu sua nosso nossa
para com em por de do da dos das no na nos nas ao à que quem como quando onde não sim muito também já este esta`),
	newLanguage("dutch", dutch.Stem, `de het een en of maar als dan is zijn was waren ben bent wordt worden werd heeft hebben had
ik jij je hij zij ze wij we jullie mij me mijn jouw zijn haar ons onze hun
te met van op voor in uit bij naar over onder om niet ook nog al wel dat die wat wie waar hoe er`),
	newLanguage("swedish", swedish.Stem, `en ett och eller men om så är var vara blir blev har hade
jag du han hon vi ni de dem mig dig sig oss er min mitt mina din ditt dina hans hennes vår vårt våra deras
att med av på för i till från hos vid under över inte också bara redan det den detta denna vad vem var hur som`),
	newLanguage("turkish", turkish.Stem, `ve veya ama fakat ile de da bu şu o bir çok daha en gibi için kadar sonra önce
ben sen biz siz onlar beni seni bizi bana sana bize benim senin bizim
mi mı mu mü değil var yok ne nasıl neden nerede hangi ki ya evet hayır`),
	newLanguage("russian", russian.Stem, `и или но а если то это этот эта эти тот та те не нет да
я ты он она оно мы вы они меня тебя его её нас вас их мне тебе ему ей нам вам им мой моя мои твой наш ваш
в во на с со к ко по за из от до у о об для при что как где когда кто так уже ещё только очень же бы ли`),
}

func newLanguage(name string, stem func(*snowballstem.Env) bool, stop string) *language {
	l := &language{name: name, stem: stem, stop: make(map[string]bool)}
	for _, w := range strings.Fields(stop) {
		l.stop[w] = true
	}
	return l
}

// stopWords are the stop words of every language: a word that is one in
// any of them is no term, so that a request in one language and an entry
// in another leave out the same words.
var stopWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, l := range languages {
		for w := range l.stop {
			m[w] = true
		}
	}
	// Contractions and chat forms of English.
	for _, w := range strings.Fields(`let's i'm i've i'll i'd we're we've we'll we'd you're you'll you've that's there's what's it's`) {
		m[w] = true
	}
	return m
}()

// guessLanguage returns the language whose stop words the words hold most
// often (the first of the list on a tie); when they hold none, the language
// their letters give away (Cyrillic: Russian; ğ, ş or ı: Turkish; ß:
// German), else nil.
func guessLanguage(words []string) *language {
	var best *language
	most := 0
	for _, l := range languages {
		n := 0
		for _, w := range words {
			if l.stop[w] {
				n++
			}
		}
		if n > most {
			best, most = l, n
		}
	}
	if best != nil {
		return best
	}
	for _, w := range words {
		for _, r := range w {
			switch {
			case unicode.Is(unicode.Cyrillic, r):
				return languageNamed("russian")
			case r == 'ğ' || r == 'ş' || r == 'ı':
				return languageNamed("turkish")
			case r == 'ß':
				return languageNamed("german")
			}
		}
	}
	return nil
}

func languageNamed(name string) *language {
	for _, l := range languages {
		if l.name == name {
			return l
		}
	}
	return nil
}

// stemmer turns words into terms in one language.
type stemmer struct {
	lang *language
	env  *snowballstem.Env
}

func newStemmer(l *language) *stemmer {
	st := &stemmer{lang: l}
	if l != nil {
		st.env = snowballstem.NewEnv("")
	}
	return st
}

// term returns the search term of w, a lower-cased word, or "" when it is
// none: a stop word, or shorter than two letters once stemmed. A word
// joined to a suffix by an apostrophe ("Mert'e", "Ocak'tan", "Zofia's")
// is the word; an elided article ("l'état", "dell'intervento") is left
// out.
func (st *stemmer) term(w string) string {
	if i := strings.IndexByte(w, '\''); i >= 0 && !stopWords[w] {
		if elisions[w[:i]] {
			w = w[i+1:]
		} else {
			w = w[:i]
		}
	}
	if stopWords[w] {
		return ""
	}
	if st.lang != nil && st.lang.name == "english" {
		if base, ok := irregularEnglish[w]; ok {
			w = base
		}
	}
	if st.lang != nil {
		st.env.SetCurrent(w)
		st.lang.stem(st.env)
		w = st.env.Current()
	}
	if len([]rune(w)) < 2 || stopWords[w] {
		return ""
	}
	return w
}

// elisions are the articles, prepositions and pronouns French and Italian
// join to the next word with an apostrophe.
var elisions = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`l d j m n s t c qu jusqu lorsqu puisqu un dell nell all dall sull coll quell bell sant`) {
		m[w] = true
	}
	return m
}()

// irregularEnglish maps the past forms of common irregular English verbs to
// the verb, which the Snowball stemmer leaves apart: a question asks in the
// present ("what did she make for the church?", "how did he feel?") what
// was told in the past ("I made a stained glass window", "I felt tiny").
var irregularEnglish = func() map[string]string {
	m := make(map[string]string)
	for _, forms := range strings.Split(`feel felt|buy bought|meet met|begin began begun|win won|lose lost|teach taught|write wrote written|run ran|eat ate eaten|drive drove driven|fly flew flown|grow grew grown|draw drew drawn|sing sang sung|swim swam swum|build built|catch caught|choose chose chosen|fall fell fallen|fight fought|forget forgot forgotten|hear heard|lead led|learn learnt|lend lent|pay paid|ride rode ridden|rise rose risen|sell sold|send sent|shoot shot|sit sat|sleep slept|speak spoke spoken|spend spent|stand stood|steal stole stolen|throw threw thrown|understand understood|wake woke woken|wear wore worn|break broke broken|bite bit bitten|blow blew blown|hide hid hidden|freeze froze frozen|forgive forgave forgiven|feed fed|dig dug|deal dealt|sink sank sunk|shake shook shaken|tear tore torn`, "|") {
		words := strings.Fields(forms)
		for _, w := range words[1:] {
			m[w] = words[0]
		}
	}
	return m
}()
