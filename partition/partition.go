// Package partition maps a conversation's key to one of n partitions
// exactly as NATS's subject mapping function partition(n, …) does, so that
// publishers, the NATS server, recall's workers and a router in front of
// the read API all agree on where a conversation lives.
//
// A publisher puts the key's Token into the subject it publishes to
// (Subject); the server maps it with Mapping to a subject that carries the
// partition number; each partition's stream, workers and Postgres take one
// partition's subjects; the router picks the same partition with Of. The
// token is a digest of the key, so user and conversation ids of any UTF-8
// (dots, spaces, wildcards) make a valid subject token, and a change of the
// partition count n moves keys as NATS would.
//
// It imports the standard library only.
package partition

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"strconv"
)

// Token returns the subject token of a conversation's key: 22 characters of
// base64url (A–Z, a–z, 0–9, '-', '_') of the SHA-256 of the key, which a
// NATS subject token may hold.
func Token(userID, conversationID string) string {
	h := sha256.New()
	// Length-prefixed: ("a.b", "c") and ("a", "b.c") differ.
	fmt.Fprintf(h, "%d:%s%d:%s", len(userID), userID, len(conversationID), conversationID)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:22]
}

// Of returns the partition, from 0 to n-1, that NATS's partition(n, …)
// gives a subject whose hashed token is token: FNV-1a (32 bits) of the
// token, modulo n (nats-server's subject_transform.go, getHashPartition).
// n must be at least 1.
func Of(token string, n int) int {
	if n < 1 {
		panic("partition: n must be at least 1")
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(token))
	return int(h.Sum32() % uint32(n))
}

// For returns the partition of a conversation's key among n.
func For(userID, conversationID string, n int) int {
	return Of(Token(userID, conversationID), n)
}

// Subject returns the subject a publisher sends a conversation's events to
// under prefix: prefix.in.TOKEN.
func Subject(prefix, userID, conversationID string) string {
	return prefix + ".in." + Token(userID, conversationID)
}

// Mapping returns the NATS subject mapping that partitions prefix.in.TOKEN
// into n partitions: source prefix.in.* and destination
// prefix.p.{{partition(n,1)}}.{{wildcard(1)}}.
func Mapping(prefix string, n int) (source, destination string) {
	return prefix + ".in.*", prefix + ".p.{{partition(" + strconv.Itoa(n) + ",1)}}.{{wildcard(1)}}"
}

// PartitionSubject returns the subjects of partition p under prefix, which
// its stream and workers take: prefix.p.P.*.
func PartitionSubject(prefix string, p int) string {
	return prefix + ".p." + strconv.Itoa(p) + ".*"
}

// Router picks one of its targets (a database, a pool, an API's base URL)
// for a conversation, by the partition of its key.
type Router[T any] struct {
	targets []T
}

// NewRouter returns a router over one target per partition, in partition
// order.
func NewRouter[T any](targets ...T) (*Router[T], error) {
	if len(targets) == 0 {
		return nil, fmt.Errorf("partition: a router needs a target for each partition, and got none")
	}
	return &Router[T]{targets: targets}, nil
}

// For returns the target of a conversation and its partition.
func (r *Router[T]) For(userID, conversationID string) (T, int) {
	p := For(userID, conversationID, len(r.targets))
	return r.targets[p], p
}
