import type { RunnableConfig } from "@langchain/core/runnables";
import type {
  BaseCheckpointSaver,
  ChannelVersions,
  Checkpoint,
  CheckpointListOptions,
  CheckpointMetadata,
  CheckpointTuple,
  PendingWrite,
} from "@langchain/langgraph-checkpoint";
import type { NatsConnection } from "@nats-io/transport-node";
import type { RecallClient } from "./index.js";

export interface WithRecallOptions {
  /** The client that publishes (and deletes); or give url and token (and nats) to make one. */
  client?: RecallClient;
  /** recall's API base URL (RECALL_API_URL), when no client is given. */
  url?: string;
  /** A bearer JWT that may publish for the threads' users (RECALL_TOKEN), when no client is given. */
  token?: string;
  /** Publish over this NATS connection (JetStream) instead of HTTP, when no client is given. */
  nats?: NatsConnection;
  /** The recall user of a put: a string, or a function of the put's config. Defaults to config.configurable.user_id. */
  userId?: string | ((config: RunnableConfig) => string | undefined);
  /** The recall conversation of a put, a function of its config. Defaults to the thread id. */
  conversationId?: (config: RunnableConfig) => string | undefined;
  /** The state channel that holds the messages. Defaults to "messages". */
  channel?: string;
  /** The messages of a checkpoint, overriding channel. */
  messages?: (checkpoint: Checkpoint) => unknown[] | undefined;
  /** Called for each failed publish; the put has succeeded, and the thread's next put publishes again. Defaults to a console warning. */
  onError?: (err: Error, context: { threadId?: string }) => void;
  /** How many conversations' publishing state is kept; the oldest idle one is forgotten (its next publish is a snapshot). Defaults to 10,000. */
  maxThreads?: number;
}

/** A checkpoint saver that wraps another and publishes each thread's messages to recall. */
export declare class RecallSaver extends BaseCheckpointSaver {
  constructor(saver: BaseCheckpointSaver, options?: WithRecallOptions);
  /** The wrapped saver, which keeps the checkpoints. */
  readonly saver: BaseCheckpointSaver;
  readonly client: RecallClient;
  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple>;
  /** Saves with the wrapped saver and returns its result; a root checkpoint's messages are then published beside the graph. */
  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig>;
  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void>;
  /** Deletes the thread with the wrapped saver, then its conversation in recall; throws when recall cannot (call it again). */
  deleteThread(threadId: string): Promise<void>;
  /** Resolves once every publish under way has ended. */
  flush(): Promise<void>;
}

/** Wraps a checkpoint saver so that each thread's messages are published to recall as the graph saves them. */
export declare function withRecall(saver: BaseCheckpointSaver, options?: WithRecallOptions): RecallSaver;
