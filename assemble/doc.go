// Package assemble builds the bounded prompt of one model call from a
// conversation's checkpoint: the system text, the tool schemas, the
// evidence message, as many recent turns as fit, and the current request
// intact. It is the pure core behind the context endpoint and the
// recall context command, and does no I/O.
//
// # Budget
//
// The limit is min(prompt, context_window − response_reserve −
// safety_reserve) estimated tokens (see [Budget] and [DefaultBudget]). A
// message is estimated as ceil(UTF-8 bytes of its text and of its tool
// calls' JSON / 3) + 4 ([evidence.EstimateTokens]), plus a fixed allowance
// for each image or other non-text part; a tool schema as ceil(bytes of its
// compact JSON / 3). The assembled view never exceeds the limit.
//
// # What is kept
//
// The system text, the tool schemas and the current turn — the newest user
// message and the tool exchange that follows it — are mandatory and sent
// whole: when they alone exceed the limit, [Build] fails with
// [ErrBudgetTooSmall] rather than cut anything. The evidence message comes
// right after the system message, as an assistant message, and is charged
// before history; it is left out when it would not fit beside the
// mandatory part. History follows in whole turns, newest first, until the
// limit.
//
// Within a turn, a kept tool exchange keeps the calling assistant message
// and every parallel result. Results that answer no call (orphans), calls
// that were never answered (cancelled) and messages of non-chat channel
// types (thinking, status, …) are left out. In older turns, image parts
// become a text placeholder and the long prose of assistant messages that
// call tools is shortened to a marked excerpt. System messages in the
// history are never sent with the system role: those at the head of the
// checkpoint serve as the system text when the request has none, the rest
// are left out.
//
// # Compaction
//
// A tool result over the per-result limit (2,000 tokens by default) is
// compacted into valid JSON. The artifact is preferred when it is an object
// or a list, then the content when it parses as JSON. Row collections
// (transactions, rows, results, documents, categories, accounts, payees)
// are sampled in source order and report returned, retained and omitted
// counts, with a reference (ids, paths, dates, source references) for each
// omitted row; text fields (markdown, snippet, content, text, memo,
// description) become prefix excerpts that say how many characters they
// left out; totals, dates, counts, filters, the query and the source stay
// as they are, and nothing is summed. Other output keeps a marked beginning
// and end. When the references and structure alone do not fit, nothing is
// cut: the turn is dropped whole, or, for the current turn, Build fails
// with [ErrCannotCompact].
package assemble
