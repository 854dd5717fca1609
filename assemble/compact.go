package assemble

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/recallhq/recall/evidence"
)

// Compaction of tool results over the per-result limit. The output is
// always valid JSON. A JSON result (the artifact when it is an object or a
// list, else the content when it parses) keeps its structure: recognised
// row collections are sampled in source order and report how many rows the
// tool returned, how many are retained and how many omitted, with the
// omitted rows' references; text fields become prefix excerpts with the
// omitted character count; every other field — totals, dates, counts,
// filters, query, source — is kept as it is. Nothing is summed or
// invented. Other output becomes marked beginning and end excerpts.

// collectionKeys name the row collections sampled first.
var collectionKeys = map[string]bool{
	"transactions": true, "rows": true, "results": true, "documents": true,
	"categories": true, "accounts": true, "payees": true,
}

// textKeys name the text fields excerpted first.
var textKeys = map[string]bool{
	"markdown": true, "snippet": true, "content": true, "text": true, "memo": true, "description": true,
}

// protectedKey reports whether a field is kept whole with all it holds:
// totals, counts, dates, filters, the query and the source.
func protectedKey(k string) bool {
	k = strings.ToLower(k)
	switch k {
	case "filters", "filter", "query", "source", "sources", "source_ref", "source_refs",
		"source_reference", "source_references", "count", "date", "dates", "period":
		return true
	}
	return strings.Contains(k, "total") || strings.HasPrefix(k, "count") || strings.HasSuffix(k, "_count") ||
		strings.HasSuffix(k, "_date") || strings.HasPrefix(k, "date_")
}

// refKey reports whether a row field is a reference worth keeping for an
// omitted row: ids, paths, dates and source references.
func refKey(k string) bool {
	if strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "ID") {
		return true
	}
	k = strings.ToLower(k)
	switch k {
	case "id", "uuid", "guid", "key", "path", "file", "filename", "url", "uri", "href", "link",
		"date", "datetime", "timestamp", "page", "ref", "reference":
		return true
	}
	return strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "_path") || strings.HasSuffix(k, "_url") ||
		strings.HasSuffix(k, "_date") || strings.HasSuffix(k, "_at") || strings.HasPrefix(k, "source")
}

// compactToolResult compacts m's result within maxBytes of text, or
// reports that its structure and references alone do not fit.
func compactToolResult(m *evidence.Message, maxBytes int) (string, bool) {
	if isContainer(m.Artifact) {
		return compactJSON(m.Artifact, maxBytes)
	}
	if t := bytes.TrimSpace([]byte(m.Text)); isContainer(t) && json.Valid(t) {
		return compactJSON(t, maxBytes)
	}
	return compactText(m.Text, maxBytes)
}

func isContainer(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '{' || raw[0] == '[')
}

// node is a parsed JSON value; strings and other scalars keep their bytes.
type node struct {
	kind    byte // '{', '[', '"', or 0 for numbers, true, false, null
	raw     []byte
	keys    []string
	vals    []*node
	str     string // the decoded string, once decoded
	decoded bool
}

func (n *node) text() string {
	if !n.decoded {
		_ = json.Unmarshal(n.raw, &n.str)
		n.decoded = true
	}
	return n.str
}

// parser parses JSON already known to be valid.
type parser struct {
	data []byte
	pos  int
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

func (p *parser) str() []byte {
	start := p.pos
	p.pos++
	for {
		c := p.data[p.pos]
		if c == '\\' {
			p.pos += 2
			continue
		}
		p.pos++
		if c == '"' {
			return p.data[start:p.pos]
		}
	}
}

func (p *parser) value() *node {
	p.ws()
	switch p.data[p.pos] {
	case '{':
		p.pos++
		n := &node{kind: '{'}
		p.ws()
		if p.data[p.pos] == '}' {
			p.pos++
			return n
		}
		for {
			p.ws()
			k := p.str()
			key := string(k[1 : len(k)-1])
			if bytes.IndexByte(k, '\\') >= 0 {
				_ = json.Unmarshal(k, &key)
			}
			p.ws()
			p.pos++ // ':'
			n.keys = append(n.keys, key)
			n.vals = append(n.vals, p.value())
			p.ws()
			c := p.data[p.pos]
			p.pos++
			if c == '}' {
				return n
			}
		}
	case '[':
		p.pos++
		n := &node{kind: '['}
		p.ws()
		if p.data[p.pos] == ']' {
			p.pos++
			return n
		}
		for {
			n.vals = append(n.vals, p.value())
			p.ws()
			c := p.data[p.pos]
			p.pos++
			if c == ']' {
				return n
			}
		}
	case '"':
		return &node{kind: '"', raw: p.str()}
	}
	start := p.pos
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return &node{raw: p.data[start:p.pos]}
		}
		p.pos++
	}
	return &node{raw: p.data[start:p.pos]}
}

// collection is a sampled row list.
type collection struct {
	list *node
	path string
	refs [][]byte // each row's reference, built once
}

type compactor struct {
	root     *node
	maxBytes int
	infoKey  string

	colls  []*collection
	collOf map[*node]*collection
	texts  map[*node]bool

	// The plan being rendered: rows kept per collection and the excerpt
	// length of text fields (-1: whole).
	k, l      int
	excerpted int
}

// classify finds the collections and text fields. The first pass knows only
// the recognised names; the aggressive one samples any list and excerpts
// any string that is not a reference.
func (c *compactor) classify(aggressive bool) {
	c.colls, c.collOf, c.texts = nil, map[*node]*collection{}, map[*node]bool{}
	if c.root.kind == '[' {
		c.addCollection(c.root, "rows", aggressive)
		return
	}
	c.walk(c.root, "", false, aggressive)
}

func (c *compactor) addCollection(list *node, path string, aggressive bool) {
	col := &collection{list: list, path: path, refs: make([][]byte, len(list.vals))}
	for i, row := range list.vals {
		col.refs[i] = rowRef(row, i)
		c.walk(row, path, true, aggressive)
	}
	c.colls = append(c.colls, col)
	c.collOf[list] = col
}

func (c *compactor) walk(n *node, path string, inRow, aggressive bool) {
	switch n.kind {
	case '{':
		for i, k := range n.keys {
			if protectedKey(k) {
				continue
			}
			v := n.vals[i]
			p := k
			if path != "" {
				p = path + "." + k
			}
			switch {
			case v.kind == '[' && !inRow && (collectionKeys[strings.ToLower(k)] || aggressive && len(v.vals) > 0):
				c.addCollection(v, p, aggressive)
			case v.kind == '"' && (textKeys[strings.ToLower(k)] || aggressive && !refKey(k)):
				c.texts[v] = true
			default:
				c.walk(v, p, inRow, aggressive)
			}
		}
	case '[':
		for _, v := range n.vals {
			c.walk(v, path, inRow, aggressive)
		}
	}
}

// rowRef is an omitted row's reference: its id, path, date and source
// fields, or its index when it has none.
func rowRef(row *node, index int) []byte {
	var b []byte
	if row.kind == '{' {
		for i, k := range row.keys {
			v := row.vals[i]
			if v.kind == '{' || v.kind == '[' || len(v.raw) > 256 || !refKey(k) {
				continue
			}
			if b == nil {
				b = append(b, '{')
			} else {
				b = append(b, ',')
			}
			b = evidence.AppendJSONString(b, k)
			b = append(b, ':')
			b = append(b, v.raw...)
		}
	}
	if b == nil {
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(index), 10)
	}
	return append(b, '}')
}

// render writes the result for the current plan; ok is false when it
// exceeds maxBytes (rendering stops early then).
func (c *compactor) render(b []byte) ([]byte, bool) {
	c.excerpted = 0
	if c.root.kind == '[' {
		b = append(b, `{"rows":`...)
		b = c.renderCollection(b, c.colls[0])
		b = append(b, ',')
	} else {
		b = append(b, '{')
		for i, k := range c.root.keys {
			b = evidence.AppendJSONString(b, k)
			b = append(b, ':')
			b = c.renderValue(b, c.root.vals[i])
			b = append(b, ',')
			if len(b) > c.maxBytes {
				return b, false
			}
		}
	}
	b = c.appendInfo(b)
	b = append(b, '}')
	return b, len(b) <= c.maxBytes
}

func (c *compactor) renderValue(b []byte, n *node) []byte {
	if col, ok := c.collOf[n]; ok {
		return c.renderCollection(b, col)
	}
	switch n.kind {
	case '{':
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = evidence.AppendJSONString(b, k)
			b = append(b, ':')
			b = c.renderValue(b, n.vals[i])
			if len(b) > c.maxBytes {
				return b
			}
		}
		return append(b, '}')
	case '[':
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.renderValue(b, v)
			if len(b) > c.maxBytes {
				return b
			}
		}
		return append(b, ']')
	case '"':
		if c.texts[n] && c.l >= 0 {
			if s := n.text(); len(s) > c.l {
				c.excerpted++
				return evidence.AppendJSONString(b, excerptMarked(s, c.l))
			}
		}
		return append(b, n.raw...)
	}
	return append(b, n.raw...)
}

func (c *compactor) renderCollection(b []byte, col *collection) []byte {
	b = append(b, '[')
	for i, row := range col.list.vals[:min(c.k, len(col.list.vals))] {
		if i > 0 {
			b = append(b, ',')
		}
		b = c.renderValue(b, row)
		if len(b) > c.maxBytes {
			return b
		}
	}
	return append(b, ']')
}

// Notices written into compacted results.
const (
	rowsNotice = "Tool result compacted to fit the context: collections are sampled in source order (returned = retained + omitted), long text fields are excerpted, every other field is as the tool returned it. Consult the original artifact for the omitted rows, listed by reference in omitted_refs."
	textNotice = "Tool output compacted to fit the context: only its beginning and its end are shown. Consult the original output for the omitted characters."
)

func (c *compactor) appendInfo(b []byte) []byte {
	b = evidence.AppendJSONString(b, c.infoKey)
	b = append(b, `:{"notice":`...)
	b = evidence.AppendJSONString(b, rowsNotice)
	b = append(b, `,"collections":[`...)
	for i, col := range c.colls {
		if i > 0 {
			b = append(b, ',')
		}
		n := len(col.list.vals)
		k := min(c.k, n)
		b = append(b, `{"path":`...)
		b = evidence.AppendJSONString(b, col.path)
		b = append(b, `,"returned":`...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, `,"retained":`...)
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, `,"omitted":`...)
		b = strconv.AppendInt(b, int64(n-k), 10)
		b = append(b, `,"omitted_refs":[`...)
		for j, ref := range col.refs[k:] {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, ref...)
			if len(b) > c.maxBytes {
				return b
			}
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"excerpted_fields":`...)
	b = strconv.AppendInt(b, int64(c.excerpted), 10)
	return append(b, '}')
}

// excerptLevels are the text-field excerpt lengths tried, longest first;
// -1 keeps text whole.
var excerptLevels = []int{-1, 2000, 800, 300, 120, 40, 0}

// compactJSON compacts a valid JSON object or list within maxBytes.
func compactJSON(data []byte, maxBytes int) (string, bool) {
	p := parser{data: data}
	c := &compactor{root: p.value(), maxBytes: maxBytes, infoKey: "_compaction"}
	if c.root.kind == '{' {
		for c.hasKey(c.root, c.infoKey) {
			c.infoKey = "_" + c.infoKey
		}
	}
	var buf []byte
	for _, aggressive := range []bool{false, true} {
		c.classify(aggressive)
		maxK := 0
		for _, col := range c.colls {
			maxK = max(maxK, len(col.list.vals))
		}
		bestK, bestL := -1, 0
		for _, l := range excerptLevels {
			c.l = l
			if !c.fits(&buf, 0) {
				continue
			}
			// The largest k that fits: fits(lo) holds, fits(hi+1) does not.
			lo, hi := 0, maxK
			for lo < hi {
				mid := (lo + hi + 1) / 2
				if c.fits(&buf, mid) {
					lo = mid
				} else {
					hi = mid - 1
				}
			}
			if lo > bestK {
				bestK, bestL = lo, l
			}
			if lo == maxK {
				break
			}
		}
		if bestK >= 0 {
			c.k, c.l = bestK, bestL
			out, _ := c.render(buf[:0])
			return string(out), true
		}
	}
	return "", false
}

func (c *compactor) fits(buf *[]byte, k int) bool {
	c.k = k
	var ok bool
	*buf, ok = c.render((*buf)[:0])
	return ok
}

func (c *compactor) hasKey(n *node, key string) bool {
	for _, k := range n.keys {
		if k == key {
			return true
		}
	}
	return false
}

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
		b = evidence.AppendJSONString(b, textNotice)
		b = append(b, `,"characters":`...)
		b = strconv.AppendInt(b, int64(total), 10)
		b = append(b, `,"omitted_characters":`...)
		b = strconv.AppendInt(b, int64(omitted), 10)
		b = append(b, `,"beginning":`...)
		b = evidence.AppendJSONString(b, head)
		b = append(b, `,"end":`...)
		b = evidence.AppendJSONString(b, tail)
		b = append(b, '}')
		if len(b) <= maxBytes {
			return string(b), true
		}
		if h == 0 {
			break
		}
		h = min(h-1, h-(len(b)-maxBytes+1)/2)
		h = max(h, 0)
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
