package checkpoint

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"sync"

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
