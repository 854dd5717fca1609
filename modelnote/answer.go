package modelnote

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/recallhq/recall/evidence"
)

// ErrInvalidAnswer is the error of an answer that is not JSON of the
// answer's shape: a failed call.
var ErrInvalidAnswer = errors.New("the model's answer is not JSON notes")

// Bounds of the notes taken from one answer.
const (
	// MaxNotesPerSource bounds the notes of one source message.
	MaxNotesPerSource = 4
	// MaxNotesPerCall bounds the notes of one call.
	MaxNotesPerCall = 32
)

// Answer is what ParseAnswer takes from a model's answer.
type Answer struct {
	// Notes are the notes kept, in the order written, Ord numbering each
	// source's notes from 0.
	Notes []evidence.Note
	// DroppedSource counts the notes dropped for their source: not one of
	// the call's new messages, or an assistant message without assistant
	// capture.
	DroppedSource int
	// DroppedOther counts the notes dropped otherwise: an unknown bucket, an
	// empty text, a text that echoes the prompt or its markup, a repeat, or
	// one over MaxNotesPerSource or MaxNotesPerCall.
	DroppedOther int
}

// Dropped returns how many notes were dropped.
func (a *Answer) Dropped() int { return a.DroppedSource + a.DroppedOther }

// wireNote is a note as the model writes it.
type wireNote struct {
	Bucket string          `json:"bucket"`
	Text   string          `json:"text"`
	Source json.RawMessage `json:"source"`
}

// ParseAnswer reads a model's answer to call under cfg. The answer must be
// one JSON object with a "notes" array (a Markdown code fence around it, and
// a <think>…</think> block before it, which some models write, are cut
// away unread); anything else is ErrInvalidAnswer. Each note is checked and
// kept or dropped: see Answer. The error never quotes the answer.
func ParseAnswer(content string, call *Call, cfg *Config) (Answer, error) {
	var a Answer
	raw := unwrap(content)
	var body struct {
		Notes *[]json.RawMessage `json:"notes"`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	if err := dec.Decode(&body); err != nil || body.Notes == nil || dec.More() {
		return a, ErrInvalidAnswer
	}
	sources := make(map[int]*Message, len(call.New))
	for i := range call.New {
		sources[call.New[i].Index] = &call.New[i]
	}
	type key struct {
		source int
		text   string
	}
	seen := make(map[key]bool)
	perSource := make(map[int]int)
	for _, rawNote := range *body.Notes {
		var w wireNote
		if err := json.Unmarshal(rawNote, &w); err != nil {
			a.DroppedOther++
			continue
		}
		var index int
		src := (*Message)(nil)
		if json.Unmarshal(w.Source, &index) == nil {
			src = sources[index]
		}
		if src == nil || !cfg.enters(src) {
			a.DroppedSource++
			continue
		}
		bucket := bucketOf(w.Bucket)
		text, truncated := evidence.Excerpt(strings.Join(strings.Fields(strings.ToValidUTF8(w.Text, "\uFFFD")), " "), evidence.MaxNoteBytes)
		k := key{index, strings.ToLower(text)}
		if bucket < 0 || text == "" || echoes(text) || seen[k] ||
			perSource[index] >= MaxNotesPerSource || len(a.Notes) >= MaxNotesPerCall {
			a.DroppedOther++
			continue
		}
		seen[k] = true
		a.Notes = append(a.Notes, evidence.Note{Bucket: bucket, Role: src.Role, MessageID: src.ID, Index: index,
			Ord: perSource[index], Text: text, Truncated: truncated})
		perSource[index]++
	}
	return a, nil
}

// unwrap cuts a <think>…</think> block before the answer, and a Markdown
// code fence around it.
func unwrap(content string) string {
	s := strings.TrimSpace(content)
	if rest, ok := strings.CutPrefix(s, "<think>"); ok {
		if _, after, found := strings.Cut(rest, "</think>"); found {
			s = strings.TrimSpace(after)
		}
	}
	if rest, ok := strings.CutPrefix(s, "```"); ok && strings.HasSuffix(rest, "```") {
		rest = strings.TrimSuffix(rest, "```")
		if i := strings.IndexByte(rest, '\n'); i >= 0 && !bytes.ContainsAny([]byte(rest[:i]), "{[") {
			rest = rest[i+1:] // the fence's language, such as json
		}
		s = strings.TrimSpace(rest)
	}
	return s
}

// bucketOf returns the bucket named s, or -1.
func bucketOf(s string) evidence.Bucket {
	for i, name := range bucketNames {
		if s == name {
			return evidence.Bucket(i)
		}
	}
	return -1
}

// echoes reports whether a note's text echoes the prompt rather than a
// message: it holds the transcript's markup, or a sentence of the system
// message.
func echoes(text string) bool {
	if HasTag(strings.ReplaceAll(text, neutralLT, "<")) {
		return true
	}
	lower := strings.ToLower(text)
	for _, s := range promptSentences {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// Sources returns the indexes of the call's new messages.
func (c *Call) Sources() []int {
	out := make([]int, len(c.New))
	for i := range c.New {
		out[i] = c.New[i].Index
	}
	return out
}

// String describes the call without its text, for logs and errors.
func (c *Call) String() string {
	return fmt.Sprintf("%d new messages up to index %d, %d of context", len(c.New), c.End, len(c.Context))
}
