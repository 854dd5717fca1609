// A LangGraph.js agent with recall as its long-term memory.
//
// The graph is a usual tool-calling agent (a model node, a ToolNode and the
// MemorySaver checkpointer); the model is scripted so that the example runs
// without an API key. After each turn the backend reads the thread's
// checkpoint (graph.getState), publishes it to recall as a snapshot, and,
// before the next request, reads the evidence back and puts it into the
// prompt in place of the turns it covers. The evidence may lag a turn; turn 3
// shows the no-lag read (min_cursor and wait).
//
// It checks what recall returns and exits non-zero when the evidence is not
// what the contract says it must be. Configuration is what `recall dev`
// prints: RECALL_API_URL, NATS_URL, RECALL_TOKEN.

import { randomUUID } from "node:crypto";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import {
  AIMessage,
  HumanMessage,
  SystemMessage,
  mapChatMessagesToStoredMessages,
} from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { connect } from "@nats-io/transport-node";
import { z } from "zod";
import { RecallClient } from "@recallhq/recall-client";

// A chat model that answers from a script and remembers every prompt it was
// given, so that the example can check what reached the model.
class ScriptedChatModel extends BaseChatModel {
  constructor(script) {
    super({});
    this.script = [...script];
    this.prompts = [];
  }

  _llmType() {
    return "scripted";
  }

  bindTools() {
    return this;
  }

  async _generate(messages) {
    this.prompts.push(messages);
    const next = this.script.shift();
    if (!next) throw new Error("the scripted model has no more answers");
    const message = next();
    return { generations: [{ text: typeof message.content === "string" ? message.content : "", message }] };
  }
}

// The tool's output must never become evidence; this marks it.
const TOOL_MARK = "ledger-scan-7f3a";

const countInvoices = tool(
  async ({ month }) => [
    `${TOOL_MARK}: 48213 invoices issued in ${month}, 17 voided`,
    { rows: [{ month, issued: 48213, voided: 17, note: TOOL_MARK }] },
  ],
  {
    name: "count_invoices",
    description: "Counts a month's invoices in the ledger.",
    schema: z.object({ month: z.string().describe("YYYY-MM") }),
    responseFormat: "content_and_artifact",
  },
);

const TOOL_CALL_PROSE = "Let me look that up in the ledger.";

const turns = [
  {
    user: "We're building the invoicing service. Hard rule: we must never store card numbers in our own database.",
    answers: [() => new AIMessage("Understood. Card data stays with the payment provider. Which database should hold the ledger?")],
  },
  {
    user: "How many invoices did we issue in October? Check the ledger.",
    answers: [
      () =>
        new AIMessage({
          content: TOOL_CALL_PROSE,
          tool_calls: [{ id: "call_count_1", name: "count_invoices", args: { month: "2026-10" }, type: "tool_call" }],
        }),
      () => new AIMessage("October had 48,213 invoices, 17 of them voided."),
    ],
  },
  {
    user: "Agreed: we'll use Postgres for the invoice ledger.",
    answers: [() => new AIMessage("Next step: I still need to draft the ledger schema and the retention policy.")],
    noLag: true,
  },
  {
    user: "Draft the schema for the invoices table.",
    answers: [() => new AIMessage("Here is a first draft: invoices(id, customer_id, issued_at, total_cents, status).")],
  },
  {
    user: "Before you go on: what was my rule about card numbers?",
    answers: [() => new AIMessage("You ruled that card numbers never go into our database; the draft keeps only the provider's token.")],
  },
];

const model = new ScriptedChatModel(turns.flatMap((t) => t.answers));

// recall's evidence message as a LangChain message, or null. It is always
// role "assistant", never "system": untrusted history, not instructions.
function evidenceMessage(ev) {
  if (!ev?.message) return null;
  return new AIMessage({ content: ev.message.content });
}

// The model node: the system prompt, recall's evidence for the turns it
// covers, then the messages it does not cover yet (from its cursor on).
async function agent(state, config) {
  const ev = config.configurable?.recall_evidence;
  const memory = evidenceMessage(ev);
  const prompt = [
    new SystemMessage("You are the invoicing team's assistant."),
    ...(memory ? [memory] : []),
    ...state.messages.slice(ev?.cursor ?? 0),
  ];
  const response = await model.bindTools([countInvoices]).invoke(prompt);
  return { messages: [response] };
}

const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", agent)
  .addNode("tools", new ToolNode([countInvoices]))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", toolsCondition, ["tools", END])
  .addEdge("tools", "agent")
  .compile({ checkpointer: new MemorySaver() });

class CheckError extends Error {}

function check(ok, what) {
  if (!ok) throw new CheckError(what);
}

function newestUser(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].getType() === "human") return i;
  }
  return -1;
}

function entries(ev) {
  return Object.entries(ev.buckets).flatMap(([bucket, es]) => es.map((e) => ({ bucket, ...e })));
}

// An entry of bucket quoting message: the whole message (the seed profile)
// or one of its sentences (focus, the default), verbatim.
function findEntry(ev, bucket, message) {
  return ev.buckets[bucket].find((e) => e.message_id === message.id && e.excerpt !== "" && message.content.includes(e.excerpt));
}

async function main() {
  const { RECALL_API_URL, NATS_URL, RECALL_TOKEN } = process.env;
  if (!RECALL_API_URL || !NATS_URL || !RECALL_TOKEN) {
    throw new Error("set RECALL_API_URL, NATS_URL and RECALL_TOKEN (run `recall dev` and paste the export lines it prints)");
  }
  // Checkpoints go to JetStream; reads go to the API. Without a NATS
  // connection the client publishes over HTTP (POST /v1/checkpoints).
  const nc = await connect({ servers: NATS_URL, name: "recall langgraph-js example" });
  try {
    await run(new RecallClient({ url: RECALL_API_URL, token: RECALL_TOKEN, nats: nc }));
  } finally {
    await nc.drain();
  }
}

async function run(recall) {
  const userId = process.env.RECALL_USER_ID || "langgraph-demo";
  const threadId = `langgraph-${randomUUID()}`;
  const thread = { configurable: { thread_id: threadId } };
  console.log(`user ${userId}, thread ${threadId}`);

  let ev = await recall.evidence(userId, threadId);
  check(ev.version === 0 && ev.cursor === 0 && ev.message === null, "a new conversation has no evidence");
  let published = null;

  for (const [t, turn] of turns.entries()) {
    // The evidence for this request: usually whatever recall has now (it may
    // lag); on the noLag turn, wait until it covers the last checkpoint.
    if (published) {
      ev = turn.noLag
        ? await recall.evidence(userId, threadId, { minCursor: published.newestUser, wait: "5s" })
        : await recall.evidence(userId, threadId);
    }
    const promptsBefore = model.prompts.length;
    await graph.invoke(
      { messages: [new HumanMessage(turn.user)] },
      { configurable: { thread_id: threadId, recall_evidence: ev } },
    );
    const prompts = model.prompts.slice(promptsBefore);

    // The checkpoint, published as a snapshot: LangChain's stored form on
    // odd turns, its constructor form (JSON.stringify) on even ones.
    const snapshot = await graph.getState(thread);
    const messages = snapshot.values.messages;
    const form = t % 2 === 0 ? "stored" : "constructor";
    const wire = form === "stored" ? mapChatMessagesToStoredMessages(messages) : messages;
    const eventId = `${threadId}/${snapshot.config.configurable.checkpoint_id}`;
    const ack = await recall.publish(userId, threadId, wire, { eventId });
    console.log(
      `turn ${t + 1}: evidence read ${turn.noLag ? "with min_cursor" : "as is"} (cursor ${ev.cursor}, version ${ev.version}, lagging ${ev.lagging}); ` +
        `published ${messages.length} messages in the ${form} form (seq ${ack.stream_seq})`,
    );
    const previous = published;
    published = { messages, newestUser: newestUser(messages), eventId, wire };

    if (turn.noLag) {
      // The no-lag read covers everything before the previous checkpoint's
      // newest user message: turn 1's constraint is in, and it reached the
      // model, above the turns it does not cover.
      const rule = previous.messages[0];
      check(!ev.lagging && ev.cursor === previous.newestUser, `min_cursor read: cursor ${ev.cursor}, want ${previous.newestUser}, not lagging`);
      check(findEntry(ev, "constraints", rule), "turn 1's constraint is in constraints after the next turn");
      const memory = prompts[0].find((m) => m.getType() === "ai" && m.content === ev.message.content);
      check(memory, "the evidence message is in the model's prompt");
      check(memory.content.includes("must never store card numbers"), "the prompt's evidence holds the constraint");
      check(prompts[0].at(-1).content === turn.user, "the prompt ends with the request");
      check(prompts[0].length === 2 + (messages.length - 1) - ev.cursor, "the prompt holds the messages from the evidence cursor on, verbatim");
    }
  }

  // The last checkpoint, read without lag: check every bucket.
  const { messages, newestUser: last } = published;
  ev = await recall.evidence(userId, threadId, { minCursor: last, wait: "5s" });
  check(!ev.lagging && ev.cursor === last, `final read: cursor ${ev.cursor}, want ${last}, not lagging`);
  check(ev.message_count === messages.length, `message_count ${ev.message_count}, want ${messages.length}`);
  const [rule, , , toolCall, toolResult, , decision, nextStep] = messages;
  check(toolCall.tool_calls?.length === 1 && toolResult.getType() === "tool", "turn 2 holds a tool call and the ToolNode's result");
  check(findEntry(ev, "constraints", rule), "the constraint is in constraints");
  check(findEntry(ev, "decisions", decision), "the decision is in decisions");
  check(findEntry(ev, "open_work", nextStep), "the assistant's next step is in open_work");
  const raw = JSON.stringify(ev);
  check(!raw.includes(TOOL_MARK), "no tool output (content or artifact) in the evidence");
  check(!raw.includes(TOOL_CALL_PROSE), "no prose of an assistant message with tool calls in the evidence");
  check(entries(ev).every((e) => e.role === "user" || e.role === "assistant"), "entries are user or assistant");
  check(entries(ev).every((e) => e.index < last), "the current request is never summarised");
  check(ev.message?.role === "assistant", "the evidence message is an assistant message");
  const content = JSON.parse(ev.message.content);
  check(content.buckets && "omitted_entries" in content, "the evidence message is a JSON object with the buckets");

  // At least once: republishing the same checkpoint is a duplicate for
  // JetStream and changes nothing.
  const again = await recall.publish(userId, threadId, published.wire, { eventId: published.eventId });
  check(again.duplicate, "a republished checkpoint is a JetStream duplicate");
  const after = await recall.evidence(userId, threadId);
  check(after.version === ev.version && after.cursor === ev.cursor, "a duplicate changes nothing");

  console.log(`\nevidence after ${turns.length} turns (cursor ${ev.cursor}, version ${ev.version}, ${ev.estimated_tokens} estimated tokens):`);
  for (const e of entries(ev)) {
    console.log(`  ${e.bucket.padEnd(15)} ${e.role.padEnd(9)} #${e.index} ${e.excerpt}`);
  }
  console.log("\nok: the evidence is what recall's contract says it must be");
}

main().catch((err) => {
  console.error(err instanceof CheckError ? `FAIL: ${err.message}` : `error: ${err.message}`);
  if (process.env.DEBUG && !(err instanceof CheckError)) console.error(err);
  process.exitCode = 1;
});
