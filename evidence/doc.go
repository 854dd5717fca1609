// Package evidence is recall's pure core: it decodes checkpoint messages in
// the three wire forms of the contract, digests them (RFC 8785 JCS and
// SHA-256, chained), folds a conversation's history into bounded extractive
// evidence, and renders the evidence message an agent puts into its prompt.
//
// The package does no I/O. Every process — worker, API, CLI, benchmarks and
// tests — applies the same fold, so that the state recall stores equals one
// left fold over the summarised part of a history, however the events that
// carried it were batched, retried or spread over workers.
//
// The main entry points are [DecodeMessage] and [ParseEvent] for input,
// [Digest] and [Chain] for lineage, [Fold] and [State.Summarise] for
// extraction, and [Render] and [RenderWithin] for output.
package evidence
