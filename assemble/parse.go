package assemble

import (
	"encoding/json"
	"sync"
)

// node is a parsed JSON value; strings and other scalars keep their bytes,
// so that what compaction does not change is written back as it was.
type node struct {
	kind byte // '{', '[', '"', or 0 for numbers, true, false, null
	// textField is set by classify on an excerptable string.
	textField bool
	raw       []byte    // the value's bytes as written, containers included
	kids      *children // a non-empty container's
	// coll is set by classify on a list it samples.
	coll *collection
}

// children are a container's keys (objects only) and values; they live
// apart from node so that the many scalars stay small.
type children struct {
	keys []*objKey // parallel to vals
	vals []*node
}

func (n *node) keys() []*objKey {
	if n.kids == nil {
		return nil
	}
	return n.kids.keys
}

func (n *node) vals() []*node {
	if n.kids == nil {
		return nil
	}
	return n.kids.vals
}

// text decodes a string node.
func (n *node) text() string {
	var s string
	_ = json.Unmarshal(n.raw, &s)
	return s
}

// objKey is an object key, shared by every object that uses it.
type objKey struct {
	name   string
	quoted []byte // as written in the input, a valid JSON string
	class  *keyClass
}

// maxDepth bounds nesting as encoding/json does: at most this many levels
// of objects and lists.
const maxDepth = 10000

// parseJSON parses one JSON value that is all of data (whitespace around it
// aside), validating as it goes: ok is false for anything encoding/json
// would reject. Object keys are interned, as rows repeat them.
//
// The nodes come from pooled blocks: call release once nothing refers to
// them any more.
func parseJSON(data []byte) (root *node, ok bool, release func()) {
	p := &parser{data: data, keys: map[string]*objKey{}}
	release = p.release
	n := p.value(0)
	if n == nil {
		return nil, false, release
	}
	p.ws()
	return n, p.pos == len(p.data), release
}

// slabSize is how many nodes a pooled block holds.
const slabSize = 256

var slabs = sync.Pool{New: func() any { s := make([]node, slabSize); return &s }}

// release clears the parser's blocks and returns them to the pool.
func (p *parser) release() {
	for _, s := range p.used {
		clear(*s)
		slabs.Put(s)
	}
	p.used, p.slab = nil, nil
}

type parser struct {
	data []byte
	pos  int
	slab []node    // what is left of the current block
	used []*[]node // the blocks taken from the pool
	keys map[string]*objKey
	// Stacks of the children of the containers being parsed, copied into
	// exact-size slices when a container ends.
	kstack []*objKey
	vstack []*node
}

// node allocates nodes in blocks.
func (p *parser) node(kind byte) *node {
	if len(p.slab) == 0 {
		s := slabs.Get().(*[]node)
		p.used = append(p.used, s)
		p.slab = *s
	}
	n := &p.slab[0]
	p.slab = p.slab[1:]
	n.kind = kind
	return n
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace, 0 at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

// str scans a string at p.pos and returns its bytes with the quotes, and
// whether it holds a backslash; nil when it is not a valid JSON string.
func (p *parser) str() ([]byte, bool) {
	start := p.pos
	p.pos++ // '"'
	escaped := false
	for p.pos < len(p.data) {
		// Skip plain bytes fast; stop at a quote, a backslash or a control
		// character.
		d := p.data
		i := p.pos
		for i < len(d) && !stringSpecial[d[i]] {
			i++
		}
		p.pos = i
		if i == len(d) {
			break
		}
		c := d[i]
		switch {
		case c == '"':
			p.pos++
			return p.data[start:p.pos], escaped
		case c == '\\':
			escaped = true
			if p.pos+1 >= len(p.data) {
				return nil, false
			}
			switch p.data[p.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos += 2
			case 'u':
				if p.pos+6 > len(p.data) {
					return nil, false
				}
				for _, h := range p.data[p.pos+2 : p.pos+6] {
					if !isHex(h) {
						return nil, false
					}
				}
				p.pos += 6
			default:
				return nil, false
			}
		default: // a control character
			return nil, false
		}
	}
	// encoding/json accepts invalid UTF-8 in strings (and replaces it when
	// decoding); so does this parser.
	return nil, false
}

// stringSpecial marks the bytes that end a run of plain string bytes.
var stringSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// value parses a value; nil when the input is not valid JSON.
func (p *parser) value(depth int) *node {
	switch c := p.peek(); c {
	case '{', '[':
		if depth >= maxDepth {
			return nil
		}
	}
	switch p.peek() {
	case '{':
		start := p.pos
		p.pos++
		n := p.node('{')
		if p.peek() == '}' {
			p.pos++
			n.raw = p.data[start:p.pos]
			return n
		}
		base, kbase := len(p.vstack), len(p.kstack)
		for {
			if p.peek() != '"' {
				return nil
			}
			k, escaped := p.str()
			if k == nil {
				return nil
			}
			key, ok := p.keys[string(k)]
			if !ok {
				key = &objKey{quoted: k}
				if escaped {
					if json.Unmarshal(k, &key.name) != nil {
						return nil
					}
				} else {
					key.name = string(k[1 : len(k)-1])
				}
				p.keys[string(k)] = key
			}
			if p.peek() != ':' {
				return nil
			}
			p.pos++
			v := p.value(depth + 1)
			if v == nil {
				return nil
			}
			p.kstack = append(p.kstack, key)
			p.vstack = append(p.vstack, v)
			switch p.peek() {
			case ',':
				p.pos++
			case '}':
				p.pos++
				n.kids = &children{
					keys: append([]*objKey(nil), p.kstack[kbase:]...),
					vals: append([]*node(nil), p.vstack[base:]...),
				}
				p.kstack, p.vstack = p.kstack[:kbase], p.vstack[:base]
				n.raw = p.data[start:p.pos]
				return n
			default:
				return nil
			}
		}
	case '[':
		start := p.pos
		p.pos++
		n := p.node('[')
		if p.peek() == ']' {
			p.pos++
			n.raw = p.data[start:p.pos]
			return n
		}
		base := len(p.vstack)
		for {
			v := p.value(depth + 1)
			if v == nil {
				return nil
			}
			p.vstack = append(p.vstack, v)
			switch p.peek() {
			case ',':
				p.pos++
			case ']':
				p.pos++
				n.kids = &children{vals: append([]*node(nil), p.vstack[base:]...)}
				p.vstack = p.vstack[:base]
				n.raw = p.data[start:p.pos]
				return n
			default:
				return nil
			}
		}
	case '"':
		raw, _ := p.str()
		if raw == nil {
			return nil
		}
		n := p.node('"')
		n.raw = raw
		return n
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return p.number()
	}
	return nil
}

func (p *parser) literal(word string) *node {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return nil
	}
	n := p.node(0)
	n.raw = p.data[p.pos : p.pos+len(word)]
	p.pos += len(word)
	return n
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *parser) number() *node {
	d, start := p.data, p.pos
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && isDigit(d[i]):
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return nil
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return nil
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	n := p.node(0)
	n.raw = d[start:i]
	p.pos = i
	return n
}
