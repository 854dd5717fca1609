// Publishing beside an agent: each conversation's newest history is sent to
// recall in the background, one event at a time per conversation, as an
// append event when what recall holds is an unchanged prefix of it and as a
// snapshot otherwise. The LangGraph.js saver, the AI SDK middleware and the
// OpenAI Agents session all publish through it.

import { createHash } from "node:crypto";
import { MessageError, RecallError, appendEvent, chain, messageDigest, newestUserIndex, snapshotEvent } from "./index.js";

// fingerprints returns SHA-256s over the JSON of messages[0, n) and of all
// messages: they tell whether the messages sent before are unchanged without
// computing their canonical digests again, which costs far more.
function fingerprints(messages, n) {
  const h = createHash("sha256");
  let prefix;
  for (let i = 0; i <= messages.length; i++) {
    if (i === n) prefix = h.copy().digest();
    if (i < messages.length) h.update(JSON.stringify(messages[i]) ?? "null").update("\n");
  }
  return [prefix, h.digest()];
}

// The most publishes a conversation keeps, for healing, that recall's
// cursor has not yet passed.
const MAX_UNCONFIRMED = 256;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Publishes conversations' histories to recall beside the agent. A failed
 * publish is reported to onError(err, meta) and the conversation's next
 * schedule publishes again: an append from what recall held after an
 * outage, a snapshot after recall refused an event.
 *
 * recall acknowledges an event before its worker applies it, and rejects
 * an append whose earlier messages it never got (gap) only later. A caller
 * that reads the conversation's cursor (every POST …/context answers it)
 * reports it to observe(): when the cursor has not reached a history
 * published more than healAfterMs ago, recall missed an event, and the
 * conversation's next publish is a whole snapshot, which heals it.
 */
export class Publisher {
  /**
   * @param client a RecallClient (or anything with its publishEvent)
   * @param options
   * - onError(err, meta): called for each failed publish (a callback that
   *   throws is ignored).
   * - onHeal(meta): called when observe() finds that recall missed an event.
   * - minIntervalMs: the least time between two events of a conversation;
   *   what is scheduled meanwhile goes in one event. Defaults to 0.
   * - healAfterMs: how long a published history may stay ahead of the
   *   cursor observe() is told. Defaults to 15,000 (recall gives up on a
   *   gap after 10 s by default).
   * - maxConversations: how many conversations' state is kept, the oldest
   *   idle one forgotten first (its next publish is a snapshot). Defaults
   *   to 10,000.
   * - defer: true starts publishing after the caller's turn of the event
   *   loop, so that the digests it computes are never in the caller's way;
   *   what the caller schedules meanwhile goes in the same event. Defaults
   *   to false: each schedule starts at once.
   */
  constructor(client, { onError = () => {}, onHeal = () => {}, minIntervalMs = 0, healAfterMs = 15_000, maxConversations = 10_000, defer = false } = {}) {
    this.client = client;
    this.defer = defer;
    this.onError = onError;
    this.onHeal = onHeal;
    this.minIntervalMs = minIntervalMs;
    this.healAfterMs = healAfterMs;
    this.maxConversations = maxConversations;
    // Per conversation: {userId, conversationId, meta, sent: {length,
    // fingerprint, digest} | null, next, running, lastAt, unconfirmed:
    // [{at, newestUser}] | null (null until observe() is first called)}.
    this.conversations = new Map();
  }

  /**
   * Tells the publisher the conversation's cursor, as recall answered it:
   * publishes it has passed are confirmed; one it has not reached within
   * healAfterMs makes the next publish a snapshot.
   */
  observe(userId, conversationId, cursor) {
    const c = this.conversations.get(JSON.stringify([userId, conversationId]));
    if (!c || !Number.isInteger(cursor)) return;
    c.unconfirmed = (c.unconfirmed ?? []).filter((u) => u.newestUser > cursor);
    if (c.unconfirmed.length > 0 && Date.now() - c.unconfirmed[0].at > this.healAfterMs) {
      c.sent = null;
      c.unconfirmed = [];
      try {
        this.onHeal(c.meta);
      } catch {
        // A failing callback must not fail the agent.
      }
    }
  }

  /**
   * Queues history (the conversation's whole history) for publishing: it
   * replaces any history of the conversation not yet sent. meta is passed
   * to onError.
   */
  schedule(userId, conversationId, history, meta = {}) {
    const key = JSON.stringify([userId, conversationId]);
    let c = this.conversations.get(key);
    if (!c) {
      if (this.conversations.size >= this.maxConversations) {
        for (const [k, v] of this.conversations) {
          if (!v.running) {
            this.conversations.delete(k);
            break;
          }
        }
      }
      c = { userId, conversationId, meta, sent: null, next: null, running: null, lastAt: 0, unconfirmed: null };
      this.conversations.set(key, c);
    }
    c.meta = meta;
    c.next = [...history];
    c.running ??= this.drain(c);
  }

  /** Resolves once every publish under way has ended. */
  async flush() {
    for (;;) {
      const running = [...this.conversations.values()].map((c) => c.running).filter(Boolean);
      if (running.length === 0) return;
      await Promise.all(running);
    }
  }

  /**
   * Stops publishing the conversations for which match(state) is true: what
   * is queued is dropped, what is under way ends, and their state is
   * forgotten. Resolves to the [{userId, conversationId, meta}] it stopped.
   */
  async stop(match) {
    const stopped = [...this.conversations.entries()].filter(([, c]) => match(c));
    for (const [key, c] of stopped) {
      c.next = null;
      await c.running;
      this.conversations.delete(key);
    }
    return stopped.map(([, { userId, conversationId, meta }]) => ({ userId, conversationId, meta }));
  }

  // drain publishes a conversation's newest history until none is left.
  async drain(c) {
    try {
      if (this.defer) await new Promise((resolve) => setImmediate(resolve));
      while (c.next) {
        const wait = c.lastAt + this.minIntervalMs - Date.now();
        if (wait > 0) await sleep(wait);
        const history = c.next;
        if (!history) break; // stopped meanwhile
        c.next = null;
        await this.publish(c, history);
        c.lastAt = Date.now();
      }
    } finally {
      c.running = null;
    }
  }

  // publish sends history as an append event from what recall holds, or as
  // a snapshot; nothing when nothing is new.
  async publish(c, history) {
    try {
      const { sent } = c;
      const [prefix, head] = fingerprints(history, sent?.length ?? 0);
      let event, digest;
      if (sent && sent.length <= history.length && prefix.equals(sent.fingerprint)) {
        if (sent.length === history.length) return;
        digest = sent.digest;
        for (let i = sent.length; i < history.length; i++) {
          digest = createHash("sha256").update(digest).update(messageDigest(history[i], i)).digest();
        }
        event = appendEvent(c.userId, c.conversationId, history, sent.length, { prefix: sent.digest.toString("hex") });
      } else {
        if (history.length === 0) return;
        digest = chain(history).at(-1);
        event = snapshotEvent(c.userId, c.conversationId, history);
      }
      await this.client.publishEvent(event);
      c.sent = { length: history.length, fingerprint: head, digest };
      if (c.unconfirmed) {
        c.unconfirmed.push({ at: Date.now(), newestUser: newestUserIndex(history) });
        if (c.unconfirmed.length > MAX_UNCONFIRMED) c.unconfirmed.splice(1, 1);
      }
    } catch (err) {
      // recall refused what it was sent: the next publish is a whole
      // snapshot. An outage keeps what recall holds: the next is an append.
      if (err instanceof MessageError || (err instanceof RecallError && err.status < 500 && err.status !== 429)) c.sent = null;
      try {
        this.onError(err, c.meta);
      } catch {
        // A failing callback must not fail the agent either.
      }
    }
  }
}
