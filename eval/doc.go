// Package eval measures the quality of recall's evidence offline. It loads
// fixture conversations, replays each turn by turn through the production
// fold — evidence.Fold on every prefix that ends in a user message, as the
// growing snapshots a backend publishes — and scores what the evidence
// keeps and what it must never hold:
//
//   - retention: the share of required facts whose text is in an excerpt of
//     the evidence after the last turn;
//   - leakage: the number of forbidden strings (tool output, artifacts,
//     thinking and status text, system prompts, tool-call prose, injected
//     instructions) found in any entry or in the rendered message at any
//     turn; it must be 0;
//   - budget and shape: every rendered message within 1,800 estimated
//     tokens and a valid evidence message whose buckets decode to the
//     state's own entries, so that no text inside forged structure;
//   - consistency: the turn-by-turn state equals one fold over the whole
//     history;
//   - compression: the estimated tokens of the summarised history against
//     those of the evidence message that stands for it;
//   - fold time per summarised message.
//
// The package reads fixture files and does no other I/O. "recall eval"
// prints its report; TestFixtures fails when retention falls below
// baseline.json or anything leaks. The fixture format is described in
// README.md beside this file.
package eval
