// A LangGraph.js checkpoint saver that publishes each thread's messages to
// recall as it saves them: withRecall(saver, options) wraps the saver the
// graph already uses (MemorySaver, a Postgres or SQLite saver, …).
//
// Every put of a thread's root checkpoint publishes its messages channel to
// recall: an append event when the messages recall already holds are an
// unchanged prefix of the thread's, a snapshot otherwise. Publishing runs
// beside the graph, never in its way: the wrapped saver's result is
// returned at once, a failed publish is reported to onError and retried by
// the thread's next put, and flush() waits for what is under way. Reads,
// lists and writes go to the wrapped saver unchanged; deleteThread also
// deletes the conversation in recall.

import * as checkpoint from "@langchain/langgraph-checkpoint";
import { MessageError, RecallClient, RecallError, appendEvent, chain, snapshotEvent } from "./index.js";

const { BaseCheckpointSaver } = checkpoint;

/** The user of a put, by default: the configurable user_id of the graph's call. */
const configuredUser = (config) => config?.configurable?.user_id;

/** The conversation of a put, by default: the thread id. */
const threadOf = (config) => config?.configurable?.thread_id;

const defaultOnError = (err, { threadId } = {}) => {
  console.warn(`recall: thread ${threadId ?? "?"}: ${err.message}`);
};

/**
 * A checkpoint saver that wraps another and publishes each thread's
 * messages to recall. See withRecall.
 */
export class RecallSaver extends BaseCheckpointSaver {
  /**
   * @param saver the checkpoint saver to wrap, which keeps the checkpoints
   * @param options see withRecall
   */
  constructor(saver, options = {}) {
    if (!saver || typeof saver.put !== "function" || typeof saver.getTuple !== "function") {
      throw new TypeError("withRecall: pass the checkpoint saver to wrap (new MemorySaver(), a Postgres saver, …) as the first argument");
    }
    const { client, url, token, nats, userId = configuredUser, conversationId = threadOf, channel = "messages", messages, onError = defaultOnError, maxThreads = 10_000 } = options;
    super(saver.serde);
    /** The wrapped saver. */
    this.saver = saver;
    this.client = client ?? new RecallClient({ url, token, nats });
    this.userIdOf = typeof userId === "function" ? userId : () => userId;
    this.conversationIdOf = conversationId;
    this.messagesOf = messages ?? ((cp) => cp.channel_values?.[channel]);
    this.onError = onError;
    this.maxThreads = maxThreads;
    // Per conversation: {userId, conversationId, threadId, sent: {length, digest} | null, next, running}.
    this.threads = new Map();
  }

  // Reads and writes of the wrapped saver, unchanged.

  getTuple(config) {
    return this.saver.getTuple(config);
  }

  list(config, options) {
    return this.saver.list(config, options);
  }

  putWrites(config, writes, taskId, taskPath) {
    return this.saver.putWrites(config, writes, taskId, taskPath);
  }

  getNextVersion(current) {
    return this.saver.getNextVersion(current);
  }

  getDeltaChannelHistory(options) {
    return this.saver.getDeltaChannelHistory(options);
  }

  /**
   * Saves the checkpoint with the wrapped saver and returns its result; a
   * root checkpoint's messages are then published to recall beside the
   * graph. A publish never fails the put.
   */
  async put(config, cp, metadata, newVersions) {
    const saved = await this.saver.put(config, cp, metadata, newVersions);
    try {
      this.schedule(config, cp);
    } catch (err) {
      this.report(err, config);
    }
    return saved;
  }

  /**
   * Deletes the thread with the wrapped saver, then its conversation in
   * recall (and the key stays deleted there: later events for it are
   * refused). It throws when recall cannot delete it, after the wrapped
   * saver has: call it again.
   */
  async deleteThread(threadId) {
    await this.saver.deleteThread(threadId);
    const config = { configurable: { thread_id: threadId } };
    const known = [...this.threads.values()].filter((t) => t.threadId === threadId);
    const keys = known.length > 0 ? known : [{ userId: this.userIdOf(config), conversationId: this.conversationIdOf(config) }];
    for (const t of known) {
      t.next = null; // nothing more is published for it
      await t.running;
      this.threads.delete(JSON.stringify([t.userId, t.conversationId]));
    }
    for (const { userId, conversationId } of keys) {
      if (!userId || !conversationId) {
        throw new Error(`recall: cannot delete thread ${threadId} in recall: its user is unknown to this process; give withRecall a userId`);
      }
      await this.client.delete(userId, conversationId);
    }
  }

  /** Resolves once every publish under way has ended (for a graceful exit, and tests). */
  async flush() {
    for (;;) {
      const running = [...this.threads.values()].map((t) => t.running).filter(Boolean);
      if (running.length === 0) return;
      await Promise.all(running);
    }
  }

  // schedule queues the checkpoint's messages for publishing: the newest
  // history of each conversation replaces any not yet sent.
  schedule(config, cp) {
    if ((config?.configurable?.checkpoint_ns ?? "") !== "") return; // a subgraph's checkpoint
    let history = this.messagesOf(cp);
    if (checkpoint.isDeltaSnapshot?.(history)) history = history.value;
    if (!Array.isArray(history)) return;
    const userId = this.userIdOf(config);
    const conversationId = this.conversationIdOf(config);
    if (!userId || !conversationId) {
      throw new Error("cannot publish: no user id (pass userId to withRecall, or user_id in the graph's configurable) or no thread id");
    }
    const key = JSON.stringify([userId, conversationId]);
    let t = this.threads.get(key);
    if (!t) {
      if (this.threads.size >= this.maxThreads) {
        // Forget the oldest idle thread: its next publish is a snapshot.
        for (const [k, v] of this.threads) {
          if (!v.running) {
            this.threads.delete(k);
            break;
          }
        }
      }
      t = { userId, conversationId, threadId: threadOf(config), sent: null, next: null, running: null };
      this.threads.set(key, t);
    }
    t.next = [...history];
    t.running ??= this.drain(t);
  }

  // drain publishes a conversation's newest history until none is left.
  async drain(t) {
    try {
      while (t.next) {
        const history = t.next;
        t.next = null;
        await this.publish(t, history);
      }
    } finally {
      t.running = null;
    }
  }

  // publish sends history as an append event from what recall holds, or as
  // a snapshot; nothing when nothing is new. A failure is reported; the
  // next put publishes again.
  async publish(t, history) {
    try {
      const digests = chain(history);
      const { sent } = t;
      let event;
      if (sent && sent.length <= history.length && digests[sent.length].equals(sent.digest)) {
        if (sent.length === history.length) return;
        event = appendEvent(t.userId, t.conversationId, history, sent.length, { prefix: sent.digest.toString("hex") });
      } else {
        if (history.length === 0) return;
        event = snapshotEvent(t.userId, t.conversationId, history);
      }
      await this.client.publishEvent(event);
      t.sent = { length: history.length, digest: digests.at(-1) };
    } catch (err) {
      // recall refused what it was sent: the next publish is a whole
      // snapshot. An outage keeps what recall holds: the next is an append.
      if (err instanceof MessageError || (err instanceof RecallError && err.status < 500 && err.status !== 429)) t.sent = null;
      this.report(err, { configurable: { thread_id: t.threadId } });
    }
  }

  report(err, config) {
    try {
      this.onError(err, { threadId: threadOf(config) });
    } catch {
      // A failing callback must not fail the graph either.
    }
  }
}

/**
 * Wraps a LangGraph.js checkpoint saver so that each thread's messages are
 * published to recall as the graph saves them.
 *
 *   const checkpointer = withRecall(new MemorySaver(), { url, token });
 *   const graph = builder.compile({ checkpointer });
 *   await graph.invoke(input, { configurable: { thread_id, user_id } });
 *
 * options:
 * - client: a RecallClient; or url, token (and nats, a NATS connection, to
 *   publish over JetStream) to make one.
 * - userId: the recall user of a put: a string, or a function of the put's
 *   config. Defaults to config.configurable.user_id.
 * - conversationId: a function of the put's config. Defaults to the thread id.
 * - channel: the state channel that holds the messages. Defaults to "messages";
 *   messages, a function of the checkpoint, overrides it.
 * - onError(err, {threadId}): called for each failed publish (the put has
 *   succeeded; the thread's next put publishes again). Defaults to a
 *   console warning. Errors never carry message text.
 */
export function withRecall(saver, options) {
  return new RecallSaver(saver, options);
}
