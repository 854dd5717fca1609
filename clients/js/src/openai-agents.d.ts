import type { AgentInputItem, Session } from "@openai/agents";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Budget, Message, RecallClient } from "./index.js";
import type { Logger } from "./ai-sdk.js";

export type { Logger } from "./ai-sdk.js";

/** What one getItems cost; never message text. */
export interface SessionPromptInfo {
  userId: string;
  conversationId: string;
  /** getItems' own time, in milliseconds. */
  ms: number;
  /** The stored items, and how many getItems returned. */
  items: number;
  kept: number;
  estimatedTokens: { total: number; system?: number; tools?: number; evidence?: number; history?: number; current?: number };
  limit: number;
  droppedTurns: number;
  /** How long recall took to answer POST …/context, in milliseconds (part of ms). Absent on a fallback. */
  recallMs?: number;
  /** recall's evidence: whether it is in front, its version and cursor. Absent on a fallback. */
  evidence?: { included: boolean; version: number; cursor: number; lagging?: boolean };
  /** Why the session cut the history itself (recall unreachable, slow, refusing); absent when recall assembled it. */
  fallback?: string;
}

export interface RecallSessionOptions {
  /** The client that publishes and assembles; or give url and token (and nats) to make one. */
  client?: RecallClient;
  /** recall's API base URL (RECALL_API_URL), when no client is given. */
  url?: string;
  /** A bearer JWT that may act for userId (RECALL_TOKEN), when no client is given. */
  token?: string;
  /** Publish over this NATS connection (JetStream) instead of HTTP, when no client is given. */
  nats?: NatsConnection;
  /** The recall user whose conversation the session holds. Required. */
  userId: string;
  /** The conversation, also the session's id. Defaults to the wrapped session's id, else a new UUID. */
  conversationId?: string;
  /** A Session that keeps the items (a database-backed one, say). Defaults to memory. */
  session?: Session;
  /**
   * What the items getItems returns may take: a number of estimated tokens or recall's budget fields. Leave room for
   * the agent's instructions and tools, the new input and the run's own items. Defaults to recall's defaults.
   */
  budget?: number | Budget;
  /** How long getItems waits for recall before it cuts the history itself. Defaults to 2,000. */
  timeoutMs?: number;
  /** false leaves recall's evidence message out. Defaults to true. */
  evidence?: boolean;
  /** Where warnings go; they never carry message text. Defaults to console. */
  logger?: Logger;
  /** Called after each getItems with what it cost. */
  onPrompt?: (info: SessionPromptInfo) => void;
}

/** An OpenAI Agents SDK Session whose history recall keeps within a budget. */
export declare class RecallSession implements Session {
  constructor(options: RecallSessionOptions);
  readonly client: RecallClient;
  readonly userId: string;
  /** The session that keeps the items. */
  readonly store: Session;
  /** The session's id, its recall conversation id. */
  getSessionId(): Promise<string>;
  /** recall's evidence message first, then the newest whole turns that fit the budget; with a limit, the newest limit items as stored. */
  getItems(limit?: number): Promise<AgentInputItem[]>;
  /** Every stored item, as it was added. */
  allItems(): Promise<AgentInputItem[]>;
  /** Adds items and publishes the history to recall beside the run. */
  addItems(items: AgentInputItem[]): Promise<void>;
  popItem(): Promise<AgentInputItem | undefined>;
  /** Clears the history, then deletes the conversation in recall (the id stays deleted there); throws when recall could not (call it again). */
  clearSession(): Promise<void>;
  /** Resolves once every publish under way has ended (before exiting). */
  flush(): Promise<void>;
}

/**
 * A Session for run(agent, input, { session }) whose history recall keeps within a budget.
 *
 *   const session = recallSession({ url, token, userId, conversationId, budget: 8000 });
 *   await run(agent, input, { session });
 */
export declare function recallSession(options: RecallSessionOptions): RecallSession;

/** One item's place in the mapping (opaque). */
export interface ItemPlanEntry {
  item: AgentInputItem;
}

/** Maps session items to recall: the system text, the flat messages, and the plan itemsFromRecall maps an answer back with. */
export declare function itemsToRecall(items: AgentInputItem[]): { system: string | undefined; messages: Message[]; plan: ItemPlanEntry[] };

/** Maps recall's answer (flat messages, by id) back onto the session's items. */
export declare function itemsFromRecall(answer: Message[], plan: ItemPlanEntry[]): AgentInputItem[];
