package bench

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
)

// chatter writes a synthetic conversation for the search scenario: messages
// of several sentences each, every sentence unique (it carries a name and a
// number of its own, so that no restatement collapses it), over a vocabulary
// whose words are drawn with a Zipf law (a few words stand in thousands of
// sentences, most in a handful), mostly English with some German and
// Japanese. It is deterministic: the same seed writes the same history.
type chatter struct {
	rng              *rand.Rand
	noun, verb, adj  *rand.Zipf
	deNoun, jaNoun   *rand.Zipf
	seq              int // sentences written
	next             int // index of the next message
	cjk, german, all int // sentences by language
}

func newChatter(seed uint64) *chatter {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	zipf := func(n int) *rand.Zipf { return rand.NewZipf(r, 1.07, 2, uint64(n-1)) }
	return &chatter{rng: r, noun: zipf(len(enNouns)), verb: zipf(len(enVerbs)), adj: zipf(len(enAdjs)),
		deNoun: zipf(len(deNouns)), jaNoun: zipf(len(jaNouns))}
}

var (
	enNouns = strings.Fields(`schema migration budget deadline invoice replica cluster dashboard tenant export
report contract venue caterer flight hotel badge keynote sponsor booth printer ledger payroll audit backup
snapshot index query latency throughput queue worker scheduler release changelog roadmap milestone ticket
customer vendor warehouse pallet shipment forklift invoice crate label barcode manifest courier route depot
kitchen menu allergy dessert seating projector microphone stage lighting rehearsal speaker agenda workshop
poster brochure banner website newsletter survey webinar campaign coupon discount pricing subscription
license certificate firewall gateway router certificate token password rotation vault secret bucket region
failover outage incident postmortem runbook pager rotation oncall alert metric histogram threshold quota
laptop monitor keyboard desk chair whiteboard office lease parking shuttle canteen recipe greenhouse tractor
harvest orchard irrigation fertilizer seedling vineyard cellar barrel bottle cork`)
	enVerbs = strings.Fields(`reviewed approved drafted moved postponed rebuilt migrated checked tested
shipped ordered booked cancelled renamed split merged archived restored priced counted measured
estimated signed printed painted cleaned repaired replaced upgraded patched deployed rolled scaled
trimmed audited mapped labelled packed loaded sorted weighed tasted planted watered pruned bottled`)
	enAdjs = strings.Fields(`new old blue green quiet noisy cheap expensive fast slow spare broken
shared private regional nightly weekly quarterly urgent optional heavy light narrow wide upper lower
northern southern eastern western spare temporary permanent digital paper wooden metal frozen fresh`)
	enPreps   = []string{"for", "near", "behind", "after", "before", "beside", "under", "above", "without", "despite"}
	syllables = []string{"ka", "lo", "mi", "ren", "do", "sa", "vi", "tor", "ne", "qua", "bel", "zu", "ha", "ri", "fen", "go",
		"mar", "te", "pol", "an", "shi", "gu", "bre", "ol", "da", "nix", "ve", "cor", "al", "tu", "wen", "is"}
	deNouns = strings.Fields(`Rechnung Lieferung Termin Besprechung Vertrag Lager Kunde Angebot Abrechnung
Server Datenbank Sicherung Freigabe Prüfung Schulung Bühne Saal Küche Buchung Reise Fahrplan Wartung
Bestellung Etikett Palette Werkstatt Garten Ernte Keller Flasche`)
	deVerbs = []string{"geprüft", "verschoben", "bestellt", "gebucht", "freigegeben", "abgesagt", "erneuert", "gezählt"}
	jaNouns = strings.Fields(`会議 請求書 納期 倉庫 顧客 契約 予算 会場 資料 配送 在庫 注文 見積 設計 試験 障害
報告 予約 出張 研修 取引 品質 点検 工場 部品 料金 画面 記録 手順 担当`)
	jaVerbs = []string{"確認しました", "変更しました", "延期しました", "承認しました", "送りました", "直しました", "数えました", "予約しました"}
)

// name returns a name no other sentence has, made of syllables.
func (c *chatter) name(n int) string {
	var b strings.Builder
	for i := 0; i < 3 || n > 0; i++ {
		b.WriteString(syllables[n%len(syllables)])
		n /= len(syllables)
	}
	s := b.String()
	return strings.ToUpper(s[:1]) + s[1:]
}

// sentence returns the next unique sentence.
func (c *chatter) sentence() string {
	c.seq++
	c.all++
	n, num := c.name(c.seq), strconv.Itoa(1000+c.seq*7)
	noun := func() string { return enNouns[c.noun.Uint64()] }
	switch x := c.rng.IntN(100); {
	case x < 8:
		c.cjk++
		return n + "さんはチケット" + num + "の" + jaNouns[c.jaNoun.Uint64()] + "と" + jaNouns[c.jaNoun.Uint64()] + "を" + jaVerbs[c.rng.IntN(len(jaVerbs))] + "。"
	case x < 20:
		c.german++
		return n + " hat die " + deNouns[c.deNoun.Uint64()] + " für Vorgang " + num + " " + deVerbs[c.rng.IntN(len(deVerbs))] +
			", und die " + deNouns[c.deNoun.Uint64()] + " folgt danach."
	case x < 26:
		return "We must never let the " + enAdjs[c.adj.Uint64()] + " " + noun() + " of " + n + " slip past ticket " + num + "."
	case x < 32:
		return "Decided with " + n + ": the " + noun() + " goes " + enPreps[c.rng.IntN(len(enPreps))] + " the " + noun() + ", budget line " + num + "."
	case x < 38:
		return "Next step for " + n + ": check the " + enAdjs[c.adj.Uint64()] + " " + noun() + " against order " + num + "."
	}
	return n + " " + enVerbs[c.verb.Uint64()] + " the " + enAdjs[c.adj.Uint64()] + " " + noun() + " " +
		enPreps[c.rng.IntN(len(enPreps))] + " the " + noun() + " on ticket " + num + " and noted " + strconv.Itoa(c.rng.IntN(90)+10) + " " + noun() + "s."
}

// message returns the next message as raw JSON: even indices are user
// requests, odd ones assistant replies, each of between lo and hi
// sentences.
func (c *chatter) message(lo, hi int) json.RawMessage {
	i := c.next
	c.next++
	parts := make([]string, lo+c.rng.IntN(hi-lo+1))
	for k := range parts {
		parts[k] = c.sentence()
	}
	role := "assistant"
	if i%2 == 0 {
		role = "user"
	}
	text, _ := json.Marshal(strings.Join(parts, " "))
	return json.RawMessage(`{"id":"m` + strconv.Itoa(i) + `","role":"` + role + `","content":` + string(text) + `}`)
}

// queries returns n search queries of one to eight words drawn from the
// conversation's vocabulary: common words that match thousands of entries,
// a name that matches one entry, words that match none, German and Japanese
// ones, and mixtures; every other one is put as a question ("What did we
// say about …?"), which a view answers relevance first, reading the
// messages that match it best as well.
func (c *chatter) queries(n int) []string {
	out := make([]string, n)
	for i := range out {
		words := make([]string, 1+c.rng.IntN(8))
		for k := range words {
			switch i % 5 {
			case 0: // common
				words[k] = enNouns[c.rng.IntN(5)]
			case 1: // one sentence's name, then any words
				if k == 0 {
					words[k] = c.name(1 + c.rng.IntN(c.seq))
				} else {
					words[k] = enNouns[c.noun.Uint64()]
				}
			case 2: // no entry
				words[k] = "qx" + syllables[c.rng.IntN(len(syllables))] + strconv.Itoa(c.rng.IntN(1e6))
			case 3: // German and Japanese
				if k%2 == 0 {
					words[k] = deNouns[c.deNoun.Uint64()]
				} else {
					words[k] = jaNouns[c.jaNoun.Uint64()]
				}
			default:
				words[k] = [...]string{enNouns[c.noun.Uint64()], enVerbs[c.verb.Uint64()], enAdjs[c.adj.Uint64()]}[k%3]
			}
		}
		out[i] = strings.Join(words, " ")
		if i%2 == 1 {
			out[i] = "What did we say about " + out[i] + "?"
		}
	}
	return out
}
