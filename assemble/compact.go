package assemble

import (
	"bytes"
	"strings"
	"unsafe"

	"github.com/recallhq/recall/checkpoint"
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
func compactToolResult(m *checkpoint.Message, maxBytes int) (string, bool) {
	for _, src := range [][]byte{m.Artifact, bytes.TrimSpace(bytesOf(m.Text))} {
		if !isContainer(src) {
			continue
		}
		root, ok, release := parseJSON(src)
		if ok {
			out, ok := compactJSON(root, maxBytes)
			release()
			return out, ok
		}
		release()
	}
	return compactText(m.Text, maxBytes)
}

// bytesOf views s as bytes without copying it: the parser only reads its
// input, and what it keeps of it is copied when written out.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func isContainer(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '{' || raw[0] == '[')
}

// collection is a sampled row list.
type collection struct {
	list  *node
	path  string
	refs  [][]byte // each row's full reference (nil: none), built on first use
	brief [][]byte // each row's brief reference (nil: none), built on first use
}

type compactor struct {
	root     *node
	maxBytes int
	infoKey  string

	colls []*collection
	texts int // excerptable text fields

	// The plan being rendered: rows kept per collection, the excerpt
	// length of text fields (-1: whole) and whether omitted rows get brief
	// references.
	k, l      int
	brief     bool
	excerpted int
}

// keyClass is what a key name is, computed once per distinct key.
type keyClass struct {
	protected, collection, text, ref bool
	rank                             int // refRank, for brief references
}

func classOf(k *objKey) *keyClass {
	if k.class == nil {
		lower := strings.ToLower(k.name)
		k.class = &keyClass{
			protected: protectedKey(k.name), collection: collectionKeys[lower], text: textKeys[lower],
			ref: refKey(k.name), rank: refRank(k.name),
		}
	}
	return k.class
}

// classify finds the collections and text fields. The first pass knows only
// the recognised names; the aggressive one samples any list and excerpts
// any string that is not a reference.
func (c *compactor) classify(aggressive bool) {
	for _, col := range c.colls {
		col.list.coll = nil
	}
	c.colls, c.texts = nil, 0
	if c.root.kind == '[' {
		c.addCollection(c.root, "rows", aggressive)
		return
	}
	c.walk(c.root, "", false, aggressive)
}

func (c *compactor) addCollection(list *node, path string, aggressive bool) {
	col := &collection{list: list, path: path}
	for _, row := range list.vals() {
		c.walk(row, path, true, aggressive)
	}
	c.colls = append(c.colls, col)
	list.coll = col
}

func (c *compactor) walk(n *node, path string, inRow, aggressive bool) {
	switch n.kind {
	case '{':
		for i, k := range n.keys() {
			kc := classOf(k)
			if kc.protected {
				continue
			}
			v := n.vals()[i]
			switch {
			case v.kind == '[' && !inRow && (kc.collection || aggressive && len(v.vals()) > 0):
				c.addCollection(v, joinPath(path, k.name), aggressive)
			case v.kind == '"' && (kc.text || aggressive && !kc.ref):
				v.textField = true
				c.texts++
			case v.kind == '{' || v.kind == '[':
				if !inRow {
					c.walk(v, joinPath(path, k.name), inRow, aggressive)
				} else {
					c.walk(v, path, inRow, aggressive)
				}
			}
		}
	case '[':
		for _, v := range n.vals() {
			c.walk(v, path, inRow, aggressive)
		}
	}
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// references returns each row's reference (nil for none).
func (col *collection) references(brief bool) [][]byte {
	refs := &col.refs
	if brief {
		refs = &col.brief
	}
	if *refs == nil {
		*refs = make([][]byte, len(col.list.vals()))
		var buf []byte
		for i, row := range col.list.vals() {
			start := len(buf)
			buf = appendRowRef(buf, row, brief)
			if len(buf) > start {
				(*refs)[i] = buf[start:len(buf):len(buf)]
			}
		}
	}
	return *refs
}

// appendRowRef appends an omitted row's reference: its id, path, date and
// source fields (full), or only the first of them by refPriority (brief);
// nothing when the row has none, as its position identifies it.
func appendRowRef(b []byte, row *node, brief bool) []byte {
	if row.kind != '{' {
		return b
	}
	if brief {
		best, rank := -1, len(refPriority)+1
		for i, k := range row.keys() {
			kc := classOf(k)
			if v := row.vals()[i]; v.kind == '{' || v.kind == '[' || len(v.raw) > 256 || !kc.ref {
				continue
			}
			if kc.rank < rank {
				best, rank = i, kc.rank
			}
		}
		if best < 0 {
			return b
		}
		return append(b, row.vals()[best].raw...)
	}
	start := len(b)
	for i, k := range row.keys() {
		v := row.vals()[i]
		if v.kind == '{' || v.kind == '[' || len(v.raw) > 256 || !classOf(k).ref {
			continue
		}
		if len(b) == start {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, k.quoted...)
		b = append(b, ':')
		b = append(b, v.raw...)
	}
	if len(b) == start {
		return b
	}
	return append(b, '}')
}

// refPriority orders the kinds of reference for brief references: an id
// names a row best, then a path or address, then a source, then a date.
var refPriority = []func(k string) bool{
	func(k string) bool { return k == "id" },
	func(k string) bool { return strings.HasSuffix(k, "_id") || k == "uuid" || k == "guid" || k == "key" },
	func(k string) bool {
		return k == "path" || k == "file" || k == "filename" || k == "url" || k == "uri" || k == "href" || k == "link" ||
			strings.HasSuffix(k, "_path") || strings.HasSuffix(k, "_url")
	},
	func(k string) bool {
		return strings.HasPrefix(k, "source") || k == "ref" || k == "reference" || k == "page"
	},
}

func refRank(k string) int {
	if strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "ID") {
		return 1
	}
	k = strings.ToLower(k)
	for i, f := range refPriority {
		if f(k) {
			return i
		}
	}
	return len(refPriority) // dates and timestamps
}

// compactJSON compacts a parsed JSON object or list within maxBytes. It
// keeps as many rows as fit, trading excerpt length for rows only when that
// buys half as many rows again, and brief references for full ones only
// when that keeps a tenth more rows; lists and strings without recognised names are
// shrunk only when nothing else fits.
func compactJSON(root *node, maxBytes int) (string, bool) {
	c := &compactor{root: root, maxBytes: maxBytes, infoKey: "_compaction"}
	if c.root.kind == '{' {
		for c.hasKey(c.root, c.infoKey) {
			c.infoKey = "_" + c.infoKey
		}
	}
	var buf, scratch []byte
	for _, aggressive := range []bool{false, true} {
		c.classify(aggressive)
		maxK := 0
		for _, col := range c.colls {
			maxK = max(maxK, len(col.list.vals()))
		}
		c.brief = false
		k, l := c.search(&buf, &scratch, maxK)
		brief := false
		if k < maxK && len(c.colls) > 0 {
			c.brief = true
			// Brief references must buy a tenth more rows (one at least).
			if bk, bl := c.search(&buf, &scratch, maxK); bk > k && (k <= 0 || bk >= k+max(1, k/10)) {
				k, l, brief = bk, bl, true
			}
		}
		if k >= 0 {
			c.k, c.l, c.brief = k, l, brief
			out, _ := c.render(buf[:0])
			return string(out), true
		}
	}
	return "", false
}

// search returns the most rows per collection that fit with the current
// references, and the excerpt length to use; k is -1 when nothing fits.
func (c *compactor) search(buf, scratch *[]byte, maxK int) (k, l int) {
	levels := excerptLevels
	if c.texts == 0 {
		levels = levels[:1]
	}
	bestK, bestL := -1, 0
	for _, l := range levels {
		if bestK > 0 && l < minUsefulExcerpt {
			break
		}
		c.l = l
		k := c.largestK(buf, scratch, maxK)
		// Shorter excerpts must buy half as many rows again.
		if k > bestK && (bestK <= 0 || k >= bestK+(bestK+1)/2) {
			bestK, bestL = k, l
		}
		if k == maxK {
			break
		}
	}
	return bestK, bestL
}

// largestK returns the most rows per collection that fit with the current
// excerpt length and references, -1 when not even none do. It renders the
// result without rows once, adds rows one at a time by their own rendered
// size less their references, and confirms with a full render.
func (c *compactor) largestK(buf, scratch *[]byte, maxK int) int {
	c.k = 0
	var ok bool
	if *buf, ok = c.render((*buf)[:0]); !ok {
		return -1
	}
	size := len(*buf)
	// Counts grow by a digit or so as rows are added: leave room.
	slack := 8 * len(c.colls)
	k := 0
	for ; k < maxK; k++ {
		add := 0
		for _, col := range c.colls {
			if k >= len(col.list.vals()) {
				continue
			}
			*scratch = c.renderValue((*scratch)[:0], col.list.vals()[k])
			add += len(*scratch) + 1
			if ref := col.references(c.brief)[k]; ref != nil {
				add -= len(ref) + 1
			}
		}
		if size+add+slack > c.maxBytes {
			break
		}
		size += add
	}
	for ; k > 0; k-- {
		c.k = k
		if *buf, ok = c.render((*buf)[:0]); ok {
			return k
		}
	}
	return 0
}

func (c *compactor) hasKey(n *node, key string) bool {
	for _, k := range n.keys() {
		if k.name == key {
			return true
		}
	}
	return false
}
