package checkpoint

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the scanner of ParseEvent's fast path (fastevent.go): one
// pass over the event's bytes that validates the JSON and finds each value
// in place, without encoding/json's validation pass, its second pass to
// decode and the copies it makes of every json.RawMessage. It answers only
// for what it recognises and reports false for anything else; the caller
// then falls back to encoding/json, which stays the reference.

// maxScanDepth bounds the nesting the scanner follows; deeper documents go to
// encoding/json.
const maxScanDepth = 512

// jsonScanner reads JSON values from data. It expects valid UTF-8 (ParseEvent
// checks the whole event first) and validates the JSON grammar.
type jsonScanner struct {
	data []byte
	pos  int
}

func (s *jsonScanner) skipSpace() { s.pos = skipSpace(s.data, s.pos) }

// peek returns the next byte after white space, 0 at the end.
func (s *jsonScanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// consume moves past b, the next byte after white space, if it is there.
func (s *jsonScanner) consume(b byte) bool {
	if s.peek() != b {
		return false
	}
	s.pos++
	return true
}

// value moves past the next value and returns it, without surrounding white
// space.
func (s *jsonScanner) value() ([]byte, bool) {
	s.skipSpace()
	start := s.pos
	if !s.skipValue(0) {
		return nil, false
	}
	return s.data[start:s.pos], true
}

func (s *jsonScanner) skipValue(depth int) bool {
	if s.pos >= len(s.data) {
		return false
	}
	switch b := s.data[s.pos]; {
	case b == '"':
		_, _, ok := s.stringBody()
		return ok
	case b == '{':
		if depth >= maxScanDepth {
			return false
		}
		s.pos++
		if s.consume('}') {
			return true
		}
		for {
			s.skipSpace()
			if s.pos >= len(s.data) || s.data[s.pos] != '"' {
				return false
			}
			if _, _, ok := s.stringBody(); !ok || !s.consume(':') {
				return false
			}
			s.skipSpace()
			if !s.skipValue(depth + 1) {
				return false
			}
			switch s.peek() {
			case ',':
				s.pos++
			case '}':
				s.pos++
				return true
			default:
				return false
			}
		}
	case b == '[':
		if depth >= maxScanDepth {
			return false
		}
		s.pos++
		if s.consume(']') {
			return true
		}
		for {
			s.skipSpace()
			if !s.skipValue(depth + 1) {
				return false
			}
			switch s.peek() {
			case ',':
				s.pos++
			case ']':
				s.pos++
				return true
			default:
				return false
			}
		}
	case b == 't':
		return s.literal("true")
	case b == 'f':
		return s.literal("false")
	case b == 'n':
		return s.literal("null")
	case b == '-' || '0' <= b && b <= '9':
		return s.number()
	}
	return false
}

func (s *jsonScanner) literal(lit string) bool {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return false
	}
	s.pos += len(lit)
	return true
}

// number moves past a number of the JSON grammar.
func (s *jsonScanner) number() bool {
	end, _, _ := numberEnd(s.data, s.pos)
	if end < 0 {
		return false
	}
	s.pos = end
	return true
}

// stringBody moves past the string whose opening quote is at s.pos and
// returns what is between its quotes, and whether that holds an escape.
func (s *jsonScanner) stringBody() (body []byte, escaped, ok bool) {
	d := s.data
	start := s.pos + 1
	i := start
	for {
		i = skipPlain(d, i)
		if i >= len(d) {
			return nil, false, false
		}
		switch b := d[i]; {
		case b == '"':
			s.pos = i + 1
			return d[start:i], escaped, true
		case b == '\\':
			escaped = true
			n := escapeLen(d[i:])
			if n == 0 {
				return nil, false, false
			}
			i += n
		case b < 0x20:
			return nil, false, false
		default: // a multi-byte character: the caller checked UTF-8
			i++
		}
	}
}

// escapeLen returns the length of the valid escape sequence at the start of
// s, 0 if there is none.
func escapeLen(s []byte) int {
	if len(s) < 2 {
		return 0
	}
	if unescaped[s[1]] != 0 {
		return 2
	}
	if s[1] == 'u' {
		if _, ok := hex4(s[2:]); ok {
			return 6
		}
	}
	return 0
}

// unescaped holds the character each one-character escape (\" \\ \/ \b \f
// \n \r \t) stands for, by the character after the backslash; 0 for the
// others.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// stringValue returns the string a JSON string value (quotes included)
// decodes to, as encoding/json decodes it; ok is false for anything but a
// string. The value must be valid UTF-8 and a valid JSON string, as the
// scanner returns it.
func stringValue(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	return unquote(raw[1 : len(raw)-1]), true
}

// unquote decodes the body of a valid JSON string as encoding/json does:
// invalid surrogate escapes become U+FFFD.
func unquote(body []byte) string {
	i := bytes.IndexByte(body, '\\')
	if i < 0 {
		return string(body)
	}
	b := make([]byte, 0, len(body))
	b = append(b, body[:i]...)
	for i < len(body) {
		c := body[i]
		if c != '\\' {
			j := bytes.IndexByte(body[i:], '\\')
			if j < 0 {
				j = len(body) - i
			}
			b = append(b, body[i:i+j]...)
			i += j
			continue
		}
		switch body[i+1] {
		case 'u':
			r, _ := hex4(body[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if len(body)-i >= 6 && body[i] == '\\' && body[i+1] == 'u' {
					if r1, ok := hex4(body[i+2:]); ok {
						if dec := utf16.DecodeRune(r, r1); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			b = append(b, unescaped[body[i+1]])
		}
		i += 2
	}
	return string(b)
}

// intValue parses a JSON number as encoding/json decodes it into an int: an
// integer without fraction or exponent that fits.
func intValue(raw []byte) (int, bool) {
	for _, c := range raw {
		if !('0' <= c && c <= '9' || c == '-') {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 0)
	return int(n), err == nil
}
