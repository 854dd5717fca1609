package assemble

import (
	"strconv"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
)

// compactText keeps the beginning and the end of non-JSON output, marked,
// in a JSON object.
func compactText(s string, maxBytes int) (string, bool) {
	total := utf8.RuneCountInString(s)
	h := maxBytes / 2
	for h >= 0 {
		head, tail := s, ""
		if 2*h < len(s) {
			head, tail = prefix(s, h), suffix(s, h)
		}
		omitted := total - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
		b := make([]byte, 0, maxBytes)
		b = append(b, `{"type":"tool_output_excerpt","notice":`...)
		b = checkpoint.AppendJSONString(b, textNotice)
		b = append(b, `,"characters":`...)
		b = strconv.AppendInt(b, int64(total), 10)
		b = append(b, `,"omitted_characters":`...)
		b = strconv.AppendInt(b, int64(omitted), 10)
		b = append(b, `,"beginning":`...)
		b = checkpoint.AppendJSONString(b, head)
		b = append(b, `,"end":`...)
		b = checkpoint.AppendJSONString(b, tail)
		b = append(b, '}')
		if len(b) <= maxBytes {
			return string(b), true
		}
		if h == 0 {
			break
		}
		h = max(min(h-1, h-(len(b)-maxBytes+1)/2), 0)
	}
	return "", false
}

// prefix cuts s to at most n bytes at a character boundary.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// suffix keeps at most the last n bytes of s, from a character boundary.
func suffix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// excerptMarked keeps the first n bytes of s (at a character boundary) and
// says how many characters it left out.
func excerptMarked(s string, n int) string {
	head := prefix(s, n)
	omitted := utf8.RuneCountInString(s[len(head):])
	return head + "… [" + strconv.Itoa(omitted) + " characters omitted]"
}
