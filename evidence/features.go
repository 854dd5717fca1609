package evidence

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
)

// Features. What a sentence is stands apart from how much each trait
// weighs: a feature is a small pure function of an entry's text, its role,
// its place in the history and the conversation's rarity of specific things
// (rarity.go); the weights are one table fitted on data (weights.go). Every
// feature is a number in [0, 1] or a little over, so that the weights
// compare.

// Feature names one trait of an entry.
type Feature int

// The features. The names (featureNames) are the weight table's keys.
const (
	FeatUser             Feature = iota // written by the user
	FeatAssistant                       // written by the assistant
	FeatConstraint                      // a constraint keyword (rule 6)
	FeatDecision                        // a decision keyword
	FeatOpenWork                        // an open-work keyword
	FeatRule                            // a user's constraint that asks nothing: a rule the user states
	FeatCorrection                      // a cue that it revises something said before
	FeatNegation                        // a negation: a limit or a preference
	FeatProposal                        // an assistant's proposal
	FeatQuestion                        // it asks something
	FeatRequest                         // a request to the assistant ("please …")
	FeatAddress                         // it speaks to the assistant ("can you …")
	FeatHeader                          // written in capitals only, as a pasted heading
	FeatTableRow                        // a row of a pasted table
	FeatPasted                          // a line of a pasted document
	FeatShort                           // how short it is: 1 for no text, 0 from fragmentBytes
	FeatEarly                           // how early: 1 at message 0, 0 from earlyMessages
	FeatSpecific                        // the specific things it names, weighed by their rarity
	FeatFirstPerson                     // the speaker speaks of themselves ("I", "my", "ich", "je", "我")
	FeatOther                           // the speaker speaks of someone they speak for ("he", "my son", "mi madre")
	FeatCondition                       // a condition: health, allergy, diet, injury
	FeatPreference                      // a preference or dislike
	FeatValue                           // a value or principle
	FeatGoal                            // a goal
	FeatHabit                           // a habit or commitment: always, every day, ever since
	FeatCircumstance                    // where they live, work, when they are free
	FeatReason                          // the reason behind something: because, so that
	FeatStanding                        // a standing fact: someone's lasting trait, said as a statement
	FeatEpisodic                        // narration of one occasion: yesterday, last week
	FeatChatter                         // greetings, thanks, praise, acknowledgements, fillers, small talk
	FeatMessageSize                     // how many entries its message has (a pasted document has many)
	FeatUserSpecific                    // the specific things a user's sentence names (the assistant's name many)
	FeatUserCorrection                  // a user's correction: the user changed what was said
	FeatUserNegation                    // a user's negation: a limit or a dislike the user states
	FeatPlace                           // its place in its message: 0 for the first entry, 1 for the last
	FeatRank                            // its rank in its message by the rest of its weight: 0 for the best, 1 from the rankScale-th
	FeatClause                          // it is one clause cut out of a longer sentence
	FeatSentenceStanding                // it is a clause of a sentence that states a standing fact
	FeatUpdate                          // the chance that it gives something said before a new value (correct.go)
	NumFeatures
)

// featureNames are the features' names in the weight table.
var featureNames = [NumFeatures]string{
	FeatUser: "user", FeatAssistant: "assistant", FeatConstraint: "constraint_word", FeatDecision: "decision_word",
	FeatOpenWork: "open_work_word", FeatRule: "rule", FeatCorrection: "correction", FeatNegation: "negation",
	FeatProposal: "proposal", FeatQuestion: "question", FeatRequest: "request", FeatAddress: "address",
	FeatHeader: "header", FeatTableRow: "table_row", FeatPasted: "pasted_line", FeatShort: "short",
	FeatEarly: "early", FeatSpecific: "specific", FeatFirstPerson: "first_person", FeatOther: "other_person",
	FeatCondition: "condition", FeatPreference: "preference", FeatValue: "value", FeatGoal: "goal",
	FeatHabit: "habit", FeatCircumstance: "circumstance", FeatReason: "reason", FeatStanding: "standing",
	FeatEpisodic: "episodic", FeatChatter: "chatter", FeatMessageSize: "message_size",
	FeatUserSpecific: "user_specific", FeatUserCorrection: "user_correction", FeatUserNegation: "user_negation",
	FeatPlace: "place_in_message", FeatRank: "rank_in_message", FeatClause: "clause", FeatSentenceStanding: "sentence_standing",
	FeatUpdate: "update",
}

// String returns the feature's name in the weight table.
func (f Feature) String() string {
	if f < 0 || f >= NumFeatures {
		return "feature(" + itoa(int(f)) + ")"
	}
	return featureNames[f]
}

// FeatureNames returns the names of the features, in order.
func FeatureNames() []string { return featureNames[:] }

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Vector is an entry's features.
type Vector [NumFeatures]float64

// The shapes of some features, set by hand: they say what the feature
// measures, not how much it weighs.
const (
	// fragmentBytes: a sentence this long or longer is not short; shorter
	// ones are more and more a reply whose sense is in the question it
	// answers ("90 min.", "option 2").
	fragmentBytes = 70
	// earlyMessages: the conversation's opening, where people say who
	// they are and what the limits are.
	earlyMessages = 100
	// specificScale turns the rarity points of specific things (rarity.go:
	// 12 for the first rare thing, less for each further one) into a
	// feature of about 1 for a sentence that names two rare things.
	specificScale = 24
	// maxSpecific caps that feature: a table row names ten things.
	maxSpecific = 2
	// messageSizeScale: log2 of a message's entries over this, 1 for a
	// message of 63 entries.
	messageSizeScale = 6
	// rankScale: the rank in its message from which an entry is one of a
	// document's many lines rather than one of a paragraph's sentences.
	rankScale = 10
)

// sentence is what the features read of one entry's text.
type sentence struct {
	text  string   // the text after any date and speaker label
	words []string // its words, normalised (splitWords)
	cues  cues
	lex   lexHits
}

// readSentence reads text once for every feature.
func readSentence(text string) sentence {
	body := statementBody(text)
	s := sentence{text: body, words: splitWords(body, nil)}
	s.cues = readCuesOf(s.words)
	s.lex = readLexicon(body, s.words)
	return s
}

// features returns the features of one entry, of message index, with
// bucket b, which is entry i of the n entries of its message, paste whether
// it is a pasted line (pastedLines), and points what the specific things it
// names add by the rarity that stands (rarity.points).
func features(role checkpoint.Role, b Bucket, excerpt string, index, i, n int, paste bool, points int) Vector {
	s := readSentence(excerpt)
	return s.features(role, b, excerpt, index, i, n, paste, points)
}

func (s *sentence) features(role checkpoint.Role, b Bucket, excerpt string, index, i, n int, paste bool, points int) Vector {
	var v Vector
	user := role == checkpoint.RoleUser
	q := question(s.text)
	set := func(f Feature, ok bool) {
		if ok {
			v[f] = 1
		}
	}
	set(FeatUser, user)
	set(FeatAssistant, role == checkpoint.RoleAssistant)
	set(FeatConstraint, b == Constraints)
	set(FeatDecision, b == Decisions)
	set(FeatOpenWork, b == OpenWork)
	set(FeatRule, user && b == Constraints && !q)
	set(FeatCorrection, s.cues.correction)
	set(FeatNegation, s.cues.negated)
	set(FeatProposal, role == checkpoint.RoleAssistant && s.cues.proposing)
	set(FeatQuestion, q)
	// "Please never…": a request that states a rule is the user's standing
	// instruction, not a request of the moment.
	set(FeatRequest, s.cues.requesting && b != Constraints)
	set(FeatAddress, s.cues.addressing)
	set(FeatHeader, header(excerpt))
	set(FeatTableRow, tableRow(excerpt))
	set(FeatPasted, paste)
	v[FeatShort] = float64(max(0, fragmentBytes-len(excerpt))) / fragmentBytes
	v[FeatEarly] = float64(max(0, earlyMessages-index)) / earlyMessages
	v[FeatSpecific] = min(maxSpecific, float64(points)/specificScale)
	set(FeatFirstPerson, s.lex.self)
	set(FeatOther, s.lex.other)
	set(FeatCondition, s.lex.kinds[lexCondition])
	set(FeatPreference, s.lex.kinds[lexPreference])
	set(FeatValue, s.lex.kinds[lexValue])
	set(FeatGoal, s.lex.kinds[lexGoal])
	set(FeatHabit, s.lex.kinds[lexHabit])
	set(FeatCircumstance, s.lex.kinds[lexCircumstance])
	set(FeatReason, s.lex.kinds[lexReason])
	set(FeatStanding, s.standing(q))
	set(FeatEpisodic, s.lex.kinds[lexEpisodic] && !s.lex.lasting())
	set(FeatChatter, s.chatter(b))
	v[FeatMessageSize] = math.Log2(float64(1+max(n, 1))) / messageSizeScale
	if n > 1 {
		v[FeatPlace] = float64(i) / float64(n-1)
	}
	if user {
		v[FeatUserSpecific], v[FeatUserCorrection], v[FeatUserNegation] = v[FeatSpecific], v[FeatCorrection], v[FeatNegation]
	}
	return v
}

// addSentence sets the features that a clause takes from the longer
// sentence it was cut out of: that it is a clause, and whether the sentence
// states a standing fact (the clause "which has to go down on an empty
// stomach" of "I'm on levothyroxine, which has to go down on an empty
// stomach").
func (v *Vector) addSentence(text string) {
	v[FeatClause] = 1
	s := readSentence(text)
	if s.standing(question(s.text)) {
		v[FeatSentenceStanding] = 1
	}
}

// standing reports whether the sentence states a lasting trait of the
// speaker or of someone they speak for: a condition, a preference, a value,
// a goal, a habit or a circumstance, said of a person, as a statement
// (not a question), and not the narration of one occasion.
func (s *sentence) standing(asks bool) bool {
	if asks || !(s.lex.self || s.lex.other) || !s.lex.lasting() {
		return false
	}
	return !s.lex.kinds[lexEpisodic] || s.lex.kinds[lexHabit] || s.lex.kinds[lexCondition]
}

// chatter reports whether the sentence is chatter: greetings, thanks,
// praise, acknowledgements, fillers and small-talk questions, which say
// nothing a later request needs. A sentence with a rule, decision or
// open-work keyword, a lasting trait, or a specific thing (a number, a
// date; a name only after a greeting) never is.
func (s *sentence) chatter(b Bucket) bool {
	if s.lex.lasting() {
		return false
	}
	if len(s.words) == 0 {
		// Only emoji or punctuation ("👍", "!!").
		return strings.TrimSpace(s.text) != ""
	}
	greeting := greetingWords[s.words[0]]
	other := 0 // words that are not chat
	for _, w := range s.words {
		if !chatWords[w] && !(greeting && w != s.words[0] && isNameWord(s.text, w)) {
			other++
		}
	}
	if b != RecentContext {
		// A keyword alone ("Confirmed.", "Agreed!") acknowledges.
		return other == 0 && len(s.words) <= 2
	}
	if other > 0 && !greeting {
		// Small talk asks after the other person, in a few words.
		return question(s.text) && len(s.words) <= 6 && smallTalk(s.words)
	}
	if hasDigit(s.text) {
		return false
	}
	return other == 0 || greeting && other <= 1 && len(s.words) <= 6
}

// Chatter reports whether text, one entry's excerpt, is chatter, as the
// scorer reads it (the chatter feature).
func Chatter(text string) bool {
	s := readSentence(text)
	return s.chatter(focusClassifier.Classify(text))
}

// smallTalk reports whether words are all chat or small-talk words.
func smallTalk(words []string) bool {
	for _, w := range words {
		if !chatWords[w] && !smallTalkWords[w] {
			return false
		}
	}
	return true
}

// isNameWord reports whether w (normalised) is written capitalised in text:
// the name after a greeting ("Hey James!").
func isNameWord(text, w string) bool {
	i := strings.Index(strings.ToLower(text), w)
	if i < 0 {
		return false
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsUpper(r)
}

// statementBody returns text without the date and speaker label it may
// open with, as in a transcript ("[4:04 pm on 20 January, 2023] Gina: Hey
// Jon!" is "Hey Jon!"): what the sentence itself says.
func statementBody(text string) string {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "[") {
		if end := strings.IndexByte(t, ']'); end > 0 && end <= maxDateBytes+2 {
			t = strings.TrimSpace(t[end+1:])
		}
	}
	// A speaker's label: one to three capitalised words and a colon.
	if colon := strings.IndexByte(t, ':'); colon > 0 && colon <= 40 && colon+1 < len(t) && t[colon+1] == ' ' {
		label := strings.Fields(t[:colon])
		ok := len(label) <= 3
		for _, w := range label {
			r, _ := utf8.DecodeRuneInString(w)
			ok = ok && unicode.IsUpper(r) && !questionWords[normaliseWord(w)]
		}
		if ok {
			t = strings.TrimSpace(t[colon+1:])
		}
	}
	return t
}

// Dot returns the sum of v's features weighed by w.
func (v *Vector) Dot(w *[NumFeatures]float64) float64 {
	s := 0.0
	for i := range v {
		s += v[i] * w[i]
	}
	return s
}
