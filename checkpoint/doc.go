// Package checkpoint is recall's wire format: the checkpoint events
// (schema recall.checkpoint.v1) a publisher sends and recall ingests.
//
// It decodes messages in the three forms of the contract (flat, LangChain
// stored and LangChain constructor) into one [Message], parses events with a
// fast scanner beside the general decoder it must agree with
// ([ParseEvent]), canonicalises JSON (RFC 8785) and digests messages and
// their SHA-256 chain ([Message.Digest], [Chain], [PrefixDigest]), and
// decides how an event relates to what recall holds ([DecideLineage]). It
// also names the outcomes of an event ([Outcome]), the reasons an event is
// rejected ([Reason]) and the limits it is held to ([Limits]), and reads
// and writes the trace context an event carries in its NATS headers
// ([HeaderCarrier]), so that publishers and workers share it.
//
// The package does no I/O and imports only the standard library and an
// RFC 8785 library, so a client such as package publisher checks what it
// sends by the rules recall applies, without the fold. The fold, the archive
// and rendering are in package evidence.
package checkpoint
