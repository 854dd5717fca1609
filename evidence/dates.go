package evidence

import (
	"strings"
	"unicode"
)

// Dates. A conversation that spans days often says when each part of it
// was written: a transcript's session opens with its date ("[4:04 pm on
// 20 January, 2023] Gina: …"), a pasted log or a note starts with one
// ("2025-03-03", "Date: Monday 3 March 2025"). The fold carries the date the
// history last named (Carry.Date), and every entry keeps the date that
// stood at its message, so that a question about when something happened
// is served the entry with its date.

// maxDateBytes bounds a date as recall keeps it.
const maxDateBytes = 48

// dateLine returns the date text opens with, as written: the content of an
// opening bracket that names a date ("[4:04 pm on 20 January, 2023] …"),
// or a first line that is a date, alone or after a label ("2025-03-03",
// "Date: Monday 3 March 2025"); "" when it opens with none.
func dateLine(text string) string {
	t := strings.TrimLeftFunc(text, unicode.IsSpace)
	if rest, ok := strings.CutPrefix(t, "["); ok {
		if end := strings.IndexByte(rest, ']'); end > 0 && end <= maxDateBytes && isDate(rest[:end]) {
			return dayOf(strings.TrimSpace(rest[:end]))
		}
		return ""
	}
	line, _, _ := strings.Cut(t, "\n")
	line = strings.TrimSpace(line)
	if label, value, ok := strings.Cut(line, ":"); ok && dateLabels[normaliseWord(strings.TrimSpace(label))] {
		line = strings.TrimSpace(value)
	}
	if len(line) <= maxDateBytes && isDate(line) && datesOnly(line) {
		return dayOf(line)
	}
	return ""
}

// dayOf returns the day of a date that gives its time first ("4:04 pm on
// 20 January, 2023" is "20 January, 2023"): a question asks on which day.
func dayOf(date string) string {
	if _, day, ok := strings.Cut(date, " on "); ok && isDate(day) {
		return strings.TrimSpace(day)
	}
	return date
}

// dateLabels label a line that gives a date.
var dateLabels = map[string]bool{"date": true, "datum": true, "fecha": true, "data": true, "when": true, "sent": true, "time": true, "day": true}

// isDate reports whether s names a date: a year (four digits from 1900 to
// 2099) beside a month's name or a day's number ("20 January, 2023",
// "2025-03-03", "3/3/2025"), or a month's name beside a day's number.
func isDate(s string) bool {
	month, day, year := false, false, false
	for _, w := range splitWords(s, nil) {
		switch {
		case monthNames[w]:
			month = true
		case isYear(w):
			year = true
		case len(w) <= 2 && allDigits(w):
			day = true
		}
	}
	return year && (month || day) || month && day
}

// datesOnly reports whether s holds nothing but a date and a time, so that
// a sentence that merely names a date is not taken for a date line.
func datesOnly(s string) bool {
	for _, w := range splitWords(s, nil) {
		if !monthNames[w] && !dayNames[w] && !timeWords[w] && !allDigits(w) {
			return false
		}
	}
	return true
}

func isYear(w string) bool {
	return len(w) == 4 && allDigits(w) && (w[:2] == "19" || w[:2] == "20")
}

func allDigits(w string) bool {
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return w != ""
}

// monthNames, dayNames and timeWords are the words of dates and times in
// the languages recall stems.
var monthNames, dayNames, timeWords = func() (m, d, t map[string]bool) {
	m, d, t = make(map[string]bool), make(map[string]bool), make(map[string]bool)
	for _, w := range strings.Fields(`january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec
januar jänner februar märz april mai juni juli august september oktober november dezember
janvier février mars avril mai juin juillet août septembre octobre novembre décembre
enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre
gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre
janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro
januari februari maart april mei juni juli augustus september oktober november december`) {
		m[w] = true
	}
	for _, w := range strings.Fields(`monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri sat sun
montag dienstag mittwoch donnerstag freitag samstag sonntag lundi mardi mercredi jeudi vendredi samedi dimanche
lunes martes miércoles jueves viernes sábado domingo lunedì martedì mercoledì giovedì venerdì sabato domenica
segunda terça quarta quinta sexta maandag dinsdag woensdag donderdag vrijdag zaterdag zondag`) {
		d[w] = true
	}
	for _, w := range strings.Fields(`am pm on at um le el il de the of utc gmt cet cest`) {
		t[w] = true
	}
	return m, d, t
}()
