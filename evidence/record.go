package evidence

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/recallhq/recall/checkpoint"
)

// Record is a conversation's evidence as stored: the state's scalars and the
// body fragment that AppendBody rendered when the state last changed, so
// that serving it needs no decoding. The zero Record (with its key set) is
// an unknown or deleted conversation.
type Record struct {
	UserID         string
	ConversationID string
	Version        int64
	Cursor         int
	MessageCount   int
	// PrefixDigest is the chain digest of [0, Cursor); ChainStart() when
	// nothing is summarised.
	PrefixDigest checkpoint.Digest
	// UpdatedAt is when the state last changed; zero for unknown keys.
	UpdatedAt time.Time
	// Body is AppendBody(nil, &state, 0); nil for unknown or deleted keys.
	Body []byte
	// View is the focus view's entries in priority order, as JSON
	// ([]Shown); nil in the seed profile.
	View []byte
	// Carry is the focus fold's carry (MarshalCarry); nil in the seed
	// profile and before the first extraction.
	Carry []byte
}

// emptyBody is the body of a conversation with no evidence.
var emptyBody = func() []byte {
	s := NewState()
	return AppendBody(nil, &s, 0)
}()

// AppendJSON appends the read API's response for r.
func (r *Record) AppendJSON(b []byte, lagging bool) []byte {
	return r.appendJSON(b, r.Body, lagging)
}

// AppendJSONWithin appends the response with the message rendered within
// maxTokens estimated tokens (max_tokens).
func (r *Record) AppendJSONWithin(b []byte, maxTokens int, lagging bool) ([]byte, error) {
	s, err := r.State()
	if err != nil {
		return b, err
	}
	return r.appendJSON(b, AppendBody(nil, &s, maxTokens), lagging), nil
}

func (r *Record) appendJSON(b, body []byte, lagging bool) []byte {
	if body == nil {
		body = emptyBody
	}
	prefix := r.PrefixDigest
	if r.Cursor == 0 {
		prefix = checkpoint.ChainStart()
	}
	b = append(b, `{"user_id":`...)
	b = appendSafeString(b, r.UserID)
	b = append(b, `,"conversation_id":`...)
	b = appendSafeString(b, r.ConversationID)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, r.Version, 10)
	b = append(b, `,"cursor":`...)
	b = strconv.AppendInt(b, int64(r.Cursor), 10)
	b = append(b, `,"message_count":`...)
	b = strconv.AppendInt(b, int64(r.MessageCount), 10)
	b = append(b, `,"prefix_digest":"`...)
	b = append(b, prefix.String()...)
	b = append(b, `",`...)
	b = append(b, body...)
	b = append(b, `,"updated_at":`...)
	if r.UpdatedAt.IsZero() {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = r.UpdatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"lagging":`...)
	b = strconv.AppendBool(b, lagging)
	return append(b, '}')
}

// Message returns the stored evidence message (the one the read API
// answers with when no max_tokens is asked for): nil when the conversation
// has none.
func (r *Record) Message() (*EvidenceMessage, error) {
	if r.Body == nil {
		return nil, nil
	}
	var body struct {
		Message *EvidenceMessage `json:"message"`
	}
	raw := make([]byte, 0, len(r.Body)+2)
	raw = append(append(append(raw, '{'), r.Body...), '}')
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("decode the stored evidence message: %w", err)
	}
	return body.Message, nil
}

// State decodes the record back into a State.
func (r *Record) State() (State, error) {
	s := NewState()
	s.Version, s.Cursor, s.MessageCount, s.PrefixDigest = r.Version, r.Cursor, r.MessageCount, r.PrefixDigest
	if r.Cursor == 0 {
		s.PrefixDigest = checkpoint.ChainStart()
	}
	if r.Body == nil {
		return s, nil
	}
	var body struct {
		OmittedEntries int     `json:"omitted_entries"`
		Buckets        Buckets `json:"buckets"`
	}
	raw := make([]byte, 0, len(r.Body)+2)
	raw = append(append(append(raw, '{'), r.Body...), '}')
	if err := json.Unmarshal(raw, &body); err != nil {
		return s, err
	}
	s.OmittedEntries = body.OmittedEntries
	s.Buckets = body.Buckets.clone()
	if r.View != nil {
		if err := json.Unmarshal(r.View, &s.Shown); err != nil {
			return s, err
		}
		if s.Shown == nil {
			s.Shown = []Shown{}
		}
	}
	return s, nil
}
