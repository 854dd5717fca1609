// Types of @recallhq/recall-client.

import type { NatsConnection } from "@nats-io/transport-node";

export declare const SCHEMA: "recall.checkpoint.v1";
export declare const DEFAULT_SUBJECT: string;
export declare const SERVICE_SCOPE: "recall:service";
/** SHA-256 of "recall.v1": the chain digest of no messages. */
export declare const CHAIN_START: Buffer;

/** A message in any of the three forms (flat, LangChain stored, LangChain constructor), or a LangChain message object. */
export type Message = Record<string, unknown> | { toJSON(): unknown };

export interface NormalizedMessage {
  role: "user" | "assistant" | "system" | "tool";
  id: string;
  type: string;
  content: unknown[];
  tool_calls: { id: string; name: string; args: unknown }[];
  tool_call_id: string;
  artifact: unknown;
}

export interface CheckpointEvent {
  schema: "recall.checkpoint.v1";
  kind: "snapshot" | "delete";
  event_id: string;
  user_id: string;
  conversation_id: string;
  offset?: number;
  prefix_digest?: string | null;
  messages?: unknown[];
}

export interface Entry {
  role: "user" | "assistant";
  message_id: string;
  index: number;
  excerpt: string;
  truncated: boolean;
  /** focus profile: [start, end) byte offsets of the excerpt in its message's text. */
  span?: [number, number];
  /** focus profile, shown to a question that asks when: the date the history last named at or before the entry. */
  date?: string;
  /** A note the model lane wrote from the message at index, not a quote. */
  model_note?: true;
  /** focus profile: the index of a later entry, shown beside this one, that may correct it. */
  maybe_changed_by?: number;
  /** A clause cut out of a longer sentence, which goes on before it, after it, or both. */
  cut?: "before" | "after" | "both";
}

export interface Buckets {
  constraints: Entry[];
  decisions: Entry[];
  open_work: Entry[];
  recent_context: Entry[];
}

export interface EvidenceMessage {
  role: "assistant";
  content: string;
}

export interface Evidence {
  user_id: string;
  conversation_id: string;
  version: number;
  cursor: number;
  message_count: number;
  prefix_digest: string;
  omitted_entries: number;
  estimated_tokens: number;
  buckets: Buckets;
  message: EvidenceMessage | null;
  updated_at: string | null;
  lagging: boolean;
}

export interface ConversationSummary {
  conversation_id: string;
  version: number;
  cursor: number;
  message_count: number;
  updated_at: string;
}

export interface ConversationPage {
  conversations: ConversationSummary[];
  /** The after of the next page; null on the last one. */
  next: string | null;
}

/** One line of a user's export. */
export type ExportLine =
  | {
      type: "conversation";
      conversation_id: string;
      version: number;
      cursor: number;
      message_count: number;
      prefix_digest: string;
      omitted_entries: number;
      buckets: Buckets;
      updated_at: string | null;
    }
  | ({ type: "entry"; conversation_id: string; bucket: keyof Buckets; span: [number, number] } & Omit<Entry, "span">)
  | { type: "rejection"; event_id: string; conversation_id: string; reason: string; received_at: string }
  | { type: "end"; conversations: number; entries: number; rejections: number };

export interface IngestResult {
  stream_seq: number;
  duplicate: boolean;
}

export interface PublishResult extends IngestResult {
  event_id: string;
  /** 0 for a snapshot, k > 0 for an append. */
  offset: number;
  /** How many messages the event carried. */
  sent: number;
}

/** A prompt budget in estimated tokens (docs/context.md); an absent field takes recall's default. */
export interface Budget {
  /** Defaults to 32,768. */
  context_window?: number;
  /** Defaults to 16,000. */
  prompt?: number;
  /** Defaults to 4,096. */
  response_reserve?: number;
  /** Defaults to 2,048. */
  safety_reserve?: number;
  /** The most a tool result may take before it is compacted. Defaults to 2,000. */
  tool_result_tokens?: number;
  /** What each image (or other non-text) part is charged. Defaults to 1,000. */
  image_tokens?: number;
}

export interface ContextResult {
  messages: { role: string; content: unknown; [k: string]: unknown }[];
  estimated_tokens: { system: number; tools: number; evidence: number; history: number; current: number; total: number };
  limit: number;
  dropped_turns: number;
  compacted_tool_results: number;
  evidence: { included: boolean; version: number; cursor: number; lagging?: boolean };
}

export declare class MessageError extends Error {
  index: number | undefined;
  field: string;
  problem: string;
}

export declare class RecallError extends Error {
  status: number;
  code: string;
  detail: string;
}

/** RFC 8785 canonical JSON. */
export declare function canonicalJSON(value: unknown): string;
export declare function normalizeMessage(message: Message, index?: number): NormalizedMessage;
export declare function messageDigest(message: Message, index?: number): Buffer;
export declare function chain(messages: Message[]): Buffer[];
export declare function prefixDigest(messages: Message[]): string;
export declare function newestUserIndex(messages: Message[]): number;
export declare function snapshotEvent(userId: string, conversationId: string, history: Message[], opts?: { eventId?: string }): CheckpointEvent;
export declare function appendEvent(userId: string, conversationId: string, history: Message[], offset: number, opts?: { eventId?: string; prefix?: string }): CheckpointEvent;
export declare function deleteEvent(userId: string, conversationId: string, opts?: { eventId?: string }): CheckpointEvent;
export declare function signToken(secret: string | Buffer, sub: string, opts?: { ttlSeconds?: number; service?: boolean }): string;
export declare function buildPrompt<T>(system: T | null | undefined, evidence: Evidence | null | undefined, history: T[]): (T | EvidenceMessage)[];

export interface RecallClientOptions {
  /** recall's API base URL (RECALL_API_URL). */
  url: string;
  /** A bearer JWT (RECALL_TOKEN). */
  token: string;
  /** Publish over this NATS connection (JetStream) instead of HTTP. */
  nats?: NatsConnection;
  /** The checkpoint subject, for NATS. Defaults to recall.checkpoints. */
  subject?: string;
  /** "snapshot" (default) or "append". */
  mode?: "snapshot" | "append";
  timeoutMs?: number;
  maxConversations?: number;
  /**
   * A W3C traceparent sent with every request and NATS publish (a call's
   * own traceparent option wins), or a function called for each, such as
   * one that reads the active OpenTelemetry context; recall's spans join
   * that trace.
   */
  traceparent?: string | (() => string | undefined);
}

/** A W3C traceparent to send with one call ("00-<32 hex>-<16 hex>-<2 hex>"). */
export interface TraceOption {
  traceparent?: string;
}

export declare class RecallClient {
  constructor(opts: RecallClientOptions);
  publishEvent(event: CheckpointEvent, opts?: TraceOption): Promise<IngestResult>;
  publish(userId: string, conversationId: string, history: Message[], opts?: { eventId?: string } & TraceOption): Promise<PublishResult>;
  publishDelete(userId: string, conversationId: string, opts?: { eventId?: string } & TraceOption): Promise<IngestResult>;
  forget(userId: string, conversationId: string): void;
  evidence(userId: string, conversationId: string, opts?: { minCursor?: number; wait?: number | string; maxTokens?: number } & TraceOption): Promise<Evidence>;
  waitFor(userId: string, conversationId: string, minCursor: number, opts?: { timeoutMs?: number; minMessages?: number; maxTokens?: number } & TraceOption): Promise<Evidence>;
  search(userId: string, conversationId: string, query: string, opts?: { maxTokens?: number } & TraceOption): Promise<Evidence>;
  context(
    userId: string,
    conversationId: string,
    messages: Message[],
    opts?: {
      system?: string;
      tools?: object[];
      budget?: Budget;
      evidence?: boolean;
      minCursor?: number;
      wait?: number | string;
      /** Bounds this request. Defaults to the client's timeout. */
      timeoutMs?: number;
      signal?: AbortSignal;
    } & TraceOption,
  ): Promise<ContextResult>;
  delete(userId: string, conversationId: string): Promise<void>;
  conversations(userId: string, opts?: { limit?: number; after?: string | null }): Promise<ConversationPage>;
  allConversations(userId: string, opts?: { limit?: number }): AsyncGenerator<ConversationSummary>;
  export(userId: string, opts?: { timeoutMs?: number | null }): AsyncGenerator<ExportLine>;
  deleteUser(userId: string): Promise<void>;
}
