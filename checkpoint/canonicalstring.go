package checkpoint

import (
	"encoding/binary"
	"unicode/utf8"
	"unsafe"
)

// stringSafe marks the ASCII bytes a canonical string holds as they are.
// Bytes of multi-byte characters are not marked: they are checked.
var stringSafe = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	t['"'], t['\\'] = false, false
	return t
}()

// string writes the string whose opening quote is before c.pos, and moves
// past its closing quote. What is canonical already — plain characters and
// the escapes JCS writes itself — is copied in runs as long as it lasts.
func (c *canonicalizer) string() bool {
	c.out = append(c.out, '"')
	c.escaped, c.multiByte = false, false
	in := c.in
	i := c.pos
	run := i // the start of what is still to be copied as it is
	for {
		i = skipPlain(in, i)
		if i >= len(in) {
			return false
		}
		b := in[i]
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size <= 1 {
				return false
			}
			c.multiByte = true
			i += size
			continue
		}
		if b == '\\' {
			c.escaped = true
			if n := canonicalEscape(in[i:]); n > 0 {
				i += n
				continue
			}
		}
		c.out = append(c.out, in[run:i]...)
		switch b {
		case '"':
			c.out = append(c.out, '"')
			c.pos = i + 1
			return true
		case '\\':
			n, ok := c.escape(in[i:])
			if !ok {
				return false
			}
			i += n
		default:
			return false // a raw control character: not JSON
		}
		run = i
	}
}

// skipPlain returns the index of the first byte of s at or after i that is
// not a plain ASCII string character: '"', '\\', a control character or
// the start of a multi-byte character. It tests eight bytes at a time.
func skipPlain(s []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		quote := x ^ ('"' * ones)
		slash := x ^ ('\\' * ones)
		// Any byte below 0x20, any zero byte after the XORs, any high bit.
		if ((x-0x20*ones)&^x|(quote-ones)&^quote|(slash-ones)&^slash|x)&highs != 0 {
			break
		}
	}
	for i < len(s) && stringSafe[s[i]] {
		i++
	}
	return i
}

// skipPlainString is skipPlain over a string, read in place.
func skipPlainString(s string, i int) int {
	return skipPlain(unsafe.Slice(unsafe.StringData(s), len(s)), i)
}

// canonicalEscape returns the length of the escape sequence at the start of
// s when JCS writes it the same way (\" \\ \b \f \n \r \t, and \u00xx in
// lower case for the other control characters), and 0 otherwise.
func canonicalEscape(s []byte) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(s) < 6 || s[2] != '0' || s[3] != '0' || (s[4] != '0' && s[4] != '1') {
			return 0
		}
		lo := s[5]
		if !('0' <= lo && lo <= '9' || 'a' <= lo && lo <= 'f') {
			return 0
		}
		switch string(s[4:6]) {
		case "08", "09", "0a", "0c", "0d": // \b \t \n \f \r have short forms
			return 0
		}
		return 6
	}
	return 0
}

// escape writes the character of the escape sequence at the start of s and
// returns the sequence's length.
func (c *canonicalizer) escape(s []byte) (int, bool) {
	if len(s) < 2 {
		return 0, false
	}
	switch s[1] {
	case '"', '\\':
		c.out = append(c.out, '\\', s[1])
		return 2, true
	case '/':
		c.out = append(c.out, '/')
		return 2, true
	case 'b', 'f', 'n', 'r', 't':
		c.out = append(c.out, '\\', s[1])
		return 2, true
	case 'u':
	default:
		return 0, false
	}
	r, ok := hex4(s[2:])
	if !ok {
		return 0, false
	}
	n := 6
	switch {
	case 0xd800 <= r && r < 0xdc00:
		if len(s) < 12 || s[6] != '\\' || s[7] != 'u' {
			return 0, false
		}
		lo, ok := hex4(s[8:])
		if !ok || lo < 0xdc00 || lo > 0xdfff {
			return 0, false
		}
		r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
		n = 12
	case 0xdc00 <= r && r <= 0xdfff:
		return 0, false
	}
	c.out = appendCanonicalRune(c.out, r)
	return n, true
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, b := range s[:4] {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b -= 'a' - 10
		case 'A' <= b && b <= 'F':
			b -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(b)
	}
	return r, true
}

// appendCanonicalRune writes r as appendCanonicalString writes it inside a
// string.
func appendCanonicalRune(b []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		if e := shortEscape[r]; e != 0 {
			return append(b, '\\', e)
		}
	}
	if r < 0x20 {
		return append(b, '\\', 'u', '0', '0', lowerHex[r>>4], lowerHex[r&0xf])
	}
	return utf8.AppendRune(b, r)
}

// shortEscape holds the letter of the short escape RFC 8785 writes for a
// character ('"' for '"', 'n' for '\n', …); 0 for the characters written as
// they are or as \u00xx.
var shortEscape = [256]byte{'"': '"', '\\': '\\', '\b': 'b', '\t': 't', '\n': 'n', '\f': 'f', '\r': 'r'}

// unescapeCanonical appends the characters of the canonical string body s
// (without its quotes) to dst.
func unescapeCanonical(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			dst = append(dst, s[i])
			continue
		}
		i++
		if s[i] == 'u' {
			r, _ := hex4(s[i+1:])
			dst = append(dst, byte(r))
			i += 4
			continue
		}
		dst = append(dst, unescaped[s[i]])
	}
	return dst
}

// lowerHex are the hexadecimal digits of \\u escapes.
const lowerHex = "0123456789abcdef"
