// A LangGraph.js graph with withRecall through a recall outage, driven by
// e2e.TestClients: it runs turns, and between phases waits for a line on
// stdin while the test stops or restarts recall.
//
//   phase 1: two turns; their evidence appears in recall.  prints "stop recall"
//   phase 2: two turns while recall is down: each step succeeds, the
//            publishes fail and are reported.                prints "start recall"
//   phase 3: one turn with recall back: its put publishes what recall missed,
//            and the evidence covers every turn.              prints "ok: …"
//
// Environment: RECALL_API_URL, RECALL_TOKEN (a token that acts for any user).

import { randomUUID } from "node:crypto";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { AIMessage, HumanMessage } from "@langchain/core/messages";

import { RecallClient, newestUserIndex } from "../src/index.js";
import { withRecall } from "../src/langgraph.js";
import { check, done, waitFor } from "./driver.js";

const { RECALL_API_URL, RECALL_TOKEN } = process.env;
if (!RECALL_API_URL || !RECALL_TOKEN) throw new Error("set RECALL_API_URL and RECALL_TOKEN");

const user = `outage-${randomUUID().slice(0, 8)}`;
const thread = `thread-${randomUUID().slice(0, 8)}`;
const config = { configurable: { thread_id: thread, user_id: user } };
const client = new RecallClient({ url: RECALL_API_URL, token: RECALL_TOKEN, timeoutMs: 5_000 });
const errors = [];
const saver = withRecall(new MemorySaver(), { client, onError: (err) => errors.push(err) });
const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", async (state) => ({ messages: [new AIMessage(`Noted (${state.messages.length} messages so far).`)] }))
  .addEdge(START, "agent")
  .addEdge("agent", END)
  .compile({ checkpointer: saver });

async function turn(text) {
  await graph.invoke({ messages: [new HumanMessage(text)] }, config);
  await saver.flush();
  return (await graph.getState(config)).values.messages;
}

// Phase 1.
await turn("We must never email the draft to the client.");
let history = await turn("Agreed: we'll use Postgres for the ledger.");
let ev = await client.waitFor(user, thread, newestUserIndex(history), { minMessages: history.length, timeoutMs: 30_000 });
check(ev.message_count === history.length, `phase 1: message_count ${ev.message_count}, want ${history.length}`);
console.log(`phase 1: ${history.length} messages, cursor ${ev.cursor}`);
console.log("stop recall");

// Phase 2: recall is down.
await waitFor("stopped");
const before = errors.length;
await turn("The deadline moved: we must ship by the 14th.");
history = await turn("Also, the invoices table needs a currency column.");
check(errors.length > before, "phase 2: the failed publishes were reported");
check(history.length === 8, `phase 2: the graph went on (${history.length} messages, want 8)`);
console.log(`phase 2: ${history.length} messages, ${errors.length - before} publishes reported failed (${errors.at(-1).message})`);
console.log("start recall");

// Phase 3: recall is back.
await waitFor("started");
history = await turn("Draft the schema now.");
ev = await client.waitFor(user, thread, newestUserIndex(history), { minMessages: history.length, timeoutMs: 60_000 });
check(ev.message_count === history.length, `phase 3: message_count ${ev.message_count}, want ${history.length}`);
check(ev.cursor === newestUserIndex(history), `phase 3: cursor ${ev.cursor}, want ${newestUserIndex(history)}`);
const kept = Object.values(ev.buckets).flat().map((e) => e.excerpt).join("\n");
check(kept.includes("we must ship by the 14th"), "phase 3: a turn made while recall was down is in the evidence");
console.log(`ok: the evidence caught up: ${ev.message_count} messages, cursor ${ev.cursor}, version ${ev.version}`);
done();
