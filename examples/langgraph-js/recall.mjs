// A small recall client for a LangGraph.js backend: publish a checkpoint
// snapshot to NATS JetStream, read the evidence back over HTTP. This is the
// part to copy into an agent backend; main.mjs shows it in a graph.

import { connect, headers } from "nats";
import { AIMessage } from "@langchain/core/messages";

const encoder = new TextEncoder();

export class Recall {
  /**
   * @param {object} cfg
   * @param {string} cfg.apiURL   recall's read API (RECALL_API_URL)
   * @param {string} cfg.natsURL  the NATS server (NATS_URL)
   * @param {string} cfg.token    a bearer token for the read API (RECALL_TOKEN)
   * @param {string} [cfg.subject] the checkpoint subject; defaults to recall.checkpoints
   */
  constructor({ apiURL, natsURL, token, subject = "recall.checkpoints" }) {
    if (!apiURL || !natsURL || !token) {
      throw new Error(
        "set RECALL_API_URL, NATS_URL and RECALL_TOKEN (run `recall dev` and paste the export lines it prints)",
      );
    }
    this.apiURL = apiURL.replace(/\/+$/, "");
    this.natsURL = natsURL;
    this.token = token;
    this.subject = subject;
  }

  async connect() {
    this.nc = await connect({ servers: this.natsURL, name: "recall langgraph-js example" });
    this.js = this.nc.jetstream();
  }

  async close() {
    await this.nc?.drain();
  }

  /**
   * Publishes a snapshot: the checkpoint's whole message history. messages
   * may be LangChain messages (JSON.stringify turns them into the
   * constructor form), the output of mapChatMessagesToStoredMessages, or
   * plain {role, content} objects, mixed. The event id is also the
   * Nats-Msg-Id header, so that JetStream drops a republished copy: derive
   * it from the checkpoint, not from the clock.
   *
   * @returns the JetStream ack: {stream, seq, duplicate}
   */
  async publishSnapshot({ userId, conversationId, eventId, messages }) {
    const event = {
      schema: "recall.checkpoint.v1",
      kind: "snapshot",
      event_id: eventId,
      user_id: userId,
      conversation_id: conversationId,
      offset: 0,
      prefix_digest: null,
      messages,
    };
    const h = headers();
    h.set("Nats-Msg-Id", eventId);
    return this.js.publish(this.subject, encoder.encode(JSON.stringify(event)), {
      headers: h,
      timeout: 10_000,
    });
  }

  /**
   * Reads a conversation's evidence. Without minCursor the answer may lag a
   * turn (or more, while the workers catch up); with minCursor the server
   * waits up to `wait` (at most 30s) until its cursor reaches minCursor,
   * and says `lagging: true` if it did not.
   */
  async evidence(userId, conversationId, { minCursor, wait } = {}) {
    const url = new URL(
      `${this.apiURL}/v1/users/${encodeURIComponent(userId)}/conversations/${encodeURIComponent(conversationId)}/evidence`,
    );
    if (minCursor !== undefined) url.searchParams.set("min_cursor", String(minCursor));
    if (wait !== undefined) url.searchParams.set("wait", wait);
    const resp = await fetch(url, {
      headers: { Authorization: `Bearer ${this.token}` },
      signal: AbortSignal.timeout(40_000),
    });
    const body = await resp.text();
    if (!resp.ok) {
      let detail = body;
      try {
        const e = JSON.parse(body).error;
        detail = `${e.code}: ${e.message}`;
      } catch {
        // not recall's error body: show it as it came
      }
      throw new Error(`GET ${url.pathname} answered ${resp.status} (${detail})`);
    }
    return { ...JSON.parse(body), raw: body };
  }
}

/**
 * The evidence as a message for the prompt, or null. recall's message is
 * always role "assistant", never "system": it is untrusted history, not
 * instructions.
 */
export function evidenceMessage(ev) {
  if (!ev?.message) return null;
  return new AIMessage({ content: ev.message.content });
}
