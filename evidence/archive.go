package evidence

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
)

// Tier ranks an archive entry by who wrote it and how much it looks like
// a fact (salience.go). The store finds the candidates of a view tier by
// tier; the view orders the user's tiers together, by weight.
type Tier int

const (
	// TierUserKey: the user's statements that score highest, such as "We
	// must never take billing offline before 9 in March."
	TierUserKey Tier = iota
	// TierUserFact: the user's statements that score next, such as
	// "Actually, make it 150 people."
	TierUserFact
	// TierUserStatement: the user's other statements (neither questions,
	// requests nor acknowledgements), such as "The venue holds 120 people."
	TierUserStatement
	// TierAssistantRule: the assistant's constraints, decisions, open work
	// and proposals, and its statements that score highest.
	TierAssistantRule
	// TierContext: everything else.
	TierContext
)

// Item is one entry of a conversation's archive: an entry with what the
// focus view ranks it by.
type Item struct {
	Entry
	// Bucket is the entry's bucket, by the keywords of its own text.
	Bucket Bucket
	// Tier ranks the entry for the view.
	Tier Tier
	// Weight is how much the entry looks like a fact for the room it takes
	// (salience.go), at most MaxWeight, as the rarity of specific things
	// stood when it was extracted: the index finds the heaviest entries by
	// it, and a view weighs them again by the rarity that stands now
	// (Traits).
	Weight int
	// Traits are the specific things the entry names, by kind, and what
	// they added to its weight (rarity.go); 0 for entries stored before
	// they were kept, which a view weighs as they were.
	Traits Traits
	// Key is the restatement key: an item with the same key replaces it.
	Key string
	// Terms are the entry's search terms (Terms).
	Terms []string
	// Slots are the things the entry names near a value (Slots), by which
	// a later statement that may correct it finds it.
	Slots []string
	// Fix is the later statement of the user that gives what the entry says
	// a new value (correct.go); the zero Fix for none.
	Fix Fix
}

// Newer reports whether it stands later in the history than o: a later
// message, or later in the same message.
func (it *Item) Newer(o *Item) bool {
	if it.Index != o.Index {
		return it.Index > o.Index
	}
	return it.Span[0] > o.Span[0]
}

// ExtractItems returns the archive entries of msgs, the history's messages at
// indexes from, from+1, …: one per sentence, list item or line of the text of
// each evidential message, in history order. Excerpts are copies, so that
// items never keep a message's text alive. carry is what the fold carried
// out of the messages before them; ExtractItems carries these into it.
func ExtractItems(msgs []checkpoint.Message, from int, carry *Carry, cfg *Config) []Item {
	return extractItems(msgs, from, carry, cfg, nil)
}

// ExtractFeatures is ExtractItems returning, beside the items, each item's
// features: what the weights are fitted on (package eval).
func ExtractFeatures(msgs []checkpoint.Message, from int, carry *Carry, cfg *Config) ([]Item, []Vector) {
	var vs []Vector
	items := extractItems(msgs, from, carry, cfg, func(v *Vector) { vs = append(vs, *v) })
	return items, vs
}

// extractItems is ExtractItems, calling with (when not nil) with each
// item's features, in order.
func extractItems(msgs []checkpoint.Message, from int, carry *Carry, cfg *Config, with func(v *Vector)) []Item {
	c := cfg.withDefaults()
	var items []Item
	for i := range msgs {
		m := &msgs[i]
		if !m.Evidential() {
			continue
		}
		first := len(items)
		date := ""
		if carry != nil {
			if d := dateLine(m.Text); d != "" {
				carry.Date = d
			}
			date = carry.Date
		}
		var sentences []string // of each clause cut out of a longer sentence, its sentence
		for _, sentence := range Segment(m.Text) {
			for _, sp := range Clauses(m.Text, sentence) {
				excerpt, truncated := Excerpt(m.Text[sp[0]:sp[1]], c.MaxExcerptBytes)
				if excerpt == "" {
					continue
				}
				b := c.Classifier.Classify(excerpt)
				it := Item{
					Entry: Entry{Role: m.Role, MessageID: strings.Clone(m.ID), Index: from + i,
						Excerpt: strings.Clone(excerpt), Truncated: truncated, Span: Span{sp[0], sp[0] + len(excerpt)}, Date: date},
					Bucket: b,
					Key:    restatementKey(excerpt),
					Terms:  Terms(excerpt),
					Slots:  Slots(excerpt),
				}
				var cut Cut
				if sp[0] > sentence[0] {
					cut |= CutBefore
				}
				if sp[1] < sentence[1] {
					cut |= CutAfter
				}
				it.Traits = Traits(cut) << traitsCutFrom
				items = append(items, it)
				if cut != 0 {
					sentences = append(sentences, m.Text[sentence[0]:sentence[1]])
				} else {
					sentences = append(sentences, "")
				}
			}
		}
		rare := carry.rarity()
		var each func(int, *Vector)
		if with != nil {
			each = func(_ int, v *Vector) { with(v) }
		}
		scoreItemsFeatures(items[first:], sentences, &rare, c.Weights, each)
		carry.count(items[first:])
	}
	return items
}

// specificRuns counts the runs of digits, and of two or more capitals, in
// w.
func specificRuns(w string) (digitRuns, capitalRuns int) {
	digits, capitals := 0, 0
	flush := func() {
		if digits > 0 {
			digitRuns++
		} else if capitals >= 2 {
			capitalRuns++
		}
		digits, capitals = 0, 0
	}
	for _, r := range w {
		switch {
		case unicode.IsDigit(r):
			if capitals > 0 {
				flush()
			}
			digits++
		case unicode.IsUpper(r) && r < utf8.RuneSelf:
			if digits > 0 {
				flush()
			}
			capitals++
		default:
			flush()
		}
	}
	flush()
	return digitRuns, capitalRuns
}

// pronounI reports whether w is the English "I" or a contraction of it.
func pronounI(w string) bool {
	return w == "I" || strings.HasPrefix(w, "I'") || strings.HasPrefix(w, "I’")
}

// calendarWords are the names of days and months (and their plurals and
// common abbreviations) in the languages of the keyword lists.
var calendarWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`
monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays saturdays sundays
weekend weekends tonight tomorrow yesterday today noon midnight
january february march april may june july august september october november december
mon tue wed thu fri sat sun jan feb mar apr jun jul aug sep sept oct nov dec
montag dienstag mittwoch donnerstag freitag samstag sonntag januar februar märz juni juli oktober dezember morgen heute
lundi mardi mercredi jeudi vendredi samedi dimanche janvier février mars avril mai juin juillet août septembre octobre novembre décembre demain
lunes martes miércoles jueves viernes sábado domingo enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre mañana
lunedì martedì mercoledì giovedì venerdì sabato domenica gennaio febbraio aprile maggio giugno luglio agosto settembre ottobre novembre dicembre domani
segunda terça quarta quinta sexta sábado domingo janeiro fevereiro março maio junho julho setembro outubro novembro dezembro amanhã
maandag dinsdag woensdag donderdag vrijdag zaterdag zondag januari februari maart mei juni juli augustus oktober morgen`) {
		m[w] = true
	}
	return m
}()

// statement reports whether text states something: three words or more
// (six characters of text written without spaces), neither a question, a
// request ("please …") nor only acknowledgement words ("Thanks, sounds
// good!").
func statement(text string) bool {
	if question(text) {
		return false
	}
	words := splitWords(text, nil)
	n := 0
	for _, w := range words {
		if requestWords[w] {
			return false
		}
		if hasUnspaced(w) {
			n += utf8.RuneCountInString(w) / 2
		} else {
			n++
		}
	}
	if n < 3 {
		return false
	}
	for _, w := range words {
		if !ackWords[w] {
			return true
		}
	}
	return false
}

// requestWords mark a sentence as a request to the assistant rather than a
// statement of fact.
var requestWords = map[string]bool{"please": true, "pls": true, "plz": true, "bitte": true, "merci": true, "favor": true, "favore": true, "alsjeblieft": true, "alstublieft": true}

var correctionWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`actually instead correction revised moved postponed rescheduled replaced slips slipped pushed changed update updated
stattdessen statt anstatt korrektur verschoben verschieben rutschen geändert ändert ändern
plutôt finalement reporté décalé changé modifié remplacé
cambiado aplazado cambiamos movemos pasamos cambia cambió
invece spostato spostiamo cambiato diventa cambia modificato
alterado mudamos mudou adiado muda trocamos
verplaatst veranderd verandert wijzigt gewijzigd aangepast
istället flyttar flyttat ändrat ändrar
yerine kaydıralım kaydırdık değişti
вместо переносим перенесли изменили`) {
		m[w] = true
	}
	return m
}()

var correctionPhrases = map[string]bool{"no longer": true, "not anymore": true, "make it": true, "rather than": true, "nicht mehr": true, "plus de": true, "ya no": true,
	"au lieu": true, "en lugar": true, "en vez": true, "em vez": true, "in plaats": true,
	// "The visit is now Saturday": a value that stands now, in place of one before.
	"is now": true, "are now": true, "ist jetzt": true, "ist nun": true, "est maintenant": true, "es ahora": true, "è ora": true,
	"é agora": true, "is nu": true, "är nu": true,
	// The same with the adverb first: "o teto agora é R$ 16 mil", "jetzt ist der Termin am Montag".
	"agora é": true, "ahora es": true, "ora è": true, "jetzt ist": true, "nun ist": true, "nu is": true, "nu är": true}

// unspacedCorrections are correction cues of Japanese, Chinese and Korean,
// found inside unspaced words ("改成", "に変更").
var unspacedCorrections = []string{"改成", "改为", "改為", "改到", "换成", "換成", "砍到", "变更", "變更", "に変更", "変更", "取り消し", "대신", "변경", "바꿔", "옮겨"}

var ackWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`thanks thank you ok okay great cool perfect sounds good yes yeah yep no nope sure
got it nice awesome lgtm please continue go ahead right fine that's that works for me makes sense alright all
danke gut super merci bien oui gracias vale sí perfecto`) {
		m[w] = true
	}
	return m
}()

// Archive is a conversation's archive held in memory: every item extracted,
// restatements collapsed, at most a bound of items. The service keeps the
// archive in Postgres instead and must keep the same items (store/archive.go);
// the pure fold uses this one.
type Archive struct {
	items []Item // oldest first
	notes []Note // the model lane's, in the order added (notes.go)
}

// ArchiveOf returns the archive that holds items, oldest first (as a
// store reads them back, ordered by index and span): the archive must
// have been built by Add. It keeps items.
func ArchiveOf(items []Item) *Archive { return &Archive{items: items} }

// Len returns the number of items.
func (a *Archive) Len() int {
	if a == nil {
		return 0
	}
	return len(a.items)
}

// Items returns the items, oldest first. The slice must not be changed.
func (a *Archive) Items() []Item { return a.items }

// Clone returns a copy of a that shares no slice with it.
func (a *Archive) Clone() *Archive {
	if a == nil {
		return nil
	}
	return &Archive{items: slices.Clone(a.items), notes: slices.Clone(a.notes)}
}

// LatestByKey returns items without those that a later item of the same
// slice restates, in the same order.
func LatestByKey(items []Item) []Item {
	last := make(map[string]int, len(items))
	for i := range items {
		last[items[i].Key] = i
	}
	if len(last) == len(items) {
		return items
	}
	out := make([]Item, 0, len(last))
	for i := range items {
		if last[items[i].Key] == i {
			out = append(out, items[i])
		}
	}
	return out
}
