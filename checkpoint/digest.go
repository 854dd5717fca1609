package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Digest is a SHA-256 digest: of one normalised message, or of a prefix of a
// history (a chain digest).
type Digest [32]byte

// String returns the digest as 64 lowercase hex characters.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// MarshalText implements encoding.TextMarshaler.
func (d Digest) MarshalText() ([]byte, error) {
	b := make([]byte, 64)
	hex.Encode(b, d[:])
	return b, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Digest) UnmarshalText(b []byte) error {
	p, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ErrBadDigest is returned by ParseDigest for anything but 64 lowercase hex
// characters.
var ErrBadDigest = errors.New("digest must be 64 lowercase hex characters")

// ParseDigest parses 64 lowercase hex characters.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 64 {
		return d, ErrBadDigest
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return d, ErrBadDigest
		}
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, ErrBadDigest
	}
	return d, nil
}

// chainSeed is the ASCII string whose SHA-256 starts every chain.
const chainSeed = "recall.v1"

var chainStart = Digest(sha256.Sum256([]byte(chainSeed)))

// ChainStart returns c_0, the chain digest of the empty prefix.
func ChainStart() Digest { return chainStart }

// Next returns the chain digest that follows c after a message with digest m:
// SHA-256(c ‖ m).
func (c Digest) Next(m Digest) Digest {
	var buf [64]byte
	copy(buf[:32], c[:])
	copy(buf[32:], m[:])
	return sha256.Sum256(buf[:])
}

// Chain extends c over the digests of msgs and returns the chain digest
// after the last one. It is the streaming form: a stored prefix digest can be
// extended without the messages before it.
func Chain(c Digest, msgs []Message) (Digest, error) {
	for i := range msgs {
		m, err := msgs[i].Digest()
		if err != nil {
			return Digest{}, err
		}
		c = c.Next(m)
	}
	return c, nil
}

// PrefixDigest returns c_k for the first k messages: Chain(ChainStart(), msgs[:k]).
func PrefixDigest(msgs []Message, k int) (Digest, error) {
	return Chain(chainStart, msgs[:k])
}

var hashPool = sync.Pool{New: func() any { return &digester{h: sha256.New()} }}

type digester struct {
	h   hash.Hash
	buf []byte
}

// Digest returns m_i: the SHA-256 of the normalised message canonicalised by
// RFC 8785 (JCS). Only role, id, type, content, tool_calls, tool_call_id and
// artifact enter it, so the same message in another form, or with other
// metadata, has the same digest.
func (m *Message) Digest() (Digest, error) { return m.digest(false) }

// digest is Digest; contentCanonical says that m.Content is known to be in
// canonical form already (decodeContent built it from a string), so that it
// is written as it is, or, when it is nil, that the content was the string
// m.Text, whose part list is written without being built first.
func (m *Message) digest(contentCanonical bool) (Digest, error) {
	d := hashPool.Get().(*digester)
	defer hashPool.Put(d)
	b, err := m.appendCanonical(d.buf[:0], contentCanonical)
	if cap(b) <= 1<<20 {
		d.buf = b
	}
	if err != nil {
		return Digest{}, err
	}
	d.h.Reset()
	d.h.Write(b)
	var out Digest
	d.h.Sum(out[:0])
	return out, nil
}

// Canonical returns the JCS form of the normalised message, the bytes its
// digest is taken over.
func (m *Message) Canonical() ([]byte, error) { return m.appendCanonical(nil, false) }

// appendCanonical writes the normalised message in JCS form. The outer object
// and the strings recall builds itself are written directly in canonical
// order; values carried as given (content lists, tool-call args, artifacts)
// go through the jcs library.
func (m *Message) appendCanonical(b []byte, contentCanonical bool) ([]byte, error) {
	var err error
	// JCS orders keys by UTF-16 code units: artifact, content, id, role,
	// tool_call_id, tool_calls, type.
	b = append(b, `{"artifact":`...)
	if b, err = appendJCS(b, m.Artifact, "artifact"); err != nil {
		return b, err
	}
	b = append(b, `,"content":`...)
	if contentCanonical {
		if m.Content == nil {
			b = appendTextParts(b, m.Text)
		} else {
			b = append(b, m.Content...)
		}
	} else if b, err = appendJCS(b, m.Content, "content"); err != nil {
		return b, err
	}
	b = append(b, `,"id":`...)
	b = appendCanonicalString(b, m.ID)
	b = append(b, `,"role":`...)
	b = appendCanonicalString(b, string(m.Role))
	b = append(b, `,"tool_call_id":`...)
	b = appendCanonicalString(b, m.ToolCallID)
	b = append(b, `,"tool_calls":[`...)
	for i, c := range m.ToolCalls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"args":`...)
		if b, err = appendJCS(b, c.Args, "tool_calls.args"); err != nil {
			return b, err
		}
		b = append(b, `,"id":`...)
		b = appendCanonicalString(b, c.ID)
		b = append(b, `,"name":`...)
		b = appendCanonicalString(b, c.Name)
		b = append(b, '}')
	}
	b = append(b, `],"type":`...)
	b = appendCanonicalString(b, m.Type)
	b = append(b, '}')
	return b, nil
}

// appendJCS appends the canonical form of a JSON value: by the fast path of
// canonical.go where it answers, by the jcs library otherwise.
func appendJCS(b []byte, raw []byte, field string) ([]byte, error) {
	switch string(raw) {
	case "", "null":
		return append(b, "null"...), nil
	case "[]", "{}":
		return append(b, raw...), nil
	}
	if out, ok := appendCanonicalJSON(b, raw); ok {
		return out, nil
	}
	c, err := jcs.Transform(raw)
	if err != nil {
		return b, &DecodeError{Index: -1, Field: field, Problem: "cannot be canonicalised (RFC 8785): duplicate keys, invalid numbers or invalid escapes"}
	}
	return append(b, c...), nil
}

// appendCanonicalString appends s as a JSON string in RFC 8785 form: only
// '"', '\\' and control characters are escaped, the latter as \b \t \n \f \r
// or \u00xx; everything else, non-ASCII included, is written as UTF-8.
// Invalid UTF-8 (which decoded JSON never holds) is written as U+FFFD.
func appendCanonicalString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = skipPlainString(s, i); i >= len(s) {
			break
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\ufffd"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		if e := shortEscape[c]; e != 0 {
			b = append(b, '\\', e)
		} else {
			b = append(b, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// digestError wraps a canonicalisation failure with the message's index.
func digestError(index int, err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		cp := *de
		cp.Index = index
		return &cp
	}
	return fmt.Errorf("message %d: %w", index, err)
}

// Digests returns the digest of each message. The error, for a message that
// cannot be canonicalised, is a *DecodeError carrying the message's index
// in msgs (or wraps the failure with that index).
func Digests(msgs []Message) ([]Digest, error) {
	ds := make([]Digest, len(msgs))
	for i := range msgs {
		d, err := msgs[i].Digest()
		if err != nil {
			return nil, digestError(i, err)
		}
		ds[i] = d
	}
	return ds, nil
}
