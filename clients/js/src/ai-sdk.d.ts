import type { LanguageModelMiddleware } from "ai";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Budget, Message, RecallClient } from "./index.js";

type TransformParams = NonNullable<LanguageModelMiddleware["transformParams"]>;
/** The AI SDK's call options of a language model (LanguageModelV3CallOptions). */
export type CallOptions = Parameters<TransformParams>[0]["params"];
/** The AI SDK's language-model prompt (LanguageModelV3Prompt). */
export type Prompt = CallOptions["prompt"];

/** What one assembly cost; never message text. */
export interface PromptInfo {
  userId?: string;
  conversationId?: string;
  /** The middleware's own time for the call, in milliseconds. */
  ms: number;
  /** The flat messages the call's prompt maps to, and how many of them the prompt kept. */
  messages: number;
  kept: number;
  estimatedTokens: { total: number; system?: number; tools?: number; evidence?: number; history?: number; current?: number };
  limit: number;
  droppedTurns: number;
  /** How long recall took to answer POST …/context, in milliseconds (part of ms). Absent on a fallback. */
  recallMs?: number;
  /** recall's evidence: whether it is in the prompt, its version and cursor. Absent on a fallback. */
  evidence?: { included: boolean; version: number; cursor: number; lagging?: boolean };
  /** Why the middleware cut the history itself (recall unreachable, slow, refusing); absent when recall assembled the prompt. */
  fallback?: string;
}

/** Where warnings go. */
export interface Logger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface RecallMiddlewareOptions {
  /** The client that publishes and assembles; or give url and token (and nats) to make one. */
  client?: RecallClient;
  /** recall's API base URL (RECALL_API_URL), when no client is given. */
  url?: string;
  /** A bearer JWT that may act for the calls' users (RECALL_TOKEN), when no client is given. */
  token?: string;
  /** Publish over this NATS connection (JetStream) instead of HTTP, when no client is given. */
  nats?: NatsConnection;
  /** The recall user of a call: a string, or a function of the call's params. Defaults to providerOptions.recall.userId. */
  userId?: string | ((params: CallOptions) => string | undefined);
  /** The recall conversation of a call: a string, or a function of the call's params. Defaults to providerOptions.recall.conversationId. */
  conversationId?: string | ((params: CallOptions) => string | undefined);
  /** The prompt's budget: a number of estimated tokens (the prompt's limit), or recall's budget fields. Defaults to recall's defaults. */
  budget?: number | Budget;
  /** How long a call waits for recall before it goes on with its own cut of the history. Defaults to 2,000. */
  timeoutMs?: number;
  /** false leaves recall's evidence message out. Defaults to true. */
  evidence?: boolean;
  /** false publishes nothing (another part of the agent publishes). Defaults to true. */
  publish?: boolean;
  /** Where warnings go; they never carry message text. Defaults to console. */
  logger?: Logger;
  /** Called after each assembly (or fallback) with what it cost. */
  onPrompt?: (info: PromptInfo) => void;
}

/** The middleware: pass it to wrapLanguageModel. */
export type RecallMiddleware = LanguageModelMiddleware & {
  /** The client that publishes and assembles. */
  readonly client: RecallClient;
  /** Resolves once every publish under way has ended (before exiting). */
  flush(): Promise<void>;
};

/**
 * A language-model middleware that publishes each call's messages to recall
 * and replaces the prompt with the one recall assembles within the budget.
 *
 *   const model = wrapLanguageModel({ model, middleware: recallMiddleware({ url, token, budget: 16000 }) });
 *   await generateText({ model, messages, providerOptions: { recall: { userId, conversationId } } });
 */
export declare function recallMiddleware(options?: RecallMiddlewareOptions): RecallMiddleware;

/** One prompt message's place in the mapping (opaque). */
export interface PlanEntry {
  message: Prompt[number];
}

/** Maps an AI SDK prompt to recall: the system text, the flat messages, and the plan fromRecall maps an answer back with. */
export declare function toRecall(prompt: Prompt): { system: string | undefined; messages: Message[]; plan: PlanEntry[] };

/** Maps recall's answer (flat messages, by id) back onto the prompt's messages. */
export declare function fromRecall(answer: Message[], plan: PlanEntry[]): Prompt;
