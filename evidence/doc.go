// Package evidence is recall's pure core: it folds a conversation's history
// of checkpoint messages (package checkpoint decodes and digests them) into
// bounded extractive evidence, keeps the focus profile's archive and view,
// and renders the evidence message an agent puts into its prompt.
//
// The package does no I/O. Every process — worker, API, CLI, benchmarks and
// tests — applies the same fold, so that the state recall stores equals one
// left fold over the summarised part of a history, however the events that
// carried it were batched, retried or spread over workers.
//
// The main entry points are [Fold] and [State.Summarise] for extraction,
// and [Render] and [RenderWithin] for output.
package evidence
