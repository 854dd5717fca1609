package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ConversationPage is one page of a user's conversations.
type ConversationPage struct {
	Conversations []ConversationSummary `json:"conversations"`
	// Next is the After of the next page; empty on the last page.
	Next string `json:"next"`
}

// ConversationSummary is one conversation of a listing.
type ConversationSummary struct {
	ConversationID string    `json:"conversation_id"`
	Version        int64     `json:"version"`
	Cursor         int       `json:"cursor"`
	MessageCount   int       `json:"message_count"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// ListOptions are the optional parameters of ListConversations.
type ListOptions struct {
	// Limit is the most conversations a page holds, at most 1000. Defaults
	// to 0: the server's default, 100.
	Limit int
	// After lists the conversations whose id comes after it: the Next of
	// the previous page. Defaults to "": the first page.
	After string
}

// ListConversations returns a page of the user's conversations that hold
// state, ordered by conversation id (GET /v1/users/{user_id}/conversations).
// opts may be nil. Deleted conversations are not listed; an unknown user
// has none.
func (c *Client) ListConversations(ctx context.Context, userID string, opts *ListOptions) (*ConversationPage, error) {
	path, err := userPath(userID)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if opts != nil {
		if opts.Limit > 0 {
			q.Set("limit", strconv.Itoa(opts.Limit))
		}
		if opts.After != "" {
			q.Set("after", opts.After)
		}
	}
	var page ConversationPage
	if err := c.do(ctx, http.MethodGet, path+"/conversations", q, nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// DeleteUser deletes every conversation of the user (DELETE
// /v1/users/{user_id}), each as DeleteConversation does; conversations the
// user starts afterwards under new ids are accepted. It is idempotent: a
// deletion cut short is finished by calling it again.
func (c *Client) DeleteUser(ctx context.Context, userID string) error {
	path, err := userPath(userID)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, path, nil, nil, nil)
}

// The types of ExportLine.
const (
	ExportTypeConversation = "conversation"
	ExportTypeEntry        = "entry"
	ExportTypeRejection    = "rejection"
	ExportTypeEnd          = "end"
)

// ExportLine is one line of an export. Type says which one of its
// pointers is set; a line of a type this package does not know has none
// set, and only Raw.
type ExportLine struct {
	// Type is ExportTypeConversation, ExportTypeEntry, ExportTypeRejection
	// or ExportTypeEnd.
	Type         string
	Conversation *ExportConversation
	Entry        *ExportEntry
	Rejection    *ExportRejection
	End          *ExportEnd
	// Raw is the line as received, without its newline.
	Raw json.RawMessage
}

// ExportConversation is a conversation's state and evidence.
type ExportConversation struct {
	ConversationID string  `json:"conversation_id"`
	Version        int64   `json:"version"`
	Cursor         int     `json:"cursor"`
	MessageCount   int     `json:"message_count"`
	PrefixDigest   string  `json:"prefix_digest"`
	OmittedEntries int     `json:"omitted_entries"`
	Buckets        Buckets `json:"buckets"`
	// UpdatedAt is zero for a conversation without evidence yet.
	UpdatedAt time.Time `json:"updated_at"`
}

// ExportEntry is one entry of a conversation's archive.
type ExportEntry struct {
	ConversationID string `json:"conversation_id"`
	// Bucket is "constraints", "decisions", "open_work" or
	// "recent_context".
	Bucket string `json:"bucket"`
	Entry
}

// ExportRejection is a recorded rejection of one of the user's events,
// without its payload.
type ExportRejection struct {
	EventID        string    `json:"event_id"`
	ConversationID string    `json:"conversation_id"`
	Reason         string    `json:"reason"`
	ReceivedAt     time.Time `json:"received_at"`
}

// ExportEnd is the last line: how many lines of each type came before it.
type ExportEnd struct {
	Conversations int `json:"conversations"`
	Entries       int `json:"entries"`
	Rejections    int `json:"rejections"`
}

// MaxExportLineBytes bounds one line of an export; a longer line fails
// the export.
const MaxExportLineBytes = 16 << 20

// Export returns everything recall holds for the user (GET
// /v1/users/{user_id}/export), a line at a time as it arrives: a
// conversation line per conversation, then the entries of their archives,
// then the user's rejections, and last the end line with the counts. It
// reads one line at a time, so an export of any size takes bounded memory.
//
// The request is sent when the loop starts. An error ends the sequence: an
// *APIError for a refused request, and an error wrapping
// ErrExportIncomplete when the stream ends or breaks before the end line
// (ask again). Stopping the loop early closes the stream.
func (c *Client) Export(ctx context.Context, userID string) iter.Seq2[*ExportLine, error] {
	return func(yield func(*ExportLine, error) bool) {
		path, err := userPath(userID)
		if err != nil {
			yield(nil, err)
			return
		}
		resp, err := c.send(ctx, http.MethodGet, path+"/export", nil, nil, "application/x-ndjson")
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		// Lines are read with a bounded buffer; a line the stream breaks
		// off before its newline is not decoded.
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		var long []byte // a line longer than br's buffer, gathered
		ended := false
		for {
			b, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				if long = append(long, b...); len(long) > MaxExportLineBytes {
					yield(nil, fmt.Errorf("client: an export line is longer than %d bytes", MaxExportLineBytes))
					return
				}
				continue
			}
			if err != nil {
				switch {
				case errors.Is(err, io.EOF) && len(long)+len(b) == 0 && ended:
				case errors.Is(err, io.EOF):
					yield(nil, ErrExportIncomplete)
				default:
					yield(nil, fmt.Errorf("%w: %w", ErrExportIncomplete, err))
				}
				return
			}
			if long != nil {
				b, long = append(long, b...), nil
			}
			b = bytes.TrimRight(b, "\r\n")
			if len(b) == 0 {
				continue
			}
			if ended {
				yield(nil, errors.New("client: the export has lines after its end line"))
				return
			}
			line, err := decodeExportLine(b)
			if err != nil {
				yield(nil, err)
				return
			}
			ended = line.Type == ExportTypeEnd
			if !yield(line, nil) {
				return
			}
		}
	}
}

// decodeExportLine decodes one line of an export.
func decodeExportLine(b []byte) (*ExportLine, error) {
	line := &ExportLine{Raw: json.RawMessage(append([]byte(nil), b...))}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("client: an export line is not JSON: %w", err)
	}
	line.Type = head.Type
	var v any
	switch head.Type {
	case ExportTypeConversation:
		line.Conversation = new(ExportConversation)
		v = line.Conversation
	case ExportTypeEntry:
		line.Entry = new(ExportEntry)
		v = line.Entry
	case ExportTypeRejection:
		line.Rejection = new(ExportRejection)
		v = line.Rejection
	case ExportTypeEnd:
		line.End = new(ExportEnd)
		v = line.End
	default:
		return line, nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("client: decode an export %s line: %w", head.Type, err)
	}
	return line, nil
}
