// recall for the OpenAI Agents SDK: a Session whose items are the
// conversation's history, published to recall as it grows, and whose
// getItems() returns what fits the budget with recall's evidence in front,
// so that a run keeps working past the model's window.
//
//   const session = recallSession({ url, token, userId, conversationId, budget: 8000 });
//   await run(agent, input, { session });
//
// The session keeps the items itself (in memory, or in the Session it is
// given to wrap) and publishes them to recall as recall's flat messages;
// getItems() asks recall to assemble them (POST …/context) and maps the
// answer back to the items it came from. Where recall is unreachable, slow
// or refuses the token, getItems() returns the history cut by a simple rule
// (the newest whole turns within the budget) and warns; recall never fails
// a run.

import { randomUUID } from "node:crypto";
import { RecallClient } from "./index.js";
import { answerById, kindText, mediaRef, parseJSON, restoreParts, textOf, unchanged } from "./parts.js";
import { DEFAULT_TIMEOUT_MS, HEAL_WARNING, PUBLISH_INTERVAL_MS, assemble, budgetOf, reasonOf, report, warn } from "./prompt.js";
import { Publisher } from "./publisher.js";

// Item i of the session is the flat message "m<i>" (a hosted tool call is
// two: the call "m<i>" and its result "m<i>.1").

const isMessage = (item) => typeof item?.role === "string" && (item.type === undefined || item.type === "message");

function withoutProviderData(item) {
  const { providerData, type, ...rest } = item;
  return rest;
}

// A media value of the Agents SDK (a URL, a data URL or base64, {id},
// {url}, {data, mediaType}, {fileId}) by reference.
function media(kind, v, { detail, filename, mediaType } = {}) {
  if (v !== null && typeof v === "object" && !(v instanceof Uint8Array)) {
    return mediaRef(kind, { fileId: v.id ?? v.fileId, url: v.url, data: v.data, mediaType: v.mediaType ?? mediaType, filename: v.filename ?? filename, detail });
  }
  return mediaRef(kind, { data: v, detail, filename, mediaType });
}

// A content part of a message, or of a tool's output, as recall holds it.
function contentPart(p) {
  switch (p?.type) {
    case "input_text":
    case "output_text":
    case "text":
      return { type: "text", text: p.text };
    case "refusal":
      return kindText("refusal", p.refusal ?? "");
    case "input_image":
    case "image":
      return media("image", p.image, { detail: p.detail });
    case "input_file":
    case "file":
      return media("file", p.file, { filename: p.filename });
    case "audio":
      return media("audio", p.audio, { mediaType: p.format ?? undefined });
    default:
      return kindText(p?.type ?? "part", p && typeof p === "object" ? withoutProviderData(p) : p);
  }
}

const parseArgs = (s) => (typeof s === "string" ? (s.trim() === "" ? {} : (parseJSON(s) ?? s)) : (s ?? {}));

// Tool calls of the SDK: each is an assistant message calling one tool.
const CALLS = {
  function_call: (it) => ({ name: it.name, args: parseArgs(it.arguments) }),
  computer_call: (it) => ({ name: "computer", args: it.actions ?? it.action ?? {} }),
  shell_call: (it) => ({ name: "shell", args: it.action ?? {} }),
  apply_patch_call: (it) => ({ name: "apply_patch", args: it.operation ?? {} }),
  program: (it) => ({ name: "program", args: { code: it.code ?? "" } }),
  tool_search_call: (it) => ({ name: "tool_search", args: it.arguments ?? {} }),
};

// Their results: each is a tool message.
const RESULTS = {
  function_call_result: (it) => functionOutput(it.output),
  computer_call_result: (it) => [media("image", it.output?.data ?? it.output?.image_url ?? null)],
  shell_call_output: (it) => JSON.stringify(it.output ?? []),
  apply_patch_call_output: (it) => it.output ?? "",
  program_output: (it) => it.output ?? "",
  tool_search_output: (it) => JSON.stringify(it.tools ?? []),
};

function functionOutput(output) {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) return output.map(contentPart);
  if (output?.type === "text") return output.text ?? "";
  return [contentPart(output)];
}

/**
 * Maps session items (AgentInputItem[]) to recall: the system text (the
 * system messages, in order), the flat messages to publish and assemble,
 * and the plan itemsFromRecall maps recall's answer back with.
 */
export function itemsToRecall(items) {
  const system = [];
  const messages = [];
  const plan = []; // per item: {item, system} or {item, turn, flats: [{flat, chat}]}
  let turn = 0, started = false;
  items.forEach((item, i) => {
    const id = `m${i}`;
    if (isMessage(item) && item.role === "system") {
      system.push(typeof item.content === "string" ? item.content : textOf((item.content ?? []).map(contentPart)));
      plan.push({ item, system: true });
      return;
    }
    if (isMessage(item) && item.role === "user" && started) turn++;
    const entry = { item, turn, flats: [] };
    const add = (flat, chat = true) => {
      messages.push(flat);
      entry.flats.push({ flat, chat });
      started ||= chat;
    };
    const callId = item?.callId;
    if (isMessage(item)) {
      const content = typeof item.content === "string" ? item.content : (item.content ?? []).map(contentPart);
      add({ id, role: item.role === "user" ? "user" : "assistant", content });
    } else if (item?.type in CALLS && callId) {
      add({ id, role: "assistant", content: "", tool_calls: [{ id: callId, ...CALLS[item.type](item) }] });
    } else if (item?.type in RESULTS && callId) {
      add({ id, role: "tool", tool_call_id: callId, ...(item.name ? { name: item.name } : {}), content: RESULTS[item.type](item) });
    } else if (item?.type === "hosted_tool_call") {
      const call = item.id || `${id}.call`;
      add({ id, role: "assistant", content: "", tool_calls: [{ id: call, name: item.name, args: parseArgs(item.arguments) }] });
      add({ id: `${id}.1`, role: "tool", tool_call_id: call, name: item.name, content: item.output ?? "" });
    } else if (item?.type === "reasoning") {
      const text = [...(item.content ?? []), ...(item.rawContent ?? [])].map((p) => p?.text ?? "").join("\n");
      add({ id, role: "assistant", type: "thinking", content: text }, false);
    } else if (item?.type === "compaction") {
      add({ id, role: "assistant", type: "status", content: [kindText("compaction", withoutProviderData(item))] }, false);
    } else {
      add({ id, role: "assistant", content: [kindText(item?.type ?? "item", item && typeof item === "object" ? withoutProviderData(item) : item)] });
    }
    plan.push(entry);
  });
  return { system: system.length > 0 ? system.join("\n\n") : undefined, messages, plan };
}

const inputText = (text) => ({ type: "input_text", text });
const outputText = (text) => ({ type: "output_text", text });

// restore rebuilds one item from the flat messages recall returned for it:
// the item itself where recall kept them as sent, else the item with what
// recall changed (an older turn's image as its placeholder, a compacted
// result); null for a call recall left out (it had no result).
function restore(entry, got) {
  const { item, flats } = entry;
  if (flats.every(({ flat, chat }) => !chat || unchanged(flat, got.get(flat.id)))) return item;
  const [{ flat }] = flats;
  const r = got.get(flat.id);
  if (flat.tool_calls?.length > 0 && !(r?.tool_calls?.length > 0)) return null;
  if (isMessage(item) && Array.isArray(item.content)) {
    return { ...item, content: restoreParts(item.content, flat.content, r.content, item.role === "user" ? inputText : outputText) };
  }
  if (item.type === "function_call_result") {
    const { output } = item;
    if (typeof output === "string") return { ...item, output: textOf(r.content) };
    if (Array.isArray(output)) return { ...item, output: restoreParts(output, flat.content, r.content, inputText) };
    if (output?.type === "text") return { ...item, output: { ...output, text: textOf(r.content) } };
    const [part] = restoreParts([output], flat.content, r.content, (text) => ({ type: "text", text }));
    return { ...item, output: part ?? { type: "text", text: "" } };
  }
  if (item.type === "hosted_tool_call") {
    const result = got.get(flats[1].flat.id);
    return result ? { ...item, output: textOf(result.content) } : null;
  }
  // Results the SDK holds in a fixed shape (shell, patch, computer, …) come
  // back as they were.
  return item;
}

/**
 * Maps recall's answer (the flat messages of POST …/context, or of the
 * session's own cut) back to session items: the system messages, the
 * evidence message as an assistant message, then each item recall kept, as
 * it was where recall kept it as sent. A reasoning item comes back with the
 * item it precedes; the newest compaction item stays in front.
 */
export function itemsFromRecall(answer, plan) {
  const { got, evidence } = answerById(answer);
  const chat = (e) => e.flats?.some(({ chat }) => chat);
  const kept = new Set(plan.filter((e) => chat(e) && e.flats.some(({ flat, chat }) => chat && got.has(flat.id))));
  const turns = new Set([...kept].map((e) => e.turn));
  let next = null; // the next item with chat flats, walking backwards
  for (let i = plan.length - 1; i >= 0; i--) {
    const e = plan[i];
    if (e.system) continue;
    if (chat(e)) next = e;
    else if (next && next.turn === e.turn ? kept.has(next) : turns.has(e.turn)) kept.add(e);
  }
  // Items before the newest compaction item are what it stands for.
  const compaction = plan.findLastIndex((e) => e.item?.type === "compaction");
  const head = plan.filter((e) => e.system).map((e) => e.item);
  if (compaction >= 0) head.push(plan[compaction].item);
  if (evidence) head.push({ type: "message", role: "assistant", status: "completed", content: [outputText(textOf(evidence.content))] });
  const body = [];
  for (const e of plan.slice(compaction + 1)) {
    if (e.system || !kept.has(e)) continue;
    const item = restore(e, got);
    if (item) body.push(item);
  }
  return [...head, ...body];
}

// ItemList is the session's own store when it wraps no other session.
class ItemList {
  constructor() {
    this.items = [];
  }

  async getItems(limit) {
    return limit === undefined ? [...this.items] : limit > 0 ? this.items.slice(-limit) : [];
  }

  async addItems(items) {
    this.items.push(...items);
  }

  async popItem() {
    return this.items.pop();
  }

  async clearSession() {
    this.items = [];
  }
}

/**
 * An OpenAI Agents SDK Session backed by recall. See recallSession.
 */
export class RecallSession {
  constructor(options = {}) {
    const { client, url, token, nats, userId, conversationId, session, timeoutMs = DEFAULT_TIMEOUT_MS, evidence = true, logger = console, onPrompt } = options;
    if (typeof userId !== "string" || userId === "") {
      throw new TypeError("recallSession: give userId, the recall user whose conversation the session holds");
    }
    this.client = client ?? new RecallClient({ url, token, nats, timeoutMs: Math.max(timeoutMs, 10_000) });
    this.userId = userId;
    this.conversationId = conversationId;
    /** The session that keeps the items: the one given to wrap, else an in-memory list. */
    this.store = session ?? new ItemList();
    this.budget = budgetOf(options.budget);
    this.timeoutMs = timeoutMs;
    this.evidence = evidence;
    this.logger = logger;
    this.onPrompt = onPrompt;
    this.publisher = new Publisher(this.client, {
      onError: (err, { conversationId: conv }) => warn(logger, `could not publish the session's history (the next change publishes it again): ${reasonOf(err)}`, { conversation_id: conv }),
      onHeal: ({ conversationId: conv }) => warn(logger, HEAL_WARNING, { conversation_id: conv }),
      minIntervalMs: PUBLISH_INTERVAL_MS,
      defer: true,
    });
  }

  /** The session's id, which is its recall conversation id: the conversationId given, else the wrapped session's id, else a new UUID. */
  async getSessionId() {
    this.conversationId ??= this.store instanceof ItemList ? randomUUID() : await this.store.getSessionId();
    return this.conversationId;
  }

  /**
   * The items of the next run: recall's evidence message first, then the
   * newest whole turns that fit the budget (tool results compacted), the
   * newest turn whole. With a limit, the newest limit items as they are
   * stored, as the SDK's own sessions answer.
   */
  async getItems(limit) {
    const items = await this.store.getItems();
    if (limit !== undefined) return limit > 0 ? items.slice(-limit) : [];
    if (items.length === 0) return [];
    const started = performance.now();
    const conv = await this.getSessionId();
    const { system, messages, plan } = itemsToRecall(items);
    if (!messages.some((m) => m.role === "user")) return items; // no request to assemble for
    const compaction = plan.findLastIndex((e) => e.item?.type === "compaction");
    const view = compaction < 0 ? messages : plan.slice(compaction + 1).flatMap((e) => e.flats?.map((f) => f.flat) ?? []);
    const answer = await assemble(this.client, this.userId, conv, view, {
      system,
      budget: this.budget,
      evidence: this.evidence,
      timeoutMs: this.timeoutMs,
      logger: this.logger,
      what: "the run",
    });
    // Catches recall up with a history stored before (a session read back
    // from a database), while the model answers.
    this.publisher.schedule(this.userId, conv, messages, { conversationId: conv });
    if (this.evidence) this.publisher.observe(this.userId, conv, answer.result?.evidence?.cursor);
    const out = itemsFromRecall(answer.messages, plan);
    report(this.onPrompt, answer, { userId: this.userId, conversationId: conv, ms: performance.now() - started, items: items.length, kept: out.length });
    return out;
  }

  /** Every stored item, as it was added (what getItems(limit) slices). */
  allItems() {
    return this.store.getItems();
  }

  /** Adds items to the history and publishes it to recall beside the run. */
  async addItems(items) {
    await this.store.addItems(items);
    if (items.length === 0) return;
    const conv = await this.getSessionId();
    const { messages } = itemsToRecall(await this.store.getItems());
    this.publisher.schedule(this.userId, conv, messages, { conversationId: conv });
  }

  /** Removes and returns the newest item; recall gets the shorter history with the next change. */
  popItem() {
    return this.store.popItem();
  }

  /**
   * Clears the history, then deletes the conversation in recall, whose id
   * then stays deleted there (recall keeps nothing of it again: give the
   * next conversation a new id). Throws when recall could not delete it,
   * after the history is cleared: call it again.
   */
  async clearSession() {
    await this.store.clearSession();
    const conv = await this.getSessionId();
    await this.publisher.stop((c) => c.conversationId === conv && c.userId === this.userId);
    await this.client.delete(this.userId, conv);
  }

  /** Resolves once every publish under way has ended (before exiting). */
  flush() {
    return this.publisher.flush();
  }
}

/**
 * A Session for run(agent, input, { session }) whose history recall keeps
 * within a budget. options:
 * - client: a RecallClient; or url, token (and nats, to publish over
 *   JetStream) to make one.
 * - userId: the recall user whose conversation this is. Required.
 * - conversationId: the conversation, also the session's id. Defaults to
 *   the wrapped session's id, else a new UUID.
 * - session: a Session that keeps the items (a database-backed one, say).
 *   Defaults to memory.
 * - budget: what the items getItems returns may take, a number of estimated
 *   tokens or recall's budget fields ({prompt, context_window, …}); leave
 *   room for the agent's instructions, tools, the new input and the run's
 *   own items. Defaults to recall's defaults.
 * - timeoutMs: how long getItems waits for recall before it cuts the
 *   history itself. Defaults to 2,000.
 * - evidence: false leaves recall's evidence message out. Defaults to true.
 * - logger: where warnings go (logger.warn(message, fields)); they never
 *   carry message text. Defaults to console.
 * - onPrompt(info): called after each getItems with its estimates, or with
 *   fallback set when the session cut the history itself.
 */
export function recallSession(options) {
  return new RecallSession(options);
}
