// Package wake wakes the read API's waiting requests over core NATS when a
// conversation's state changes, so that no database transaction has to
// notify anyone.
//
// The adapter that commits a change (the worker after an ingest batch that
// deleted a conversation, the extraction job after its transaction) calls a
// [Publisher], which sends one small message to SUBJECT.TOKEN: SUBJECT is
// the partition's wake subject ([SubjectFor] its stream: recall.wake.STREAM
// by default), TOKEN the key's [partition.Token], and the body the new
// cursor in decimal. A message names the key only by its digest and never
// carries message text.
//
// A [Subscriber] listens on SUBJECT.* and fans the wake-ups out to the
// in-process waiters of each key; it implements api.Notifier. Core NATS
// delivers at most once: a message is lost when the publisher dies between
// its commit and the send, when either side is disconnected, or when the
// subscriber falls behind. So the Subscriber also wakes every waiter after
// each reconnect, and each waiter on its own every poll interval (1s by
// default): a lost wake-up costs a waiter at most one poll, never a wrong
// answer, since a waiter re-reads the state on every wake-up.
//
// It knows nats.go's core client only (no JetStream) and the partition
// package's token.
package wake
