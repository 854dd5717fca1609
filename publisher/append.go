package publisher

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/recallhq/recall/checkpoint"
)

// conversationKey is what recall keys a conversation by.
type conversationKey struct {
	user, conversation string
}

// sentState is what append mode remembers of a conversation: the history it
// last published had n messages, whose chain digest is chain and whose raw
// JSON bytes fingerprint to raw.
type sentState struct {
	n     int
	chain checkpoint.Digest
	raw   [sha256.Size]byte
}

// appendEvent builds the event for history in append mode, and the state to
// remember once JetStream has acknowledged it.
//
// The prefix that was sent is checked first by its raw bytes (one SHA-256
// pass, no decoding), then, when the bytes differ, by its chain digest. Only
// the messages past the prefix are decoded and digested.
func (p *Publisher) appendEvent(key conversationKey, history []json.RawMessage) (*Event, sentState, error) {
	p.mu.Lock()
	prev, ok := p.sent.Get(key)
	p.mu.Unlock()

	fp := sha256.New()
	offset, chain := 0, checkpoint.ChainStart()
	if ok && prev.n <= len(history) {
		writeRaw(fp, history[:prev.n])
		var sum [sha256.Size]byte
		fp.Sum(sum[:0])
		if sum == prev.raw || sameChain(history[:prev.n], prev.chain) {
			offset, chain = prev.n, prev.chain
		}
		writeRaw(fp, history[prev.n:])
	} else {
		writeRaw(fp, history)
	}

	msgs, err := decodeAll(history[offset:], offset)
	if err != nil {
		return nil, sentState{}, err
	}
	next := sentState{n: len(history)}
	if next.chain, err = chainOver(chain, msgs, offset); err != nil {
		return nil, sentState{}, err
	}
	fp.Sum(next.raw[:0])

	ev := &Event{
		Kind:           checkpoint.KindSnapshot,
		UserID:         key.user,
		ConversationID: key.conversation,
		Offset:         offset,
		Messages:       nonNil(history[offset:]),
	}
	if offset > 0 {
		ev.PrefixDigest = &chain
	}
	return ev, next, nil
}

// writeRaw feeds each message's length and bytes to the fingerprint, so that
// message boundaries count.
func writeRaw(h hash.Hash, raws []json.RawMessage) {
	var n [8]byte
	for _, raw := range raws {
		binary.BigEndian.PutUint64(n[:], uint64(len(raw)))
		h.Write(n[:])
		h.Write(raw)
	}
}

// sameChain reports whether raws decode to messages whose chain digest is
// want: the same messages as far as recall is concerned, however they are
// serialised.
func sameChain(raws []json.RawMessage, want checkpoint.Digest) bool {
	msgs, err := decodeAll(raws, 0)
	if err != nil {
		return false
	}
	got, err := chainOver(checkpoint.ChainStart(), msgs, 0)
	return err == nil && got == want
}

// chainOver extends c over msgs, which sit at history index offset.
func chainOver(c checkpoint.Digest, msgs []checkpoint.Message, offset int) (checkpoint.Digest, error) {
	for i := range msgs {
		m, err := msgs[i].Digest()
		if err != nil {
			return checkpoint.Digest{}, indexed(err, offset+i)
		}
		c = c.Next(m)
	}
	return c, nil
}

// newLRU returns append mode's memory: a bounded map from conversation to
// sentState that drops the least recently used entry first. It is not safe
// for concurrent use.
func newLRU(max int) *simplelru.LRU[conversationKey, sentState] {
	l, _ := simplelru.NewLRU[conversationKey, sentState](max, nil)
	return l
}
