package assemble

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

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
		for i, k := range c.root.keys() {
			b = append(b, k.quoted...)
			b = append(b, ':')
			b = c.renderValue(b, c.root.vals()[i])
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
	if n.coll != nil {
		return c.renderCollection(b, n.coll)
	}
	switch n.kind {
	case '{':
		b = append(b, '{')
		for i, k := range n.keys() {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, k.quoted...)
			b = append(b, ':')
			b = c.renderValue(b, n.vals()[i])
			if len(b) > c.maxBytes {
				return b
			}
		}
		return append(b, '}')
	case '[':
		return c.renderList(b, n.vals())
	case '"':
		// A string's decoded form is never longer than its quoted bytes.
		if n.textField && c.l >= 0 && len(n.raw)-2 > c.l {
			if s := n.text(); len(s) > c.l {
				c.excerpted++
				return evidence.AppendJSONString(b, excerptMarked(s, c.l))
			}
		}
		return append(b, n.raw...)
	}
	return append(b, n.raw...)
}

// renderCollection writes the first k rows of col.
func (c *compactor) renderCollection(b []byte, col *collection) []byte {
	return c.renderList(b, col.list.vals()[:min(c.k, len(col.list.vals()))])
}

func (c *compactor) renderList(b []byte, vals []*node) []byte {
	b = append(b, '[')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = c.renderValue(b, v)
		if len(b) > c.maxBytes {
			return b
		}
	}
	return append(b, ']')
}

// Notices written into compacted results.
const (
	rowsNotice = "Compacted to fit the context: collections keep their first rows, long texts are excerpted, all else is as returned. Omitted rows are listed by reference; consult the original artifact for them."
	textNotice = "Compacted to fit the context: only the beginning and the end are shown; consult the original output for the rest."
)

var rowsNoticeJSON = evidence.AppendJSONString(nil, rowsNotice)

func (c *compactor) appendInfo(b []byte) []byte {
	b = evidence.AppendJSONString(b, c.infoKey)
	b = append(b, `:{"notice":`...)
	b = append(b, rowsNoticeJSON...)
	b = append(b, `,"collections":[`...)
	for i, col := range c.colls {
		if i > 0 {
			b = append(b, ',')
		}
		n := len(col.list.vals())
		k := min(c.k, n)
		b = append(b, `{"path":`...)
		b = evidence.AppendJSONString(b, col.path)
		b = append(b, `,"returned":`...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, `,"retained":`...)
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, `,"omitted":`...)
		b = strconv.AppendInt(b, int64(n-k), 10)
		b = append(b, `,"omitted_from_index":`...)
		b = strconv.AppendInt(b, int64(k), 10)
		if c.brief {
			b = append(b, `,"omitted_refs_brief":true`...)
		}
		b = append(b, `,"omitted_refs":[`...)
		first := true
		for _, ref := range col.references(c.brief)[k:] {
			if ref == nil {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
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
var excerptLevels = []int{-1, 1000, 300, 100, 30}

// minUsefulExcerpt is the shortest excerpt worth trading for more rows;
// shorter ones are used only when no row fits otherwise.
const minUsefulExcerpt = 100

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
