// Package modelnote is the pure core of the model lane (RECALL_EXTRACTOR=model):
// what recall sends a model about a range of summarised messages, and what
// it takes from the answer. It does no I/O; the endpoint client
// (modelclient) carries the prompt over HTTP and the jobs package runs the
// calls.
//
// A call covers the new messages of one range, the sources its notes may
// cite, and rides the rolling pair window ahead of them as context: the
// last few user turns before the range, with the assistant's replies when
// assistant capture is on. Every message is wrapped whole, in history
// order, in <user_message index="N">…</user_message> or
// <assistant_message index="N">…</assistant_message>, N its index in the
// history; a speaker tag typed inside a message is neutralised, so no
// content can open or close a block (Neutralise). The prompt is split: the
// format, grounding and attribution rules in the system message
// (SystemPrompt), the transcript in the user message.
//
// The model answers JSON notes (Schema), each a bucket, a short text and
// its source's index. ParseAnswer keeps the notes whose source is one of
// the call's new messages (a user message unless assistant capture is on),
// drops and counts the others, and fails an answer that is not JSON of that
// shape.
//
// Only the fold's inputs ever reach a transcript (FromHistory keeps what
// checkpoint.Message.Evidential keeps): never tool output, artifacts,
// system prompts, channel messages such as thinking, or the prose of
// tool-calling turns.
package modelnote
