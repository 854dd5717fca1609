// The prompt of a model call within its budget: recall assembles it (POST
// …/context), and where recall is unreachable, slow or refuses, the
// adapters cut the history themselves by a simple rule, the newest whole
// turns that fit. Messages here are recall's flat form, each with an id.

import { RecallError } from "./index.js";

/** recall's budget defaults (docs/context.md). */
export const DEFAULT_BUDGET = Object.freeze({
  context_window: 32768,
  prompt: 16000,
  response_reserve: 4096,
  safety_reserve: 2048,
  tool_result_tokens: 2000,
  image_tokens: 1000,
});

/** How long an adapter waits for recall before it cuts the history itself, by default. */
export const DEFAULT_TIMEOUT_MS = 2000;

/**
 * The least time between two events of a conversation the adapters
 * publish: the steps of a fast tool loop go in one event, and recall's
 * worker has applied one before the next arrives.
 */
export const PUBLISH_INTERVAL_MS = 250;

/** What the adapters warn when recall missed an event of a conversation. */
export const HEAL_WARNING = "recall's cursor has not reached a history published a while ago (an event was lost or refused as a gap): the next publish is a whole snapshot";

/**
 * The budget to send: a number is the prompt's limit in estimated tokens,
 * an object holds recall's budget fields (context_window, prompt, …).
 */
export function budgetOf(budget) {
  if (budget === undefined || budget === null) return undefined;
  if (typeof budget === "number") budget = { prompt: budget };
  if (typeof budget !== "object") throw new TypeError("budget must be a number of tokens or an object of recall's budget fields (prompt, context_window, …)");
  for (const [k, v] of Object.entries(budget)) {
    if (!(k in DEFAULT_BUDGET)) throw new RangeError(`budget: unknown field ${JSON.stringify(k)}; recall's fields are ${Object.keys(DEFAULT_BUDGET).join(", ")}`);
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`budget.${k} must be a whole number of tokens, not ${JSON.stringify(v)}`);
  }
  return { ...budget };
}

/** The prompt's limit: min(prompt, context_window − response_reserve − safety_reserve). */
export function limitOf(budget) {
  const b = { ...DEFAULT_BUDGET, ...budget };
  return Math.min(b.prompt, b.context_window - b.response_reserve - b.safety_reserve);
}

const bytes = (s) => Buffer.byteLength(s, "utf8");
const isChat = (m) => m.type === undefined || m.type === null || m.type === "" || m.type === "chat";

/**
 * A flat message's estimate, as recall makes it: ceil(UTF-8 bytes of its
 * text and of its tool calls' JSON / 3) + 4, plus imageTokens for each
 * part that is not text.
 */
export function estimateMessage(m, imageTokens = DEFAULT_BUDGET.image_tokens) {
  let n = 0, others = 0;
  if (typeof m.content === "string") n += bytes(m.content);
  else if (Array.isArray(m.content)) {
    const texts = [];
    for (const p of m.content) {
      if (p?.type === "text" && typeof p.text === "string") texts.push(p.text);
      else others++;
    }
    n += bytes(texts.join("\n"));
  }
  if (m.tool_calls?.length) n += bytes(JSON.stringify(m.tool_calls));
  return Math.ceil(n / 3) + 4 + others * imageTokens;
}

/** The text's estimate as a message (the system text). */
export const estimateText = (text) => (text ? Math.ceil(bytes(text) / 3) + 4 : 0);

/** The tool schemas' estimate: ceil(bytes of each one's compact JSON / 3). */
export const estimateTools = (tools) => (tools ?? []).reduce((n, t) => n + Math.ceil(bytes(JSON.stringify(t)) / 3), 0);

/**
 * The adapters' own rule, for when recall does not answer: the system text,
 * the tool schemas and the current turn (from the newest user message on)
 * whole, then whole turns, newest first, while they fit the limit. Messages
 * of other channels (thinking, status) are left out, as recall leaves them
 * out. Returns the kept messages, in order, with the estimate.
 */
export function cutTurns(messages, { system, tools, budget } = {}) {
  const limit = limitOf(budget);
  const imageTokens = budget?.image_tokens ?? DEFAULT_BUDGET.image_tokens;
  const chat = messages.filter((m) => isChat(m) && m.role !== "system");
  const newest = chat.findLastIndex((m) => m.role === "user");
  const current = newest >= 0 ? chat.slice(newest) : [];
  const turns = [];
  for (const m of newest >= 0 ? chat.slice(0, newest) : chat) {
    if (m.role === "user" || turns.length === 0) turns.push([]);
    turns.at(-1).push(m);
  }
  const cost = (turn) => turn.reduce((n, m) => n + estimateMessage(m, imageTokens), 0);
  let total = estimateText(system) + estimateTools(tools) + cost(current);
  const kept = [];
  while (turns.length > 0) {
    const c = cost(turns.at(-1));
    if (total + c > limit) break;
    total += c;
    kept.unshift(turns.pop());
  }
  return { messages: [...kept.flat(), ...current], estimated: total, limit, dropped_turns: turns.length };
}

/**
 * Why recall gave no prompt, in words that carry no message text: its
 * answer's status and code, a timeout, or that it is unreachable.
 */
export function reasonOf(err, timeoutMs) {
  if (err instanceof RecallError) return `recall answered ${err.status} ${err.code}`;
  if (err?.name === "TimeoutError") return `recall did not answer within ${timeoutMs} ms`;
  if (err?.name === "AbortError") return "the call was aborted";
  const code = err?.cause?.code ?? err?.code;
  if (err?.name === "TypeError" && err.message === "fetch failed") return `recall is unreachable${code ? ` (${code})` : ""}`;
  if (err?.name === "MessageError") return `a message recall would refuse: ${err.message}`;
  return `recall failed (${err?.name ?? "error"}${code ? ` ${code}` : ""})`;
}

/**
 * The messages of the call: recall's assembly, or, when recall fails, the
 * adapter's own cut with a warning through logger. Never throws for recall.
 */
export async function assemble(client, userId, conversationId, messages, { system, tools, budget, evidence, timeoutMs, signal, logger, what }) {
  const started = performance.now();
  try {
    const res = await client.context(userId, conversationId, messages, { system, tools, budget, evidence, timeoutMs, signal });
    return { messages: res.messages, result: res, recallMs: performance.now() - started };
  } catch (err) {
    return fallback(messages, { system, tools, budget, logger, what, conversationId }, reasonOf(err, timeoutMs));
  }
}

/** The adapter's own cut of messages, with a warning that says why. */
export function fallback(messages, { system, tools, budget, logger, what, conversationId }, reason) {
  const cut = cutTurns(messages, { system, tools, budget });
  warn(logger, `${what} goes on with its own history cut to the budget (${cut.messages.length} of ${messages.length} messages, ${cut.dropped_turns} turns dropped): ${reason}`, {
    ...(conversationId ? { conversation_id: conversationId } : {}),
    reason,
  });
  return { messages: cut.messages, fallback: { reason, ...cut } };
}

/** A warning through logger.warn(message, fields), which must not fail the call. */
export function warn(logger, message, fields) {
  try {
    (logger ?? console).warn(`recall: ${message}`, fields);
  } catch {
    // A failing logger must not fail the call.
  }
}

/**
 * What an assembly cost, for an onPrompt callback: its estimates, limit,
 * dropped turns and evidence, or the fallback's reason; never message text.
 * A callback that throws is ignored.
 */
export function report(onPrompt, answer, info) {
  if (!onPrompt) return;
  try {
    onPrompt({
      ...info,
      ...(answer.result
        ? { recallMs: answer.recallMs, estimatedTokens: answer.result.estimated_tokens, limit: answer.result.limit, droppedTurns: answer.result.dropped_turns, evidence: answer.result.evidence }
        : { fallback: answer.fallback.reason, estimatedTokens: { total: answer.fallback.estimated }, limit: answer.fallback.limit, droppedTurns: answer.fallback.dropped_turns }),
    });
  } catch {
    // A failing callback must not fail the call.
  }
}
