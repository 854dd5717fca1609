package modelnote

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recallhq/recall/checkpoint"
)

// Message is one message the lane may read: an evidential message of the
// history, with its index there.
type Message struct {
	Index int
	Role  checkpoint.Role
	ID    string
	Text  string
}

// FromHistory returns the messages of msgs, the history's from index from
// on, that the fold reads (checkpoint.Message.Evidential): user text, and
// assistant text of messages without tool calls, on the conversation
// channel, with non-blank text. Nothing else ever enters a transcript.
func FromHistory(msgs []checkpoint.Message, from int) []Message {
	var out []Message
	for i := range msgs {
		m := &msgs[i]
		if !m.Evidential() || strings.TrimSpace(m.Text) == "" {
			continue
		}
		out = append(out, Message{Index: from + i, Role: m.Role, ID: m.ID, Text: m.Text})
	}
	return out
}

// The defaults of Config.
const (
	// DefaultContextTurns is how many user turns ride along as context.
	DefaultContextTurns = 2
	// MaxContextTurns bounds ContextTurns.
	MaxContextTurns = 10
	// DefaultMaxBytes bounds a transcript: about 5,500 tokens at the
	// token estimate's 3 bytes a token, which leaves room for the system
	// message and the answer in an 8k-token context window.
	DefaultMaxBytes = 16 << 10
)

// Config says what a call sends.
type Config struct {
	// ContextTurns is how many user turns before the new messages ride
	// along as context (the rolling pair window), at most MaxContextTurns;
	// 0 sends none.
	ContextTurns int
	// CaptureAssistant lets assistant messages into the transcript, as
	// context and as sources; without it only user messages enter.
	CaptureAssistant bool
	// MaxBytes bounds the transcript (the user message). The new messages
	// are never cut: a call takes at least one whole, and as many more as
	// fit; the window gets the room left. Defaults to DefaultMaxBytes.
	MaxBytes int
}

func (c *Config) maxBytes() int {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultMaxBytes
}

// enters reports whether m may enter a transcript under c.
func (c *Config) enters(m *Message) bool {
	return m.Role == checkpoint.RoleUser || (c.CaptureAssistant && m.Role == checkpoint.RoleAssistant)
}

// Call is what one call to the model covers.
type Call struct {
	// Context is the pair window: messages before the new ones, marked as
	// context; never sources.
	Context []Message
	// New are the call's new messages, the only sources its notes may
	// cite.
	New []Message
	// End is the index after the range this call covers: where the next
	// call starts.
	End int
}

// Plan chooses one call. held are the lane's messages (FromHistory) from
// the window's start on, in index order; the range to note is [lo, hi).
// The call's new messages are those of the range that may enter the
// transcript, from lo on, as many as fit cfg's bound (at least one, each
// whole); End is hi when all of them fit, else the index of the first left
// for the next call. The window is the last cfg.ContextTurns user turns
// before lo, with the assistant's replies among them when assistant
// capture is on, in history order, always starting with a user message;
// when the room left is short, whole turns go, the oldest first. A call
// with no new messages needs no model.
func Plan(held []Message, lo, hi int, cfg *Config) Call {
	call := Call{End: hi}
	room := cfg.maxBytes() - len(newOpen) - len(newClose)
	var before []Message
	for i := range held {
		m := &held[i]
		switch {
		case !cfg.enters(m):
		case m.Index < lo:
			before = append(before, *m)
		case m.Index < hi:
			n := blockLen(m)
			if len(call.New) > 0 && n > room {
				call.End = m.Index
				return call.withWindow(before, cfg.ContextTurns, room)
			}
			call.New = append(call.New, *m)
			room -= n
		}
	}
	return call.withWindow(before, cfg.ContextTurns, room)
}

// withWindow sets c.Context to the window of turns user turns at the end
// of before, cut to room bytes.
func (c Call) withWindow(before []Message, turns, room int) Call {
	if len(c.New) == 0 || turns <= 0 {
		return c
	}
	// The starts of the last turns user turns.
	var starts []int
	for i := len(before) - 1; i >= 0 && len(starts) < turns; i-- {
		if before[i].Role == checkpoint.RoleUser {
			starts = append(starts, i)
		}
	}
	room -= len(contextOpen) + len(contextClose)
	size := 0
	from := len(before)
	for _, s := range starts { // newest turn first
		n := 0
		for j := s; j < from; j++ {
			n += blockLen(&before[j])
		}
		if size+n > room {
			break
		}
		size += n
		from = s
	}
	if from < len(before) {
		c.Context = before[from:]
	}
	return c
}

// WindowStart returns where the pair window of a call that starts at lo
// begins: the index of the turns-th last user message of held before lo
// (the oldest there is, when fewer), or lo when turns is 0 or there is
// none. A store keeps the messages from there on, and may drop the ones
// before.
func WindowStart(held []Message, lo, turns int) int {
	start := lo
	for i := len(held) - 1; i >= 0 && turns > 0; i-- {
		if held[i].Index < lo && held[i].Role == checkpoint.RoleUser {
			start = held[i].Index
			turns--
		}
	}
	return start
}

// The transcript's sections.
const (
	contextOpen  = "<context>\n"
	contextClose = "</context>\n"
	newOpen      = "<new_messages>\n"
	newClose     = "</new_messages>\n"
)

// Transcript returns the call's user message: the window inside
// <context>…</context> (left out when empty), then the new messages inside
// <new_messages>…</new_messages>, each message one block.
func (c *Call) Transcript() string {
	var b strings.Builder
	if len(c.Context) > 0 {
		b.WriteString(contextOpen)
		for i := range c.Context {
			writeBlock(&b, &c.Context[i])
		}
		b.WriteString(contextClose)
	}
	b.WriteString(newOpen)
	for i := range c.New {
		writeBlock(&b, &c.New[i])
	}
	b.WriteString(newClose)
	return b.String()
}

// tagName returns the block tag of a role.
func tagName(r checkpoint.Role) string {
	if r == checkpoint.RoleAssistant {
		return "assistant_message"
	}
	return "user_message"
}

// writeBlock writes <tag index="N">\ntext\n</tag>\n with the text
// neutralised.
func writeBlock(b *strings.Builder, m *Message) {
	tag := tagName(m.Role)
	b.WriteString("<")
	b.WriteString(tag)
	b.WriteString(` index="`)
	b.WriteString(strconv.Itoa(m.Index))
	b.WriteString("\">\n")
	b.WriteString(Neutralise(m.Text))
	b.WriteString("\n</")
	b.WriteString(tag)
	b.WriteString(">\n")
}

// blockLen returns the length of m's block.
func blockLen(m *Message) int {
	tag := tagName(m.Role)
	return 2*len(tag) + len(`< index="">`) + len("\n\n</>\n") + len(strconv.Itoa(m.Index)) + len(Neutralise(m.Text))
}

// tagNames are the names a literal tag inside a message must not spell:
// the transcript's own, and the speakers a model might take for one. A
// "_" in them also matches "-" and white space.
var tagNames = []string{"user_message", "assistant_message", "system_message", "tool_message", "context", "new_messages"}

// neutralLT replaces the "<" of a tag typed inside a message: the
// full-width less-than sign, which reads the same to a person and opens no
// tag.
const neutralLT = "＜"

// Neutralise returns text with every literal speaker tag made inert: a "<"
// that, after white space, "/", "\" and invisible format characters, is
// followed by one of the transcript's tag names (in any case) becomes
// "＜". Nothing else changes, so a block holds its message whole and
// no content can open or close one.
func Neutralise(text string) string {
	if !strings.Contains(text, "<") {
		return text
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(text); i++ {
		if text[i] != '<' || !tagAfter(text[i+1:]) {
			continue
		}
		if last == 0 {
			b.Grow(len(text) + 8)
		}
		b.WriteString(text[last:i])
		b.WriteString(neutralLT)
		last = i + 1
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// tagAfter reports whether s, after what a tag may hide behind, starts
// with a tag name.
func tagAfter(s string) bool {
	s = skipIgnorable(s)
	for _, name := range tagNames {
		if spells(s, name) {
			return true
		}
	}
	return false
}

// skipIgnorable skips white space, "/", "\" and format characters (such as
// zero-width spaces).
func skipIgnorable(s string) string {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r != '/' && r != '\\' && !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) {
			break
		}
		s = s[n:]
	}
	return s
}

// spells reports whether s starts with name, ASCII letters in any case,
// format characters anywhere ignored, and a "_" of name matching any run
// of "_", "-" and white space, or none ("usermessage").
func spells(s, name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] == '_' {
			for len(s) > 0 {
				r, n := utf8.DecodeRuneInString(s)
				if r != '_' && r != '-' && !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) {
					break
				}
				s = s[n:]
			}
			continue
		}
		for len(s) > 0 {
			r, n := utf8.DecodeRuneInString(s)
			if !unicode.Is(unicode.Cf, r) {
				break
			}
			s = s[n:]
		}
		if len(s) == 0 || s[0]|0x20 != name[i] {
			return false
		}
		s = s[1:]
	}
	return true
}

// HasTag reports whether text holds a literal speaker tag that Neutralise
// would make inert: a note that does was echoed from the transcript's
// markup, not taken from a message.
func HasTag(text string) bool {
	return Neutralise(text) != text
}
