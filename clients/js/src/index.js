// recall client: publish conversation checkpoints to recall, over NATS
// JetStream or HTTP, with the chain digests recall checks, and read the
// evidence it keeps. See docs/protocol.md in the recall repository.

import { createHash, createHmac, randomUUID } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import canonicalize from "canonicalize";

export const SCHEMA = "recall.checkpoint.v1";
export const DEFAULT_SUBJECT = "recall.checkpoints";
export const SERVICE_SCOPE = "recall:service";

// TRACEPARENT is the form of a W3C Trace Context traceparent header.
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const MAX_KEY_BYTES = 256;
const MAX_WAIT_SECONDS = 30;

/** SHA-256 of the ASCII bytes "recall.v1": the chain digest of no messages. */
export const CHAIN_START = createHash("sha256").update("recall.v1").digest();

/** A message recall would reject as invalid. The text names the field, never the content. */
export class MessageError extends Error {
  constructor(index, field, problem) {
    let where = index === undefined || index === null ? "message" : `message ${index}`;
    if (field) where += `: field "${field}"`;
    super(`${where}: ${problem}`);
    this.name = "MessageError";
    this.index = index;
    this.field = field;
    this.problem = problem;
  }
}

/** An error answer of recall's API: status, code ("forbidden", "invalid", …) and message. */
export class RecallError extends Error {
  constructor(status, code, message) {
    super(`recall answered ${status} ${code}: ${message}`);
    this.name = "RecallError";
    this.status = status;
    this.code = code;
    this.detail = message;
  }
}

/**
 * RFC 8785 canonical JSON (JCS) of value, as a string: members sorted by
 * UTF-16 code units, numbers as ECMAScript writes them, minimal escapes.
 */
export function canonicalJSON(value) {
  return canonicalize(value);
}

const ROLES = {
  user: "user", human: "user",
  assistant: "assistant", ai: "assistant",
  system: "system", developer: "system",
  tool: "tool", function: "tool",
};
const CLASSES = {
  HumanMessage: "user",
  AIMessage: "assistant",
  SystemMessage: "system",
  ToolMessage: "tool",
  FunctionMessage: "tool",
};

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function roleOf(name, index) {
  if (typeof name !== "string") throw new MessageError(index, "role", "must be a string");
  const role = ROLES[name.toLowerCase()];
  if (!role) throw new MessageError(index, "role", "must be one of user, assistant, system, tool (aliases human, ai)");
  return role;
}

function classRole(cls, fields, index) {
  if (cls.endsWith("Chunk")) cls = cls.slice(0, -"Chunk".length);
  if (cls === "ChatMessage") return roleOf(fields.role, index);
  const role = CLASSES[cls];
  if (!role) throw new MessageError(index, "id", "names an unsupported message class");
  return role;
}

function storedRole(kind, data, index) {
  if (kind === "chat" || kind === "generic") return roleOf(data.role, index);
  if (typeof kind !== "string") throw new MessageError(index, "type", "names an unsupported message type");
  const base = kind.endsWith("Chunk") ? kind.slice(0, -"Chunk".length) : kind;
  return ROLES[base.toLowerCase()] ?? classRole(kind, data, index);
}

function optString(fields, name, index) {
  const v = fields[name];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new MessageError(index, name, "must be a string");
  return v;
}

function contentParts(c, index) {
  if (c === undefined || c === null || c === "") return [];
  if (typeof c === "string") return [{ type: "text", text: c }];
  if (Array.isArray(c)) return c;
  throw new MessageError(index, "content", "must be a string or a list of parts");
}

// OpenAI's arguments: a string of JSON, parsed when it holds JSON.
function parseArguments(s) {
  const t = s.trim();
  if (t === "") return s;
  try {
    return JSON.parse(t);
  } catch {
    return s;
  }
}

function toolCalls(calls, index) {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw new MessageError(index, "tool_calls", "must be a list");
  return calls.map((c) => {
    if (!isObject(c)) throw new MessageError(index, "tool_calls", "entries must be JSON objects");
    if (isObject(c.function)) {
      let args = "arguments" in c.function ? c.function.arguments : {};
      if (typeof args === "string") args = parseArguments(args);
      return { id: optString(c, "id", index), name: optString(c.function, "name", index), args };
    }
    // LangChain's args are kept as given.
    return { id: optString(c, "id", index), name: optString(c, "name", index), args: "args" in c ? c.args : {} };
  });
}

// The JSON a message is sent as: LangChain message objects become their
// constructor form, undefined fields go.
function asJSON(m) {
  return JSON.parse(JSON.stringify(m));
}

function form(m, index) {
  if (!isObject(m)) throw new MessageError(index, "", "must be a JSON object");
  if ("role" in m) {
    if (m.type !== undefined && m.type !== null && typeof m.type !== "string") {
      throw new MessageError(index, "type", "must be a string");
    }
    return [m, roleOf(m.role, index), m.type || "chat"];
  }
  if ("lc" in m && m.type === "constructor") {
    if (!isObject(m.kwargs)) throw new MessageError(index, "kwargs", "must be a JSON object");
    const path = m.id;
    if (!Array.isArray(path) || path.length === 0 || typeof path.at(-1) !== "string") {
      throw new MessageError(index, "id", "must be a non-empty list of strings naming the message class");
    }
    return [m.kwargs, classRole(path.at(-1), m.kwargs, index), "chat"];
  }
  if (isObject(m.data)) return [m.data, storedRole(m.type, m.data, index), "chat"];
  throw new MessageError(index, "role", "is required (or use a LangChain stored or constructor form)");
}

/**
 * The normalised message whose canonical JSON is digested:
 * {role, id, type, content, tool_calls, tool_call_id, artifact}.
 */
export function normalizeMessage(message, index) {
  const [fields, role, type] = form(asJSON(message), index);
  optString(fields, "name", index);
  return {
    role,
    id: optString(fields, "id", index),
    type,
    content: contentParts(fields.content, index),
    tool_calls: toolCalls(fields.tool_calls, index),
    tool_call_id: optString(fields, "tool_call_id", index),
    artifact: fields.artifact === undefined ? null : fields.artifact,
  };
}

/** SHA-256 (a 32-byte Buffer) of the message's canonical normalised form. */
export function messageDigest(message, index) {
  return createHash("sha256").update(canonicalJSON(normalizeMessage(message, index)), "utf8").digest();
}

/** The chain digests c_0 … c_n (32-byte Buffers) over messages. */
export function chain(messages) {
  let c = CHAIN_START;
  const out = [c];
  messages.forEach((m, i) => {
    c = createHash("sha256").update(c).update(messageDigest(m, i)).digest();
    out.push(c);
  });
  return out;
}

/** The chain digest of messages as 64 lowercase hex characters: the prefix_digest of an append at offset messages.length. */
export function prefixDigest(messages) {
  return chain(messages).at(-1).toString("hex");
}

/** The index of the newest user message, -1 when there is none: the cursor recall reaches once it has processed the history. */
export function newestUserIndex(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (form(asJSON(messages[i]), i)[1] === "user") return i;
  }
  return -1;
}

function validateKey(userId, conversationId) {
  validateId("user_id", userId);
  validateId("conversation_id", conversationId);
}

function validateId(name, v) {
  if (typeof v !== "string" || v === "") throw new TypeError(`${name} must be a non-empty string`);
  if (Buffer.byteLength(v, "utf8") > MAX_KEY_BYTES) throw new RangeError(`${name} is longer than ${MAX_KEY_BYTES} bytes`);
  if (v.includes("\0")) throw new TypeError(`${name} must not contain NUL`);
}

const newEventId = () => randomUUID().replaceAll("-", "");

function wireMessages(messages, offset) {
  if (!Array.isArray(messages)) throw new TypeError("messages must be an array");
  const out = messages.map(asJSON);
  out.forEach((m, i) => normalizeMessage(m, offset + i)); // throws MessageError for what recall rejects
  return out;
}

/** A snapshot event: the whole history (offset 0). */
export function snapshotEvent(userId, conversationId, history, { eventId } = {}) {
  validateKey(userId, conversationId);
  return {
    schema: SCHEMA, kind: "snapshot", event_id: eventId ?? newEventId(),
    user_id: userId, conversation_id: conversationId,
    offset: 0, prefix_digest: null, messages: wireMessages(history, 0),
  };
}

/** An append event: history[offset:], with the chain digest of history[:offset]. history is the full history. */
export function appendEvent(userId, conversationId, history, offset, { eventId, prefix } = {}) {
  validateKey(userId, conversationId);
  if (!Number.isInteger(offset) || offset < 0 || offset > history.length) {
    throw new RangeError("offset must be an integer between 0 and history.length");
  }
  if (offset === 0) return snapshotEvent(userId, conversationId, history, { eventId });
  return {
    schema: SCHEMA, kind: "snapshot", event_id: eventId ?? newEventId(),
    user_id: userId, conversation_id: conversationId,
    offset, prefix_digest: prefix ?? prefixDigest(history.slice(0, offset)),
    messages: wireMessages(history.slice(offset), offset),
  };
}

/** A delete event: it deletes the conversation. */
export function deleteEvent(userId, conversationId, { eventId } = {}) {
  validateKey(userId, conversationId);
  return { schema: SCHEMA, kind: "delete", event_id: eventId ?? newEventId(), user_id: userId, conversation_id: conversationId };
}

const b64url = (buf) => Buffer.from(buf).toString("base64url");

/**
 * An HS256 bearer token for user sub, valid ttlSeconds; service: true adds
 * the recall:service scope (acts for any user). Sign on your backend only.
 */
export function signToken(secret, sub, { ttlSeconds = 3600, service = false } = {}) {
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub, iat: now, exp: now + ttlSeconds, ...(service ? { scope: SERVICE_SCOPE } : {}) };
  const input = `${b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }))}.${b64url(JSON.stringify(claims))}`;
  return `${input}.${b64url(createHmac("sha256", secret).update(input).digest())}`;
}

const seconds = (wait) => (wait === undefined || wait === null ? undefined : typeof wait === "number" ? `${wait}s` : wait);

/**
 * Publishes checkpoints and reads evidence. Events go over HTTP
 * (POST /v1/checkpoints) unless a NATS connection is given, then over
 * JetStream with Nats-Msg-Id = event_id. With mode "append", publish()
 * sends only the messages added since the last event of the conversation
 * when the earlier ones are unchanged (their chain digest proves it).
 */
export class RecallClient {
  constructor({ url, token, nats, subject = DEFAULT_SUBJECT, mode = "snapshot", timeoutMs = 40_000, maxConversations = 10_000, traceparent } = {}) {
    if (!url || !token) {
      throw new Error("set url and token (RECALL_API_URL and RECALL_TOKEN: run `recall dev` and paste the export lines it prints)");
    }
    if (mode !== "snapshot" && mode !== "append") throw new RangeError('mode must be "snapshot" or "append"');
    this.url = url.replace(/\/+$/, "");
    this.token = token;
    this.subject = subject;
    this.mode = mode;
    this.timeoutMs = timeoutMs;
    this.maxConversations = maxConversations;
    this.js = nats ? jetstream(nats) : null;
    this.sent = new Map(); // key -> {length, digest}
    this.traceparent = traceparent;
  }

  /**
   * The W3C traceparent a call sends: the call's own, else the client's (a
   * string, or a function called for each request, such as one that reads
   * the active OpenTelemetry context); undefined for none.
   */
  traceparentFor(given) {
    const tp = given ?? (typeof this.traceparent === "function" ? this.traceparent() : this.traceparent);
    if (tp === undefined || tp === null || tp === "") return undefined;
    if (typeof tp !== "string" || !TRACEPARENT.test(tp)) {
      throw new TypeError(`traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), not ${JSON.stringify(tp)}`);
    }
    return tp;
  }

  async request(method, path, { body, query, timeoutMs, signal, traceparent } = {}) {
    const resp = await this.send(method, path, { body, query, timeoutMs, signal, traceparent });
    const text = await resp.text();
    return text ? JSON.parse(text) : null;
  }

  /**
   * Sends a request and resolves to the Response once its status is a
   * success; throws RecallError otherwise. timeoutMs null: no timeout; a
   * signal aborts it too.
   */
  async send(method, path, { body, query, timeoutMs, signal, accept = "application/json", traceparent } = {}) {
    const url = new URL(this.url + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    const headers = { Authorization: `Bearer ${this.token}`, Accept: accept };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const tp = this.traceparentFor(traceparent);
    if (tp) headers.traceparent = tp;
    const signals = [signal, timeoutMs === null ? undefined : AbortSignal.timeout(timeoutMs ?? this.timeoutMs)].filter(Boolean);
    const resp = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: signals.length > 1 ? AbortSignal.any(signals) : signals[0],
    });
    if (!resp.ok) {
      const text = await resp.text();
      let code = `http_${resp.status}`, message = resp.statusText;
      try {
        ({ code, message } = JSON.parse(text).error);
      } catch {
        // not recall's error body
      }
      throw new RecallError(resp.status, code, message);
    }
    return resp;
  }

  static userPath(userId) {
    validateId("user_id", userId);
    return `/v1/users/${encodeURIComponent(userId)}`;
  }

  static conversationPath(userId, conversationId) {
    validateKey(userId, conversationId);
    return `/v1/users/${encodeURIComponent(userId)}/conversations/${encodeURIComponent(conversationId)}`;
  }

  /**
   * Publishes an event and resolves to {stream_seq, duplicate} once the
   * stream has acknowledged it. A traceparent (the option, or the client's)
   * goes in the request's or the NATS message's traceparent header, and
   * recall's spans for the event join that trace.
   */
  async publishEvent(event, { traceparent } = {}) {
    if (!this.js) return this.request("POST", "/v1/checkpoints", { body: event, traceparent });
    const tp = this.traceparentFor(traceparent);
    let hdrs;
    if (tp) {
      hdrs = headers();
      hdrs.set("traceparent", tp);
    }
    const ack = await this.js.publish(this.subject, new TextEncoder().encode(JSON.stringify(event)), {
      msgID: event.event_id,
      timeout: 10_000,
      ...(hdrs ? { headers: hdrs } : {}),
    });
    return { stream_seq: ack.seq, duplicate: ack.duplicate };
  }

  /**
   * Publishes the conversation's whole current history (append-only, ending
   * with the newest user message): a snapshot, or in append mode an append
   * event when it can. Messages may be flat objects, LangChain messages, or
   * LangChain's stored form, mixed.
   */
  async publish(userId, conversationId, history, { eventId, traceparent } = {}) {
    const key = JSON.stringify([userId, conversationId]);
    let event, digests;
    if (this.mode === "append") {
      digests = chain(history);
      const sent = this.sent.get(key);
      if (sent && sent.length > 0 && sent.length <= history.length && digests[sent.length].equals(sent.digest)) {
        event = appendEvent(userId, conversationId, history, sent.length, { eventId, prefix: sent.digest.toString("hex") });
      }
    }
    event ??= snapshotEvent(userId, conversationId, history, { eventId });
    const ack = await this.publishEvent(event, { traceparent });
    if (this.mode === "append") {
      this.sent.delete(key);
      if (this.sent.size >= this.maxConversations) this.sent.delete(this.sent.keys().next().value);
      this.sent.set(key, { length: history.length, digest: digests.at(-1) });
    }
    return { ...ack, event_id: event.event_id, offset: event.offset, sent: event.messages.length };
  }

  /** Publishes a delete event. */
  async publishDelete(userId, conversationId, { eventId, traceparent } = {}) {
    this.forget(userId, conversationId);
    return this.publishEvent(deleteEvent(userId, conversationId, { eventId }), { traceparent });
  }

  /** Makes the next publish of the conversation a full snapshot. */
  forget(userId, conversationId) {
    this.sent.delete(JSON.stringify([userId, conversationId]));
  }

  /**
   * The conversation's evidence. With minCursor and wait (seconds, or a
   * duration such as "2s"; at most 30 s) the answer waits until
   * cursor >= minCursor and says lagging: true when the deadline came first.
   */
  async evidence(userId, conversationId, { minCursor, wait, maxTokens, traceparent } = {}) {
    const w = seconds(wait);
    const timeoutMs = typeof wait === "number" ? Math.max(this.timeoutMs, wait * 1000 + 10_000) : undefined;
    return this.request("GET", RecallClient.conversationPath(userId, conversationId) + "/evidence", {
      query: { min_cursor: minCursor, wait: w, max_tokens: maxTokens },
      timeoutMs,
      traceparent,
    });
  }

  /**
   * Waits up to timeoutMs until the evidence's cursor reaches minCursor, and
   * with minMessages until it also covers that many messages (the replies
   * after the newest user message arrive in events of their own, as a
   * LangGraph.js saver publishes them), and resolves to it.
   */
  async waitFor(userId, conversationId, minCursor, { timeoutMs = 60_000, minMessages = 0, maxTokens, traceparent } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = Math.max(0, Math.min(MAX_WAIT_SECONDS, (deadline - Date.now()) / 1000));
      const ev = await this.evidence(userId, conversationId, { minCursor, wait: left, maxTokens, traceparent });
      if (ev.cursor >= minCursor && ev.message_count >= minMessages) return ev;
      if (Date.now() >= deadline) {
        throw new Error(
          `the evidence covers cursor ${ev.cursor} and ${ev.message_count} messages, short of ${minCursor} and ${minMessages}, after ${timeoutMs} ms; is a recall worker running?`,
        );
      }
      if (ev.cursor >= minCursor) await new Promise((resolve) => setTimeout(resolve, 50)); // the cursor does not move for a reply
    }
  }

  /** The evidence selected for query instead of the current request (POST …/evidence/search). */
  async search(userId, conversationId, query, { maxTokens, traceparent } = {}) {
    const body = { query, ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }) };
    return this.request("POST", RecallClient.conversationPath(userId, conversationId) + "/evidence/search", { body, traceparent });
  }

  /**
   * The bounded messages of the next model call (POST …/context). timeoutMs
   * bounds the request (the client's timeout by default); a signal aborts it.
   */
  async context(userId, conversationId, messages, { system, tools, budget, evidence, minCursor, wait, timeoutMs, signal, traceparent } = {}) {
    const body = { messages: messages.map(asJSON) };
    for (const [k, v] of [["system", system], ["tools", tools], ["budget", budget], ["evidence", evidence], ["min_cursor", minCursor], ["wait", seconds(wait)]]) {
      if (v !== undefined) body[k] = v;
    }
    return this.request("POST", RecallClient.conversationPath(userId, conversationId) + "/context", { body, timeoutMs, signal, traceparent });
  }

  /** Deletes the conversation: its evidence and every copy of its messages recall holds. */
  async delete(userId, conversationId) {
    this.forget(userId, conversationId);
    await this.request("DELETE", RecallClient.conversationPath(userId, conversationId));
  }

  /**
   * A page of the user's conversations that hold state, ordered by id
   * (GET /v1/users/{user}/conversations): {conversations, next}. Pass next
   * as after for the next page; it is null on the last one.
   */
  async conversations(userId, { limit, after } = {}) {
    return this.request("GET", RecallClient.userPath(userId) + "/conversations", { query: { limit, after } });
  }

  /** Every conversation of the user that holds state, page after page. */
  async *allConversations(userId, { limit } = {}) {
    let after;
    do {
      const page = await this.conversations(userId, { limit, after });
      yield* page.conversations;
      after = page.next;
    } while (after !== null && after !== undefined);
  }

  /**
   * Everything recall holds for the user (GET /v1/users/{user}/export), line
   * by line as it arrives: {type: "conversation", …} lines, then "entry",
   * then "rejection" (never with a payload), and last {type: "end", …} with
   * the counts. Throws when the stream ends without its end line (it was cut
   * short). No timeout unless timeoutMs is given.
   */
  async *export(userId, { timeoutMs = null } = {}) {
    const resp = await this.send("GET", RecallClient.userPath(userId) + "/export", { timeoutMs, accept: "application/x-ndjson" });
    const decoder = new TextDecoder();
    let pending = "";
    let ended = false;
    const parse = (line) => {
      if (ended) throw new Error("recall's export has lines after its end line");
      const v = JSON.parse(line);
      ended = v.type === "end";
      return v;
    };
    for await (const chunk of resp.body) {
      pending += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (line) yield parse(line);
      }
    }
    pending += decoder.decode();
    if (pending) yield parse(pending);
    if (!ended) throw new Error("recall's export was cut short: it has no end line; ask again");
  }

  /** Deletes every conversation of the user (DELETE /v1/users/{user}); each stays deleted. */
  async deleteUser(userId) {
    await this.request("DELETE", RecallClient.userPath(userId));
    for (const key of [...this.sent.keys()]) if (JSON.parse(key)[0] === userId) this.sent.delete(key);
  }
}

/**
 * The messages of the next prompt: the system message, recall's evidence
 * message (role assistant: quoted history, not instructions) when there is
 * one, then the history from the evidence's cursor on.
 */
export function buildPrompt(system, evidence, history) {
  return [
    ...(system ? [system] : []),
    ...(evidence?.message ? [evidence.message] : []),
    ...history.slice(evidence?.cursor ?? 0),
  ];
}
