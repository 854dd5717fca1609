package checkpoint

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/gowebpki/jcs"
)

// This file holds a fast path for RFC 8785 (JCS). The jcs library builds a
// tree of every value, copies every string through a strings.Builder, and
// checks every number against a regular expression; over tool artifacts it
// runs at a few percent of SHA-256's speed, so canonicalisation, not
// hashing, bounded the digest chain. appendCanonicalJSON writes the
// canonical form in one pass over the input into the caller's buffer. It
// handles the documents recall meets and gives up — appending nothing — on
// anything unusual, for which the caller uses the jcs library: the library
// stays the reference, and FuzzCanonicalJSON checks that the fast path
// agrees with it byte for byte wherever it answers.
//
// The fast path gives up on invalid JSON and invalid UTF-8, on lone or
// misordered surrogate escapes, on duplicate keys, on object keys holding a
// character at or above U+E000 (where UTF-16 order, which JCS sorts by,
// differs from the byte order of UTF-8) and on nesting deeper than
// maxCanonicalDepth. Numbers take the library's own ECMAScript formatting
// (jcs.NumberToJSON); integers of at most 15 digits, which it leaves as they
// are, skip it.

// maxCanonicalDepth bounds the fast path's recursion; deeper documents go to
// the library, which allows 10,000 levels.
const maxCanonicalDepth = 512

// canonicalizer holds the scratch space of one appendCanonicalJSON call.
type canonicalizer struct {
	in  []byte
	pos int
	out []byte
	// members is a stack of the members of the objects being written; keys
	// holds keys that had escapes, decoded.
	members []member
	keys    []byte
	// scratch holds an object's members while they are put in order.
	scratch []byte
	// escaped reports whether the last string had an escape sequence,
	// multiByte whether it had a character beyond ASCII.
	escaped, multiByte bool
}

// member is one object member written to out[start:end]. Its decoded key is
// in[keyFrom:keyTo], or keys[keyFrom:keyTo] when escaped; prefix holds the
// key's first eight bytes, big-endian and zero-padded, so that most
// comparisons need not look at the key.
type member struct {
	prefix         uint64
	keyFrom, keyTo int32
	start, end     int32
	escaped        bool
}

func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(key) {
			p |= uint64(key[i])
		}
	}
	return p
}

// compare orders members by key: byte order, which for the keys the fast
// path accepts is UTF-16 order.
func (c *canonicalizer) compare(a, b *member) int {
	switch {
	case a.prefix < b.prefix:
		return -1
	case a.prefix > b.prefix:
		return 1
	}
	return bytes.Compare(c.key(a), c.key(b))
}

var canonicalizers = sync.Pool{New: func() any { return new(canonicalizer) }}

// appendCanonicalJSON appends the RFC 8785 form of the JSON value raw to dst.
// ok is false, and dst is returned unchanged, where the fast path gives up.
func appendCanonicalJSON(dst, raw []byte) (out []byte, ok bool) {
	if len(dst)+2*len(raw) > math.MaxInt32 {
		return dst, false // offsets are int32
	}
	c := canonicalizers.Get().(*canonicalizer)
	c.in, c.pos, c.out = raw, 0, dst
	ok = c.value(0)
	if ok {
		c.skipSpace()
		ok = c.pos == len(c.in)
	}
	out = c.out
	c.in, c.out = nil, nil
	c.members, c.keys = c.members[:0], c.keys[:0]
	if cap(c.scratch) > 1<<20 {
		c.scratch = nil
	}
	canonicalizers.Put(c)
	if !ok {
		return dst, false
	}
	return out, true
}

func (c *canonicalizer) skipSpace() { c.pos = skipSpace(c.in, c.pos) }

// skipSpace returns the index of the first byte of in at or after i that is
// not JSON white space.
func skipSpace(in []byte, i int) int {
	if i < len(in) && in[i] > ' ' {
		return i // what compact JSON has at every call
	}
	for i < len(in) {
		switch in[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func (c *canonicalizer) value(depth int) bool {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return false
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return depth < maxCanonicalDepth && c.object(depth+1)
	case b == '[':
		return depth < maxCanonicalDepth && c.array(depth+1)
	case b == '"':
		c.pos++
		return c.string()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || '0' <= b && b <= '9':
		return c.number()
	}
	return false
}

func (c *canonicalizer) literal(lit string) bool {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
		return false
	}
	c.pos += len(lit)
	c.out = append(c.out, lit...)
	return true
}

func (c *canonicalizer) array(depth int) bool {
	c.pos++ // [
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return true
	}
	for {
		if !c.value(depth) {
			return false
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return false
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return true
		default:
			return false
		}
	}
}

func (c *canonicalizer) object(depth int) bool {
	base, keysBase := len(c.members), len(c.keys)
	ok := c.objectMembers(depth, base)
	c.members, c.keys = c.members[:base], c.keys[:keysBase]
	return ok
}

// objectMembers writes the object at c.pos; its members are pushed on
// c.members from base on.
func (c *canonicalizer) objectMembers(depth, base int) bool {
	c.pos++ // {
	start := len(c.out)
	c.out = append(c.out, '{')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return true
	}
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return false
		}
		if len(c.members) > base {
			c.out = append(c.out, ',')
		}
		m := member{start: int32(len(c.out))}
		c.pos++
		keyStart := c.pos
		if !c.string() {
			return false
		}
		if !c.escaped {
			m.keyFrom, m.keyTo = int32(keyStart), int32(c.pos-1)
		} else {
			// Decode the key from what string wrote: its canonical form
			// differs from the decoded key only in the escapes.
			m.escaped = true
			m.keyFrom = int32(len(c.keys))
			c.keys = unescapeCanonical(c.keys, c.out[m.start+1:len(c.out)-1])
			m.keyTo = int32(len(c.keys))
		}
		key := c.key(&m)
		if (c.multiByte || m.escaped) && !sortsAsUTF16(key) {
			return false
		}
		m.prefix = keyPrefix(key)
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return false
		}
		c.pos++
		c.out = append(c.out, ':')
		if !c.value(depth) {
			return false
		}
		m.end = int32(len(c.out))
		c.members = append(c.members, m)
		c.skipSpace()
		if c.pos >= len(c.in) {
			return false
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if c.in[c.pos] != ',' {
			return false
		}
		c.pos++
	}
	ms := c.members[base:]
	sorted := true
	for i := 1; i < len(ms); i++ {
		switch c.compare(&ms[i-1], &ms[i]) {
		case 0:
			return false // duplicate key
		case 1:
			sorted = false
		}
	}
	if !sorted {
		c.sort(ms)
		for i := 1; i < len(ms); i++ {
			if c.compare(&ms[i-1], &ms[i]) == 0 {
				return false
			}
		}
		c.scratch = append(c.scratch[:0], c.out[start+1:]...)
		c.out = c.out[:start+1]
		from := int32(start + 1)
		for i := range ms {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.scratch[ms[i].start-from:ms[i].end-from]...)
		}
	}
	c.out = append(c.out, '}')
	return true
}

// sort orders members by key: by insertion for the few members of most
// objects, in O(n log n) for the many members of some.
func (c *canonicalizer) sort(ms []member) {
	if len(ms) > 16 {
		slices.SortFunc(ms, func(a, b member) int { return c.compare(&a, &b) })
		return
	}
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && c.compare(&ms[j-1], &ms[j]) > 0; j-- {
			ms[j-1], ms[j] = ms[j], ms[j-1]
		}
	}
}

func (c *canonicalizer) key(m *member) []byte {
	if m.escaped {
		return c.keys[m.keyFrom:m.keyTo]
	}
	return c.in[m.keyFrom:m.keyTo]
}

// sortsAsUTF16 reports whether the byte order of key, against any other key
// of the same kind, is its UTF-16 order: true when it holds no character at
// or above U+E000 (UTF-8 lead byte 0xEE and above).
func sortsAsUTF16(key []byte) bool {
	for _, b := range key {
		if b >= 0xee {
			return false
		}
	}
	return true
}

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
	switch r {
	case '"', '\\':
		return append(b, '\\', byte(r))
	case '\b':
		return append(b, '\\', 'b')
	case '\t':
		return append(b, '\\', 't')
	case '\n':
		return append(b, '\\', 'n')
	case '\f':
		return append(b, '\\', 'f')
	case '\r':
		return append(b, '\\', 'r')
	}
	if r < 0x20 {
		return append(b, '\\', 'u', '0', '0', lowerHex[r>>4], lowerHex[r&0xf])
	}
	return utf8.AppendRune(b, r)
}

// unescapeCanonical appends the characters of the canonical string body s
// (without its quotes) to dst.
func unescapeCanonical(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			dst = append(dst, s[i])
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(s[i+1:])
			dst = append(dst, byte(r))
			i += 4
		default: // '"' and '\\'
			dst = append(dst, s[i])
		}
	}
	return dst
}

// number writes the number at c.pos in its ECMAScript form.
func (c *canonicalizer) number() bool {
	start := c.pos
	i, digits, integer := numberEnd(c.in, start)
	if i < 0 {
		return false
	}
	c.pos = i
	tok := c.in[start:i]
	if integer && digits <= 15 {
		// Exact in a double, and written by ECMAScript as it is; but -0
		// is 0.
		if string(tok) == "-0" {
			tok = tok[1:]
		}
		c.out = append(c.out, tok...)
		return true
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return false
	}
	c.out = append(c.out, s...)
	return true
}

// numberEnd returns the end of the JSON number at in[i], -1 if there is
// none; with the number of its integer digits and whether it is an integer
// (no fraction, no exponent).
func numberEnd(in []byte, i int) (end, digits int, integer bool) {
	if i < len(in) && in[i] == '-' {
		i++
	}
	from := i
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && '1' <= in[i] && in[i] <= '9':
		for i < len(in) && '0' <= in[i] && in[i] <= '9' {
			i++
		}
	default:
		return -1, 0, false
	}
	digits, integer = i-from, true
	if i < len(in) && in[i] == '.' {
		integer = false
		if i = skipDigits(in, i+1); i < 0 {
			return -1, 0, false
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		integer = false
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i = skipDigits(in, i); i < 0 {
			return -1, 0, false
		}
	}
	return i, digits, integer
}

// skipDigits returns the end of the one or more digits at in[i], -1 if there
// are none.
func skipDigits(in []byte, i int) int {
	from := i
	for i < len(in) && '0' <= in[i] && in[i] <= '9' {
		i++
	}
	if i == from {
		return -1
	}
	return i
}

// lowerHex are the hexadecimal digits of \\u escapes.
const lowerHex = "0123456789abcdef"
