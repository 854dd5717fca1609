package evidence

import "strings"

// The lexicon of lasting things people say about themselves, and of
// chatter, in the languages recall reads. Each kind is a list of words
// (normalised as splitWords does), of two-word phrases, of prefixes (a
// trailing "*": "allerg*" is allergic, allergy, allergisch, allergique) and,
// for scripts written without spaces, of substrings. The lists say what a
// kind of sentence looks like; how much each kind weighs is fitted
// (weights.go).

type lexKind int

const (
	lexCondition lexKind = iota
	lexPreference
	lexValue
	lexGoal
	lexHabit
	lexCircumstance
	lexReason
	lexEpisodic
	numLexKinds
)

// lexHits are what the lexicon found in one sentence.
type lexHits struct {
	kinds [numLexKinds]bool
	self  bool // the speaker speaks of themselves
	other bool // of someone they speak for
}

// lasting reports whether the sentence names a lasting trait.
func (h *lexHits) lasting() bool {
	k := &h.kinds
	return k[lexCondition] || k[lexPreference] || k[lexValue] || k[lexGoal] || k[lexHabit] || k[lexCircumstance]
}

// lexList is one kind's words, phrases, prefixes and unspaced substrings.
type lexList struct {
	words    []string // words and phrases ("ever since"), normalised
	prefixes []string
	unspaced []string
}

func newLexList(spec string, unspaced ...string) *lexList {
	l := &lexList{unspaced: unspaced}
	for _, w := range strings.Fields(spec) {
		if strings.ContainsFunc(w, isIndic) {
			// splitWords cuts Indic words at their vowel signs: these
			// are found as substrings, as unspaced scripts' are.
			l.unspaced = append(l.unspaced, strings.ReplaceAll(w, "_", " "))
			continue
		}
		if p, ok := strings.CutSuffix(w, "*"); ok {
			l.prefixes = append(l.prefixes, p)
		} else {
			l.words = append(l.words, strings.ReplaceAll(w, "_", " "))
		}
	}
	return l
}

// lexMark is what the lexicon says of a word or phrase: a bit for each
// kind, then one for the speaker's words and one for another person's.
type lexMark uint16

const (
	markSelf lexMark = 1 << (numLexKinds + iota)
	markOther
)

// lexIndex is the lexicon in one place: the marks of each word and phrase,
// and the prefixes by their first prefixKey bytes, so that a sentence's
// words are each looked up once.
type lexIndex struct {
	words    map[string]lexMark
	prefixes map[string][]lexPrefix
	unspaced []lexPrefix
}

type lexPrefix struct {
	text string
	mark lexMark
}

// prefixKey is how many bytes of a word find its prefixes.
const prefixKey = 3

func newLexIndex(lists []*lexList, marks []lexMark) *lexIndex {
	ix := &lexIndex{words: make(map[string]lexMark), prefixes: make(map[string][]lexPrefix)}
	for i, l := range lists {
		for _, w := range l.words {
			ix.words[w] |= marks[i]
		}
		for _, p := range l.prefixes {
			if len(p) < prefixKey {
				panic("evidence: lexicon prefix shorter than prefixKey: " + p)
			}
			ix.prefixes[p[:prefixKey]] = append(ix.prefixes[p[:prefixKey]], lexPrefix{p, marks[i]})
		}
		for _, u := range l.unspaced {
			ix.unspaced = append(ix.unspaced, lexPrefix{u, marks[i]})
		}
	}
	return ix
}

// marks returns the marks of a sentence: text, and its words.
func (ix *lexIndex) marks(text string, words []string) lexMark {
	var m lexMark
	unspacedText := false
	for i, w := range words {
		m |= ix.words[w]
		if i+1 < len(words) {
			m |= ix.words[w+" "+words[i+1]]
		}
		if len(w) >= prefixKey {
			for _, p := range ix.prefixes[w[:prefixKey]] {
				if strings.HasPrefix(w, p.text) {
					m |= p.mark
				}
			}
		}
		unspacedText = unspacedText || hasUnspaced(w) || strings.ContainsFunc(w, isIndic)
	}
	if unspacedText {
		for _, u := range ix.unspaced {
			if strings.Contains(text, u.text) {
				m |= u.mark
			}
		}
	}
	return m
}

var lexicon = [numLexKinds]*lexList{
	lexCondition: newLexList(`allerg* intoleran* vegetari* vegan* pescatarian diabet* asthm* epilep* injur* surgery surgeries diagnos* chronic
anxiety anxious depression depressed pregnan* disabilit* disabled wheelchair deaf migraine* dementia burnout concussion coeliac celiac lactose gluten
kosher halal sober medication* insulin arthritis adhd autis* dyslex* phobia* seasick* claustrophob* insomnia tinnitus penicillin peanut* shellfish
knee back_pain bad_back hearing_aid
operation verletz* krank* unverträglich* laktose schwanger migräne rollstuhl medikament* zöliakie
végétarien* végétalien* enceinte blessure* maladie malade opéré opération médicament* sans_gluten
vegetarian* alérgic* embarazada lesión lesion enfermedad enfermo enferma operación medicamento* celíac* diabétic*
allergic* incinta infortunio malattia celiachia intolleran*
alérgic* grávida lesão doença doente cirurgia remédio* celíac*
zwanger ziekte blessure geopereerd
allergisk gravid skada sjukdom
alerji* vejetaryen hamile ameliyat hastalık
аллерги* вегетариан* беременн* травм* операци* болезн* диабет*
alerg* wegetarian* wegan* cukrzyc* astm* kontuzj* ciąż* leki
एलर्जी शाकाहारी डायबिटीज़ शुगर चोट
dị_ứng ăn_chay tiểu_đường hen_suyễn
αλλεργ* χορτοφάγ* διαβήτ* άσθμα τραυματισμ* εγκυμοσύν*`,
		"アレルギー", "ベジタリアン", "菜食", "持病", "妊娠", "怪我", "手術", "过敏", "過敏", "素食", "吃素", "怀孕", "懷孕", "受伤", "手术", "糖尿病", "哮喘",
		"알레르기", "채식", "임신", "부상", "수술", "당뇨"),
	lexPreference: newLexList(`prefer prefers preferred preference favourite favorite favourites favorites love loves hate hates dislike dislikes
enjoy enjoys can't_stand cannot_stand fan_of not_a_fan rather_have passionate passion
bevorzuge lieber mag liebe hasse lieblings* mögen
préfère préfèrent préféré préférée adore déteste j'aime aime
prefiero prefiere preferimos odio encanta encantan gusta gustan favorito favorita
preferisco preferisce adoro odio piace piacciono preferito preferita
prefiro prefere adoro odeio gosto favorito favorita
voorkeur liever houd_van hekel
föredrar älskar hatar gillar
tercih severim sevmem nefret
предпочитаю люблю ненавижу нравится
wolę lubię kocham nienawidzę nie_znoszę ulubion*
पसंद नापसंद pasand
thích ghét
προτιμώ αγαπώ μισώ αρέσει`,
		"好き", "嫌い", "苦手", "喜欢", "喜歡", "讨厌", "討厭", "偏好", "좋아", "싫어", "선호"),
	lexValue: newLexList(`value values valued believe believes belief beliefs principle principles matters_to important_to priority priorities
non-negotiable nonnegotiable integrity honesty honest respect empathy consent loyalty fairness ethic* moral* care_about
glaube wichtig werte prinzip* grundsatz ehrlich*
crois valeur* principe* important_pour honnête*
creo valoro valores principio* importante_para honest*
credo valore valori principi* onest*
acredito valor valores princípio* honest*
geloof waarde* principe* eerlijk*
tror värdering* princip* ärlig*
inanırım değer* ilke*
верю ценю ценност* принцип* честн*
wierzę wartości zasad* uczciw*
ईमानदारी उसूल
tin_rằng nguyên_tắc
πιστεύω αξίες αρχές ειλικρίνει*`,
		"信念", "価値観", "大切", "原则", "原則", "价值观", "價值觀", "重要", "가치", "원칙", "중요"),
	lexGoal: newLexList(`goal goals aim aiming aspire aspiration dream dreams hope_to hoping_to plan_to planning_to saving_for saving_up want_to wanna
working_toward working_towards someday one_day by_next training_for
ziel ziele träume möchte_gern sparen_für plane
objectif but rêve économise compte
objetivo meta sueño ahorrando planeo quiero
obiettivo sogno risparmiando voglio
objetivo meta sonho economizando quero
doel droom sparen_voor wil
mål dröm sparar vill
hedef hayal amacım
цель мечта коплю хочу
cel marzę marzenie oszczędzam
सपना लक्ष्य sapna
mục_tiêu ước_mơ
στόχος όνειρο`,
		"目標", "夢", "目标", "梦想", "打算", "목표", "꿈"),
	lexHabit: newLexList(`always usually often never every everyday daily weekly nightly routine habit habits tend whenever anymore nowadays
ever_since since_then these_days each_morning each_week each_day
immer meistens nie niemals jeden jede täglich wöchentlich gewohnheit seitdem
toujours souvent jamais chaque quotidien habitude depuis
siempre nunca cada diario diariamente costumbre normalmente desde_que
sempre mai ogni quotidiano abitudine
sempre nunca cada diariamente hábito costume desde_que
altijd nooit elke dagelijks gewoonte
alltid aldrig varje dagligen vana
her_gün hep asla alışkanlık
всегда никогда каждый ежедневно привычка
zawsze nigdy codziennie zwykle co_tydzień
हमेशा कभी_नहीं रोज़ hamesha roz
luôn không_bao_giờ mỗi_ngày thường
πάντα ποτέ κάθε καθημερινά συνήθως`,
		"いつも", "毎日", "毎朝", "毎週", "必ず", "总是", "總是", "每天", "每周", "每週", "习惯", "習慣", "从来", "從來", "항상", "매일", "습관", "언제나"),
	lexCircumstance: newLexList(`live lives living based commute shift shifts remote work_from work_at works_at work_as works_as i'm_a i_am
married divorced widowed single_parent retired unemployed student landlord tenant night_shift until off_on
wohne wohnen arbeite schicht verheiratet geschieden rentner* student*
habite travaille marié mariée divorcé* retraité*
vivo trabajo turno casado casada divorciad* jubilad*
abito lavoro turno sposato sposata divorziat* pensionat*
moro trabalho turno casado casada divorciad* aposentad*
woon werk dienst getrouwd gescheiden gepensioneerd
bor jobbar arbetar gift skild pensionär
yaşıyorum çalışıyorum evli emekli
живу работаю женат замужем пенсионер*
mieszkam pracuję zmiana emeryt*
रहता रहती rehta rehti
sống làm_việc
μένω δουλεύω βάρδια συνταξιούχ*`,
		"住んで", "勤務", "働いて", "住在", "工作", "上班", "结婚", "結婚", "살아", "근무", "일해", "결혼"),
	lexReason: newLexList(`because since so_that that's_why is_why due_to made_me taught_me convinced_me reason
weil da damit deshalb deswegen grund
parce car puisque afin raison
porque ya_que para_que razón
perché poiché affinché motivo
porque pois razão
omdat want zodat reden
eftersom därför anledning
çünkü için nedeni
потому поэтому причина
bo ponieważ dlatego
क्योंकि इसलिए kyunki isliye
vì bởi_vì nên
γιατί επειδή`,
		"から", "ので", "ため", "因为", "因為", "所以", "为了", "為了", "때문", "니까", "위해"),
	lexEpisodic: newLexList(`yesterday today tonight ago earlier last_night last_week last_month last_year last_weekend last_summer last_time
this_morning this_afternoon this_evening this_weekend the_other_day just_got just_came just_finished
gestern heute vorhin letzte_woche letztes_jahr letzten_monat
hier aujourd'hui ce_matin la_semaine
ayer hoy anoche esta_mañana la_semana
ieri oggi stamattina
ontem hoje
gisteren vandaag vanochtend
igår idag
dün bugün
вчера сегодня
wczoraj dzisiaj
आज
hôm_qua hôm_nay
χθες σήμερα`,
		"昨日", "今日", "今朝", "先週", "昨天", "今天", "上周", "上週", "어제", "오늘", "지난주"),
}

// selfWords are the speaker's words for themselves; otherWords those for
// someone they speak for (their people and the third person).
var (
	selfWords = newLexList(`i i'm i've i'd i'll me my mine myself we we're we've our ours us
ich mich mir mein meine meinen meiner wir uns unser unsere
je j'ai j'aime moi mon ma mes nous notre nos
yo me mi mis nosotros nosotras nuestro nuestra soy estoy tengo
io mio mia miei mie noi nostro nostra sono
eu meu minha meus minhas nós nosso nossa sou estou tenho
ik mij mijn wij we ons onze
jag mig min mitt mina vi oss vår
ben benim biz bizim
я меня мне мой моя мои мы наш наша
ja mój moja moje mnie mi nasz nasza
मैं मेरा मेरी मेरे हम हमारा main mera meri hum humara
tôi mình
εγώ μου μας`,
		"私", "僕", "俺", "我", "저는", "제가", "나는", "내가", "저희", "우리")
	otherWords = newLexList(`he he's she she's his her him they they're their them
son daughter kids kid children child wife husband partner mom mum mother dad father brother sister grandma grandmother grandpa grandfather
parents boss baby toddler niece nephew aunt uncle cousin fiancé fiancée boyfriend girlfriend patient client clients
er sie ihr ihm sein seine sohn tochter kinder frau mann mutter vater bruder schwester
il elle lui leur fils fille enfants femme mari mère père frère sœur
él ella su sus hijo hija hijos esposa esposo marido madre padre hermano hermana
lui lei suo sua figlio figlia figli moglie marito madre padre fratello sorella
ele ela dele dela filho filha filhos esposa marido mãe pai irmão irmã
hij zij zijn haar zoon dochter kinderen vrouw man moeder vader broer zus
han hon hans hennes son dotter barn fru man mamma pappa bror syster
o oğlum kızım eşim annem babam
он она его её сын дочь дети жена муж мама папа брат сестра
on ona jego jej syn córka żona mąż mama tata
वो उसका उसकी बेटा बेटी beta beti papa mummy
con vợ chồng mẹ bố
αυτός αυτή γιος κόρη γυναίκα άντρας μητέρα πατέρας`,
		"彼", "彼女", "息子", "娘", "妻", "夫", "母", "父", "他", "她", "儿子", "兒子", "女儿", "女兒", "妈妈", "媽媽", "爸爸", "老婆", "老公",
		"그는", "그녀", "아들", "딸", "아내", "남편", "엄마", "아빠")
)

// isIndic reports whether r is of an Indic script (Devanagari, Bengali,
// Gurmukhi, Gujarati, Oriya, Tamil, Telugu, Kannada, Malayalam).
func isIndic(r rune) bool { return r >= 0x0900 && r <= 0x0D7F }

// lex is the lexicon's index.
var lex = func() *lexIndex {
	lists := append(lexicon[:], selfWords, otherWords)
	marks := make([]lexMark, len(lists))
	for k := range numLexKinds {
		marks[k] = 1 << k
	}
	marks[numLexKinds], marks[numLexKinds+1] = markSelf, markOther
	return newLexIndex(lists, marks)
}()

// readLexicon reads the lexicon's kinds in one sentence: text, and its
// words.
func readLexicon(text string, words []string) lexHits {
	m := lex.marks(text, words)
	var h lexHits
	for k := range numLexKinds {
		h.kinds[k] = m&(1<<k) != 0
	}
	h.self, h.other = m&markSelf != 0, m&markOther != 0
	return h
}

// chatWords are the words chatter is made of: greetings, thanks, praise,
// acknowledgements, fillers, and the little words around them.
var chatWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`hi hey hello hiya howdy yo heya morning evening afternoon night good great nice cool awesome amazing wonderful
fantastic brilliant excellent lovely sweet fun funny interesting beautiful incredible impressive exciting wow whoa oh ah ahh aw aww haha hahaha lol lmao hehe
hmm hm um uh er well ok okay k kk alright sure yes yeah yep yup ya no nope nah thanks thank thx ty cheers appreciate appreciated welcome sorry
congrats congratulations understood confirmed noted roger agreed perfect exactly right indeed true totally absolutely definitely certainly
glad happy proud love same too also bye goodbye later soon see talk care take you your you're yours i i'm it it's that that's this so very
really much such a an the to for of me be is are was were sounds sound looks look seems like just what's up how hear heard again there here
now then and but oh my gosh god omg dear pleasure done got works work fine makes sense all set go ahead continue thats its im
good-bye goodnight keep hope doing well
hallo servus moin tschüss danke dankeschön bitte gut super toll prima klar genau stimmt verstanden einverstanden gern gerne ja nein jawohl
bonjour salut coucou bonsoir merci super génial parfait d'accord oui non bien entendu compris volontiers
hola buenas buenos días gracias vale genial perfecto claro sí entendido listo bueno muy bien
ciao salve buongiorno grazie perfetto certo capito va bene
olá oi bom dia obrigado obrigada beleza ótimo perfeito certo entendido sim combinado
hoi hallo dag bedankt dank je wel prima top goed oké begrepen ja
hej hejsan tack bra toppen perfekt okej ja förstått
merhaba selam teşekkürler teşekkür ederim tamam harika süper evet anladım
привет здравствуйте спасибо хорошо отлично понятно ладно да конечно`) {
		m[w] = true
	}
	return m
}()

// greetingWords open a greeting or thanks ("Hey James!", "Thanks, Ana").
var greetingWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`hi hey hello hiya howdy heya morning evening thanks thank thx cheers congrats congratulations bye goodbye wow
hallo servus moin danke bonjour salut coucou merci hola gracias ciao salve grazie olá oi obrigado obrigada hoi bedankt hej tack merhaba selam привет спасибо`) {
		m[w] = true
	}
	return m
}()

// smallTalkWords ask after the other person: "how are you?", "how was
// your weekend?", "anything new?".
var smallTalkWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`how are you been have was your weekend day week going things anything new doing up what's whats everything life
wie geht's geht es dir läuft comment ça va vas qué tal cómo estás come stai va tudo bem como está hoe gaat het hur mår du nasılsın как дела`) {
		m[w] = true
	}
	return m
}()
