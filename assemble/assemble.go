package assemble

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// Build assembles the bounded view of one model call from req. It does
// not change req.
//
// The system text, the tool schemas and the current turn (the newest user
// message and what follows it) are mandatory: when they exceed the limit
// Build returns an *Error with CodeBudgetTooSmall. The evidence message
// comes next, left out when it would not fit beside them; then history in
// whole turns, newest first, until the limit. A tool result over the
// per-result limit is compacted; one that cannot be compacted drops its
// turn, or, in the current turn, fails Build with CodeCannotCompact.
func Build(req *Request) (*Result, error) {
	limit, err := req.Budget.Limit()
	if err != nil {
		return nil, err
	}
	msgs := req.Messages
	cur := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == checkpoint.RoleUser && msgs[i].IsConversation() {
			cur = i
			break
		}
	}
	if cur < 0 {
		return nil, invalid(CodeNoUserMessage, "messages", "holds no user message on the conversation channel: the newest one is the current request")
	}
	b := &builder{budget: req.Budget}
	res := &Result{Limit: limit}

	system := req.System
	if system == "" {
		system = leadingSystemText(msgs[:cur])
	}
	if system != "" {
		res.Tokens.System = evidence.EstimateTokens(len(system))
		res.Messages = append(res.Messages, Message{
			Role: checkpoint.RoleSystem, Content: checkpoint.AppendJSONString(nil, system), Tokens: res.Tokens.System,
		})
	}
	for i, raw := range req.Tools {
		n, err := b.schemaTokens(raw)
		if err != nil {
			return nil, invalid(CodeInvalidRequest, fmt.Sprintf("tools[%d]", i), err.Error())
		}
		res.Tokens.Tools += n
	}

	current, err := b.turn(msgs[cur:], true, math.MaxInt)
	if err != nil {
		return nil, err
	}
	res.Tokens.Current = current.tokens
	used := res.Tokens.System + res.Tokens.Tools + res.Tokens.Current
	if used > limit {
		return nil, &Error{Code: CodeBudgetTooSmall, Message: fmt.Sprintf(
			"the system text (%d estimated tokens), the tool schemas (%d) and the current turn (%d) need %d; the limit is %d: raise budget.prompt or budget.context_window, or send fewer tools",
			res.Tokens.System, res.Tokens.Tools, res.Tokens.Current, used, limit)}
	}

	// The evidence is charged before history: history gets the room it
	// leaves.
	var evMsg *evidence.EvidenceMessage
	evTokens := 0
	if ev := req.Evidence; ev != nil {
		res.Evidence = EvidenceInfo{Version: ev.Version, Cursor: ev.Cursor, Lagging: ev.Lagging}
		if ev.Message != nil {
			if n := evidence.EstimateTokens(len(ev.Message.Content)); used+n <= limit {
				evMsg, evTokens = ev.Message, n
			}
		}
	}
	used += evTokens

	// History, newest turn first, until the limit.
	starts := turnStarts(msgs[:cur])
	var kept []turn
	oldest := cur // the oldest message kept whole
	end := cur
history:
	for j := len(starts) - 1; j >= 0; j-- {
		seg := msgs[starts[j]:end]
		end = starts[j]
		t, err := b.turn(seg, false, limit-used)
		switch {
		case errors.Is(err, ErrCannotCompact):
			res.DroppedTurns++ // a tool result that cannot be compacted: the turn goes whole
			continue
		case err == nil && len(t.msgs) == 0:
			continue
		case err != nil: // no room
			res.DroppedTurns++
			for k := j - 1; k >= 0; k-- {
				if hasConversation(msgs[starts[k]:starts[k+1]]) {
					res.DroppedTurns++
				}
			}
			break history
		}
		used += t.tokens
		res.Tokens.History += t.tokens
		res.CompactedToolResults += t.compacted
		kept = append(kept, t)
		oldest = starts[j]
	}

	// Evidence that complements the history: chosen from the messages
	// older than the oldest one kept, within the room reserved for it.
	if evMsg != nil && req.Complement != nil {
		used -= evTokens
		evMsg, evTokens = nil, 0
		if oldest > 0 {
			m, err := req.Complement(msgs[cur].Text, oldest, limit-used)
			if err != nil {
				return nil, err
			}
			if m != nil {
				if n := evidence.EstimateTokens(len(m.Content)); used+n <= limit {
					evMsg, evTokens = m, n
				}
			}
		}
		used += evTokens
	}
	if evMsg != nil {
		res.Evidence.Included = true
		res.Tokens.Evidence = evTokens
		res.Messages = append(res.Messages, Message{
			Role: checkpoint.RoleAssistant, Content: checkpoint.AppendJSONString(nil, evMsg.Content), Tokens: evTokens,
		})
	}
	for j := len(kept) - 1; j >= 0; j-- {
		res.Messages = append(res.Messages, kept[j].msgs...)
	}
	res.Messages = append(res.Messages, current.msgs...)
	res.CompactedToolResults += current.compacted
	res.Tokens.Total = used
	return res, nil
}

// leadingSystemText joins the text of the system messages at the head of
// msgs: the system prompt of a caller that keeps it in the checkpoint.
func leadingSystemText(msgs []checkpoint.Message) string {
	var parts []string
	for i := range msgs {
		if msgs[i].Role != checkpoint.RoleSystem {
			break
		}
		if msgs[i].IsConversation() && msgs[i].Text != "" {
			parts = append(parts, msgs[i].Text)
		}
	}
	return strings.Join(parts, "\n")
}

// turnStarts returns the indexes at which the turns of history begin: each
// user message on the conversation channel, and 0 for what precedes the
// first one.
func turnStarts(msgs []checkpoint.Message) []int {
	var starts []int
	for i := range msgs {
		if i == 0 || (msgs[i].Role == checkpoint.RoleUser && msgs[i].IsConversation()) {
			starts = append(starts, i)
		}
	}
	return starts
}

// hasConversation reports whether seg holds a message a turn could keep.
func hasConversation(seg []checkpoint.Message) bool {
	for i := range seg {
		if seg[i].IsConversation() && seg[i].Role != checkpoint.RoleSystem {
			return true
		}
	}
	return false
}

// builder holds what the turns of one Build share.
type builder struct {
	budget  Budget
	scratch []byte
}

// schemaTokens estimates a tool schema: ceil(bytes of its compact JSON / 3).
func (b *builder) schemaTokens(raw json.RawMessage) (int, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return 0, fmt.Errorf("must be a JSON object (a tool's schema)")
	}
	b.scratch = b.scratch[:0]
	buf := bytes.NewBuffer(b.scratch)
	if err := json.Compact(buf, t); err != nil {
		return 0, fmt.Errorf("must be a JSON object (a tool's schema)")
	}
	b.scratch = buf.Bytes()
	return (buf.Len() + 2) / 3, nil
}

// turn is one turn as kept.
type turn struct {
	msgs      []Message
	tokens    int
	compacted int
}

type callKey struct {
	owner int // index of the calling assistant message in the turn
	id    string
}

// turn builds the kept form of seg, a turn, within room tokens (errNoRoom
// otherwise): non-conversation messages,
// system messages, orphan results and calls without results are left out;
// a kept call keeps its result and a kept result its call. Older turns
// (current false) have their non-text parts replaced by placeholders and
// long prose of assistant messages that call tools shortened.
func (b *builder) turn(seg []checkpoint.Message, current bool, room int) (turn, error) {
	var t turn
	var pending []pendingResult
	var answered map[callKey]bool
	var resultOwner map[int]int
	for i := range seg {
		if seg[i].Role == checkpoint.RoleTool {
			answered, resultOwner = matchCalls(seg)
			break
		}
	}
	for i := range seg {
		m := &seg[i]
		if !m.IsConversation() || m.Role == checkpoint.RoleSystem {
			continue
		}
		out := Message{Role: m.Role, ID: m.ID}
		switch m.Role {
		case checkpoint.RoleTool:
			if _, ok := resultOwner[i]; !ok {
				continue // an orphan, or a second answer to one call
			}
			out.ToolCallID = m.ToolCallID
			// Text bounds the estimate from below: a result far over the
			// limit is compacted without rendering its content first.
			if evidence.EstimateTokens(len(m.Text)) <= b.budget.ToolResultTokens {
				text, images := b.content(&out, m, current, false)
				out.Tokens = evidence.EstimateTokens(len(text)) + images*b.budget.ImageTokens
			} else {
				out.Tokens = evidence.EstimateTokens(len(m.Text))
			}
			if out.Tokens > b.budget.ToolResultTokens {
				// Compacted below, once the turn is known to have room.
				pending = append(pending, pendingResult{pos: len(t.msgs), index: i, tokens: out.Tokens})
				out.Tokens = 0
			}
		case checkpoint.RoleAssistant:
			seen := map[string]bool{}
			for _, c := range m.ToolCalls {
				if answered[callKey{i, c.ID}] && !seen[c.ID] {
					seen[c.ID] = true
					out.ToolCalls = append(out.ToolCalls, c)
				}
			}
			if len(out.ToolCalls) == 0 && strings.TrimSpace(m.Text) == "" && !hasNonText(m) {
				continue // only calls that were never answered
			}
			text, images := b.content(&out, m, current, len(out.ToolCalls) > 0)
			calls := 0
			if len(out.ToolCalls) > 0 {
				b.scratch = appendToolCalls(b.scratch[:0], out.ToolCalls)
				calls = len(b.scratch)
			}
			out.Tokens = evidence.EstimateTokens(len(text)+calls) + images*b.budget.ImageTokens
		default:
			text, images := b.content(&out, m, current, false)
			out.Tokens = evidence.EstimateTokens(len(text)) + images*b.budget.ImageTokens
		}
		t.tokens += out.Tokens
		t.msgs = append(t.msgs, out)
	}
	for j, p := range pending {
		// A compacted result holds at least its notice: when even that
		// does not fit, the turn does not, and compacting would be waste.
		if t.tokens+(len(pending)-j)*compactedFloor > room {
			return t, errNoRoom
		}
		m := &seg[p.index]
		c, ok := compactToolResult(m, 3*(b.budget.ToolResultTokens-4))
		if !ok {
			if current {
				return t, &Error{Code: CodeCannotCompact, Message: fmt.Sprintf(
					"tool result %d of the current turn (%d estimated tokens) cannot be compacted within budget.tool_result_tokens (%d) without cutting its references or structure",
					p.index, p.tokens, b.budget.ToolResultTokens)}
			}
			return t, ErrCannotCompact
		}
		out := &t.msgs[p.pos]
		out.Content = checkpoint.AppendJSONString(nil, c)
		out.Tokens = evidence.EstimateTokens(len(c))
		t.tokens += out.Tokens
		t.compacted++
	}
	if t.tokens > room {
		return t, errNoRoom
	}
	return t, nil
}

// errNoRoom reports a turn that does not fit in the room left.
var errNoRoom = errors.New("no room for the turn")

// compactedFloor bounds a compacted result's estimate from below: it
// always carries one of the notices.
var compactedFloor = evidence.EstimateTokens(min(len(rowsNotice), len(textNotice)))

type pendingResult struct {
	pos    int // in the turn's kept messages
	index  int // in the turn
	tokens int // before compaction
}

// matchCalls pairs each tool call of seg with the first result after it
// that names its id.
func matchCalls(seg []checkpoint.Message) (answered map[callKey]bool, resultOwner map[int]int) {
	answered, resultOwner = map[callKey]bool{}, map[int]int{}
	pending := map[string]int{}
	for i := range seg {
		m := &seg[i]
		if !m.IsConversation() {
			continue
		}
		switch m.Role {
		case checkpoint.RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.ID == "" {
					continue
				}
				if _, ok := pending[c.ID]; !ok {
					pending[c.ID] = i
				}
			}
		case checkpoint.RoleTool:
			owner, ok := pending[m.ToolCallID]
			if !ok {
				continue
			}
			delete(pending, m.ToolCallID)
			answered[callKey{owner, m.ToolCallID}] = true
			resultOwner[i] = owner
		}
	}
	return answered, resultOwner
}

// Placeholders and markers written into older turns.
const (
	imagePlaceholder      = "[image omitted]"
	attachmentPlaceholder = "[attachment omitted]"
	// proseLimit is the longest prose an older assistant message that calls
	// tools keeps; proseExcerpt is what it is shortened to.
	proseLimit   = 1200
	proseExcerpt = 800
)

type part struct {
	raw  json.RawMessage
	typ  string
	text string
}

// parts decodes a content part list.
func parts(content json.RawMessage) []part {
	var raws []json.RawMessage
	if json.Unmarshal(content, &raws) != nil {
		return nil
	}
	ps := make([]part, len(raws))
	for i, raw := range raws {
		ps[i].raw = raw
		var p struct {
			Type string          `json:"type"`
			Text json.RawMessage `json:"text"`
		}
		if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &p) == nil {
			ps[i].typ = p.Type
			if p.Type == "text" {
				_ = json.Unmarshal(p.Text, &ps[i].text)
			}
		}
	}
	return ps
}

func hasNonText(m *checkpoint.Message) bool {
	if m.StringContent || len(m.Content) <= 2 {
		return false
	}
	for _, p := range parts(m.Content) {
		if p.typ != "text" {
			return true
		}
	}
	return false
}

// content sets out.Content from m and returns the text it is estimated by
// and its count of non-text parts. The current turn keeps content as given;
// older turns get placeholders for non-text parts and, for assistant
// messages that call tools (shorten), a marked excerpt of long prose.
func (b *builder) content(out *Message, m *checkpoint.Message, current, shorten bool) (string, int) {
	if !current && shorten && len(m.Text) > proseLimit {
		text := excerptMarked(m.Text, proseExcerpt)
		out.Content = checkpoint.AppendJSONString(nil, text)
		return text, 0
	}
	if m.StringContent || len(m.Content) == 0 || string(m.Content) == "[]" {
		out.Content = checkpoint.AppendJSONString(nil, m.Text)
		return m.Text, 0
	}
	ps := parts(m.Content)
	images := 0
	for _, p := range ps {
		if p.typ != "text" {
			images++
		}
	}
	if images == 0 || current {
		out.Content = m.Content
		return m.Text, images
	}
	c := []byte{'['}
	texts := make([]string, 0, len(ps))
	for i, p := range ps {
		if i > 0 {
			c = append(c, ',')
		}
		if p.typ == "text" {
			c = append(c, p.raw...)
			texts = append(texts, p.text)
			continue
		}
		ph := attachmentPlaceholder
		if strings.Contains(p.typ, "image") {
			ph = imagePlaceholder
		}
		c = append(c, `{"type":"text","text":`...)
		c = checkpoint.AppendJSONString(c, ph)
		c = append(c, '}')
		texts = append(texts, ph)
	}
	out.Content = append(c, ']')
	return strings.Join(texts, "\n"), 0
}
