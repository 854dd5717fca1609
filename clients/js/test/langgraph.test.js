// withRecall in a LangGraph.js graph against a running recall: several
// turns, then the evidence recall extracted from what the saver published.
// recall dev prints what to export:
//
//   RECALL_API_URL=… NATS_URL=… RECALL_TOKEN=… RECALL_JWT_SECRET=… node --test test/langgraph.test.js

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { connect } from "@nats-io/transport-node";

import { RecallClient, newestUserIndex, signToken } from "../src/index.js";
import { withRecall } from "../src/langgraph.js";

const env = process.env;
const missing = ["RECALL_API_URL", "RECALL_TOKEN", "NATS_URL", "RECALL_JWT_SECRET"].filter((k) => !env[k]);
if (missing.length) {
  throw new Error(`set ${missing.join(", ")}: run \`recall dev\` and paste its export lines (the JWT secret is in .recall-dev/jwt-secret)`);
}

const turns = [
  ["We must never store card numbers in our own database.", "Understood: card data stays with the payment provider."],
  ["Agreed: we'll use Postgres for the invoice ledger.", "Noted. I still need to draft the ledger schema."],
  ["Draft the schema for the invoices table.", "invoices(id, customer_id, issued_at, total_cents, status)."],
  ["What was my rule about card numbers?", "Card numbers never go into our database."],
];

// scriptedGraph answers each turn from the script, as a model would.
function scriptedGraph(checkpointer) {
  const answers = new Map(turns);
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [new AIMessage(answers.get(state.messages.at(-1).content))] }))
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer });
}

const excerpts = (ev) => Object.values(ev.buckets).flat().map((e) => e.excerpt);

async function runTurns(publishing) {
  const user = `saver-${randomUUID().slice(0, 8)}`;
  const thread = `thread-${randomUUID().slice(0, 8)}`;
  const token = signToken(env.RECALL_JWT_SECRET, user, { ttlSeconds: 600 });
  const errors = [];
  const saver = withRecall(new MemorySaver(), { client: new RecallClient({ url: env.RECALL_API_URL, token, ...publishing }), onError: (err) => errors.push(err) });
  const graph = scriptedGraph(saver);
  const config = { configurable: { thread_id: thread, user_id: user } };
  for (const [text] of turns) await graph.invoke({ messages: [new HumanMessage(text)] }, config);
  await saver.flush();
  assert.deepEqual(errors, []);
  const history = (await graph.getState(config)).values.messages;
  const reader = new RecallClient({ url: env.RECALL_API_URL, token });
  const ev = await reader.waitFor(user, thread, newestUserIndex(history), { minMessages: history.length, timeoutMs: 30_000 });
  return { user, thread, history, ev, reader, saver };
}

describe("withRecall in a LangGraph.js graph", () => {
  test("over HTTP: the turns' evidence appears in recall", async () => {
    const { history, ev, reader, saver, user, thread } = await runTurns({});
    assert.equal(ev.message_count, history.length);
    assert.equal(ev.cursor, history.length - 2);
    assert.equal(ev.lagging, false);
    const kept = excerpts(ev).join("\n");
    assert.match(kept, /must never store card numbers/);
    assert.match(kept, /we'll use Postgres/);
    assert.equal(ev.message.role, "assistant");
    // The conversation is listed under the thread id.
    const { conversations } = await reader.conversations(user);
    assert.deepEqual(conversations.map((c) => c.conversation_id), [thread]);

    // deleteThread deletes it in recall too.
    await saver.deleteThread(thread);
    const after = await reader.evidence(user, thread);
    assert.deepEqual([after.version, after.cursor, after.message], [0, 0, null]);
  });

  test("over NATS (nats.js v3): the same evidence", async () => {
    const nc = await connect({ servers: env.NATS_URL, name: "recall saver tests" });
    try {
      const { history, ev } = await runTurns({ nats: nc });
      assert.equal(ev.message_count, history.length);
      assert.match(excerpts(ev).join("\n"), /must never store card numbers/);
    } finally {
      await nc.drain();
    }
  });
});
