package assemble

import (
	"strconv"

	"github.com/recallhq/recall/checkpoint"
)

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
				return checkpoint.AppendJSONString(b, excerptMarked(s, c.l))
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

var rowsNoticeJSON = checkpoint.AppendJSONString(nil, rowsNotice)

func (c *compactor) appendInfo(b []byte) []byte {
	b = checkpoint.AppendJSONString(b, c.infoKey)
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
		b = checkpoint.AppendJSONString(b, col.path)
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
