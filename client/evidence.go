package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Evidence is a conversation's evidence, as GET …/evidence and POST
// …/evidence/search answer it. An unknown or deleted conversation has
// Version 0, Cursor 0, empty buckets and no Message.
type Evidence struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	// Version grows by one with each change of the state; 0 for an unknown
	// conversation.
	Version int64 `json:"version"`
	// Cursor is how many leading messages are summarised.
	Cursor int `json:"cursor"`
	// MessageCount is the length of the longest history accepted.
	MessageCount int `json:"message_count"`
	// PrefixDigest is the chain digest of messages [0, Cursor), 64
	// lowercase hex characters.
	PrefixDigest   string `json:"prefix_digest"`
	OmittedEntries int    `json:"omitted_entries"`
	// EstimatedTokens is the estimate of Message (0 when it is nil).
	EstimatedTokens int     `json:"estimated_tokens"`
	Buckets         Buckets `json:"buckets"`
	// Message is the message to put into the next prompt, right after the
	// system message; nil when there is none (or, with MaxTokens, when not
	// even an empty envelope fits).
	Message *Message `json:"message"`
	// UpdatedAt is when the state last changed; zero for an unknown
	// conversation.
	UpdatedAt time.Time `json:"updated_at"`
	// Lagging is true when MinCursor was asked for and Cursor had not
	// reached it by the deadline.
	Lagging bool `json:"lagging"`
}

// Message is the evidence message: Role "assistant" and its Content.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Buckets are the entries of the evidence, by kind.
type Buckets struct {
	Constraints   []Entry `json:"constraints"`
	Decisions     []Entry `json:"decisions"`
	OpenWork      []Entry `json:"open_work"`
	RecentContext []Entry `json:"recent_context"`
}

// Entry is one excerpt of a message of the history.
type Entry struct {
	// Role is "user" or "assistant".
	Role string `json:"role"`
	// MessageID is the message's id; empty when it had none.
	MessageID string `json:"message_id"`
	// Index is the message's index in the history.
	Index int `json:"index"`
	// Excerpt is verbatim text, trimmed, at most 900 UTF-8 bytes.
	Excerpt   string `json:"excerpt"`
	Truncated bool   `json:"truncated"`
	// Span is the [start, end) byte offsets of Excerpt in the message's
	// text, in the focus profile; nil otherwise.
	Span []int `json:"span,omitempty"`
	// Date is, in a view for a request that asks when something happened,
	// the date the history last named at or before the message; "" otherwise.
	Date string `json:"date,omitempty"`
	// ModelNote marks a note the model lane wrote from the message at
	// Index: written by a model, not a quote.
	ModelNote bool `json:"model_note,omitempty"`
	// MaybeChangedBy is the message index of a later entry, shown beside
	// this one, that may correct it; 0 otherwise.
	MaybeChangedBy int `json:"maybe_changed_by,omitempty"`
	// Cut is, for a clause cut out of a longer sentence, the sides on which
	// the sentence goes on: "before", "after" or "both"; "" otherwise.
	Cut string `json:"cut,omitempty"`
}

// EvidenceOptions are the optional parameters of Evidence.
type EvidenceOptions struct {
	// MinCursor, with Wait, makes the answer wait until Cursor is at least
	// MinCursor (pass the index of the newest user message); the answer
	// says Lagging when it did not get there in time. Defaults to 0: any
	// state will do.
	MinCursor int
	// Wait is how long to wait for MinCursor, at most 30s (the server's
	// limit). Defaults to 0: answer at once.
	Wait time.Duration
	// MaxTokens renders Message within this many estimated tokens. Defaults
	// to 0: the stored rendering.
	MaxTokens int
	// MinVersion is the last version seen: the answer is never older (it
	// matters behind a read replica that lags). Defaults to 0: any.
	MinVersion int64
}

// Evidence returns the conversation's evidence (GET …/evidence). opts may
// be nil. By default the state may lag one turn behind the newest event;
// callers who cannot accept that set MinCursor and Wait.
func (c *Client) Evidence(ctx context.Context, userID, conversationID string, opts *EvidenceOptions) (*Evidence, error) {
	path, err := conversationPath(userID, conversationID)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if opts != nil {
		if opts.MinCursor > 0 {
			q.Set("min_cursor", strconv.Itoa(opts.MinCursor))
		}
		if opts.Wait > 0 {
			q.Set("wait", opts.Wait.String())
		}
		if opts.MaxTokens > 0 {
			q.Set("max_tokens", strconv.Itoa(opts.MaxTokens))
		}
		if opts.MinVersion > 0 {
			q.Set("min_version", strconv.FormatInt(opts.MinVersion, 10))
		}
	}
	var ev Evidence
	if err := c.do(ctx, http.MethodGet, path+"/evidence", q, nil, &ev); err != nil {
		return nil, err
	}
	return &ev, nil
}

// Search returns the evidence selected for query, the text the agent is
// about to answer, instead of the newest user message (POST
// …/evidence/search). maxTokens, when positive, bounds the message as
// EvidenceOptions.MaxTokens does. The query is never logged by the server.
func (c *Client) Search(ctx context.Context, userID, conversationID, query string, maxTokens int) (*Evidence, error) {
	path, err := conversationPath(userID, conversationID)
	if err != nil {
		return nil, err
	}
	body := struct {
		Query     string `json:"query"`
		MaxTokens int    `json:"max_tokens,omitempty"`
	}{query, maxTokens}
	var ev Evidence
	if err := c.do(ctx, http.MethodPost, path+"/evidence/search", nil, &body, &ev); err != nil {
		return nil, err
	}
	return &ev, nil
}

// DeleteConversation deletes the conversation (DELETE …): its evidence,
// archive and every copy of its messages recall holds. The key stays
// deleted: later events for it are rejected. It is idempotent.
func (c *Client) DeleteConversation(ctx context.Context, userID, conversationID string) error {
	path, err := conversationPath(userID, conversationID)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, path, nil, nil, nil)
}
