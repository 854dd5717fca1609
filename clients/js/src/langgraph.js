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
import { RecallClient } from "./index.js";
import { Publisher } from "./publisher.js";

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
    this.publisher = new Publisher(this.client, {
      onError: (err, { threadId }) => this.report(err, { configurable: { thread_id: threadId } }),
      maxConversations: maxThreads,
    });
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
    const known = await this.publisher.stop((c) => c.meta.threadId === threadId);
    const keys = known.length > 0 ? known : [{ userId: this.userIdOf(config), conversationId: this.conversationIdOf(config) }];
    for (const { userId, conversationId } of keys) {
      if (!userId || !conversationId) {
        throw new Error(`recall: cannot delete thread ${threadId} in recall: its user is unknown to this process; give withRecall a userId`);
      }
      await this.client.delete(userId, conversationId);
    }
  }

  /** Resolves once every publish under way has ended (for a graceful exit, and tests). */
  flush() {
    return this.publisher.flush();
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
    this.publisher.schedule(userId, conversationId, history, { threadId: threadOf(config) });
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
