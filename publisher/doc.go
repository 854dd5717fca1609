// Package publisher publishes checkpoint events (schema recall.checkpoint.v1)
// to NATS JetStream for recall, from an agent backend.
//
// A [Publisher] wraps a [jetstream.JetStream]. After each turn the backend
// passes a conversation's whole history to [Publisher.Publish] (raw JSON
// messages in any of the three forms of the contract: flat, LangChain stored
// or LangChain constructor, mixed as it likes) or to
// [Publisher.PublishMessages] (the flat form as [Message] values). The
// publisher builds the event, sends it with the header Nats-Msg-Id set to the
// event id, and returns once JetStream has acknowledged it. [Publisher.Delete]
// publishes a delete event for a conversation.
//
// # Guarantees
//
//   - Durable on return: Publish returns nil only after the JetStream ack
//     (PubAck), so the event is stored in the stream. recall's workers then
//     apply it at least once.
//   - At least once: when Publish returns an error the event may or may not
//     have been stored (an ack can be lost after the server stored the
//     event). Calling Publish again with the same history is always safe:
//     recall treats an event that adds nothing as a no-op, and its fold never
//     duplicates evidence or moves state backward.
//   - Idempotent ids: every event gets a fresh id from the event id generator
//     (128 random bits in hex unless [WithEventIDs] says otherwise), sent as
//     Nats-Msg-Id. Within one call a failed send is retried with the same id
//     (see [WithAttempts]), so JetStream's duplicate window stores it once.
//   - Valid events: user and conversation ids are checked as recall checks
//     them, and every message is decoded with the same code recall's workers
//     use ([checkpoint.DecodeMessage]) before anything is sent; an invalid
//     history returns an error wrapping *[checkpoint.DecodeError] and publishes
//     nothing. Digests are computed by the evidence package, the code of the
//     fold itself, so they agree with recall by construction.
//
// # Snapshot and append modes
//
// In [Snapshot] mode (the default) every event carries the whole history
// (offset 0). It is the simplest and most robust choice: any event heals
// whatever an earlier one missed.
//
// In [Append] mode the publisher remembers, for each conversation (user id,
// conversation id) it has published in this process, how many messages it
// sent and the chain digest of that prefix. When the next history starts
// with what was sent, only the new messages travel: an event with offset k
// and prefix_digest c_k. Checking "starts with what was sent" costs a SHA-256
// pass over the raw bytes of the old messages (no decoding); if the bytes
// differ, the old messages are decoded and their chain digest is compared
// with c_k, so re-serialising the same messages, or switching between the
// three forms, still appends. Only the new messages are decoded and digested.
// The publisher sends a full snapshot instead when it has not published the
// conversation before in this process (or has forgotten it: the memory holds
// at most [WithMaxConversations] conversations, least recently used first
// out), when the history no longer starts with what was sent (edited, cut
// or reordered), and after a failed publish of the conversation.
//
// Append mode assumes that recall holds what this publisher sent: that this
// process is the only writer of the conversation's lineage (other publishers
// may send the same history, but not a different one) and that nobody
// deleted it meanwhile. When that fails, recall rejects the append as
// prefix_mismatch (or as deleted), never applies it wrongly; call
// [Publisher.Forget] to make the next event a snapshot. An append whose
// prefix recall has not applied yet (events may be processed out of order) is
// retried by recall for a while before it is rejected as gap; the next
// snapshot heals that too.
//
// The Publisher is safe for concurrent use. Events of one conversation
// published concurrently may reach recall in any order; recall copes, but an
// agent normally publishes a conversation's turns one after another.
//
// # Traces
//
// Each event carries the OpenTelemetry trace context of the ctx it is
// published with in its W3C traceparent header, under a producer span
// ([SpanPublish]) of the tracer provider given with [WithTracerProvider] (the
// global one by default), so that recall's spans for the event (the
// worker's batch, the extraction job, its SQL) join the caller's trace. The
// span names the event (its id, kind, offset and message count), never its
// messages. The package uses OpenTelemetry's API only, never its SDK.
package publisher
