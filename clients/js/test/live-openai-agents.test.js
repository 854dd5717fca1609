// The OpenAI Agents SDK session against a running recall, with a fake
// Model in place of OpenAI's: run() over 300 turns whose first rule still
// reaches the model at turn 300 within the budget, a tool loop, streaming,
// and the session's own latency. recall dev prints what to export:
//
//   RECALL_API_URL=… RECALL_TOKEN=… node --test test/live-openai-agents.test.js

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Agent, Usage, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";

import { RecallClient } from "../src/index.js";
import { itemsToRecall, recallSession } from "../src/openai-agents.js";
import { RULE, conversation, latency } from "./conversation.js";

const env = process.env;
const missing = ["RECALL_API_URL", "RECALL_TOKEN"].filter((k) => !env[k]);
if (missing.length) throw new Error(`set ${missing.join(", ")}: run \`recall dev\` and paste its export lines`);

setTracingDisabled(true);

const key = () => ({ userId: `agents-${randomUUID().slice(0, 8)}`, conversationId: `session-${randomUUID().slice(0, 8)}` });
const service = () => new RecallClient({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN });
const message = (text) => ({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] });

// tokens estimates items the way recall's docs say messages are charged,
// from the items themselves: ceil(UTF-8 bytes of the text and of the tool
// calls' JSON / 3) + 4 per item.
function tokens(items) {
  let n = 0;
  for (const it of items) {
    let text = "";
    if (typeof it.content === "string") text = it.content;
    else if (Array.isArray(it.content)) text = it.content.map((p) => p.text ?? "").join("\n");
    else if (it.type === "function_call") text = JSON.stringify([{ id: it.callId, name: it.name, args: JSON.parse(it.arguments) }]);
    else if (it.type === "function_call_result") text = typeof it.output === "string" ? it.output : (it.output.text ?? "");
    n += Math.ceil(Buffer.byteLength(text) / 3) + 4;
  }
  return n;
}

const textOf = (it) => (typeof it.content === "string" ? it.content : it.content.map((p) => p.text ?? "").join("\n"));

// caughtUp waits until recall has read the session up to its newest
// request: the fake model answers at once, and a test of what reaches the
// model at the last turn must not race recall's worker, which a real model
// gives seconds per turn.
async function caughtUp(session) {
  await session.flush();
  const items = await session.allItems();
  await service().waitFor(session.userId, await session.getSessionId(), items.findLastIndex((it) => it.role === "user"), { timeoutMs: 30_000 });
}

// scripted is a Model whose answers come from a script, one per request,
// and which records each request's input.
function scripted(answer) {
  const inputs = [];
  return {
    inputs,
    async getResponse(req) {
      inputs.push(req.input);
      return { usage: new Usage(), output: answer(inputs.length - 1, req) };
    },
    async *getStreamedResponse(req) {
      inputs.push(req.input);
      const output = answer(inputs.length - 1, req);
      yield { type: "response_started" };
      for (const word of output[0].content[0].text.split(" ")) yield { type: "output_text_delta", delta: `${word} ` };
      yield { type: "response_done", response: { id: `resp-${inputs.length}`, usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, output } };
    },
  };
}

describe("recallSession against recall", () => {
  test("300 turns: the first turn's rule reaches the model at turn 300, the history within its budget", async () => {
    const BUDGET = 3000;
    const k = key();
    const turns = conversation(300);
    const warnings = [], infos = [];
    const model = scripted((i) => [message(turns[i].assistant)]);
    const agent = new Agent({ name: "payments", instructions: "You are the payments team's assistant.", model });
    const session = recallSession({
      url: env.RECALL_API_URL,
      token: env.RECALL_TOKEN,
      ...k,
      budget: BUDGET,
      logger: { warn: (m) => warnings.push(m) },
      onPrompt: (info) => infos.push(info),
    });
    for (const t of turns) {
      if (t === turns.at(-1)) await caughtUp(session);
      const result = await run(agent, t.user, { session });
      assert.equal(result.finalOutput, t.assistant);
    }
    await session.flush();
    assert.deepEqual(warnings, []);
    assert.equal(model.inputs.length, 300);
    const stored = await session.allItems();
    assert.equal(stored.length, 600);
    for (const [i, input] of model.inputs.entries()) {
      const history = input.slice(0, -1);
      assert.ok(tokens(history) <= BUDGET, `turn ${i + 1}: the history is ${tokens(history)} estimated tokens, over ${BUDGET}`);
      assert.equal(input.at(-1).content, turns[i].user, `turn ${i + 1} ends with its request`);
    }
    assert.deepEqual(model.inputs[5].slice(0, -1), stored.slice(0, 10), "a history that fits reaches the model whole, as stored");
    const last = model.inputs.at(-1);
    assert.ok(tokens(stored) > 10 * BUDGET, "the whole conversation is far over the budget");
    assert.equal(last[0].role, "assistant");
    assert.ok(textOf(last[0]).includes(RULE), "the first turn's rule is in the evidence the model receives at turn 300");
    assert.equal(infos.at(-1).evidence.included, true);

    // recall holds the whole session.
    const ev = await service().waitFor(k.userId, k.conversationId, 598, { minMessages: 600, timeoutMs: 30_000 });
    assert.equal(ev.message_count, 600);
    console.log(`openai-agents session: ${latency(infos)} (turn 300: ${tokens(last.slice(0, -1))} of ${BUDGET} tokens, ${last.length - 1} items of ${stored.length - 2})`);
  });

  test("a tool loop: the call and its result come back as the SDK stored them; a large result is compacted", async () => {
    const k = key();
    const rows = Array.from({ length: 120 }, (_, i) => ({ id: `tx-${i}`, date: `2026-03-${String((i % 28) + 1).padStart(2, "0")}`, amount: -(i + 0.5), memo: `transaction ${i} of the month` }));
    const listTransactions = tool({
      name: "list_transactions",
      description: "Lists a month's transactions.",
      parameters: z.object({ month: z.string() }),
      execute: async ({ month }) => JSON.stringify({ month, count: rows.length, transactions: rows }),
    });
    const model = scripted((i, req) =>
      i === 1 ? [{ type: "function_call", callId: "call-1", name: "list_transactions", arguments: '{"month":"2026-03"}', status: "completed" }] : [message(`answer ${i}`)],
    );
    const agent = new Agent({ name: "books", instructions: "Keep the books.", model, tools: [listTransactions] });
    const warnings = [];
    const session = recallSession({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN, ...k, budget: { prompt: 4000, tool_result_tokens: 800 }, logger: { warn: (m) => warnings.push(m) } });
    for (const text of ["We must reconcile March before the audit.", "List March's transactions.", "Which was the largest?"]) {
      await run(agent, text, { session });
    }
    await session.flush();
    assert.deepEqual(warnings, []);
    assert.equal(model.inputs.length, 4, "turn 2 took two model calls");
    const stored = await session.allItems();
    const call = stored.find((it) => it.type === "function_call");
    const result = stored.find((it) => it.type === "function_call_result");
    // Turn 3's history: the exchange, the call as stored, the result compacted.
    const input = model.inputs[3];
    assert.deepEqual(input.find((it) => it.type === "function_call"), call);
    const compacted = input.find((it) => it.type === "function_call_result");
    assert.equal(compacted.callId, "call-1");
    const value = JSON.parse(compacted.output.text ?? compacted.output);
    assert.equal(value.count, 120, "counts stay as the tool returned them");
    assert.ok(value.transactions.length < 120, "rows were sampled");
    assert.equal(value._compaction.collections[0].returned, 120);
    assert.ok(JSON.stringify(compacted).length < JSON.stringify(result).length / 3);
    const ev = await service().waitFor(k.userId, k.conversationId, 6, { minMessages: itemsToRecall(stored).messages.length, timeoutMs: 30_000 });
    assert.equal(ev.message_count, itemsToRecall(stored).messages.length);
  });

  test("run() with stream: true streams, over recall's history", async () => {
    const k = key();
    const turns = conversation(40);
    const model = scripted((i) => [message(turns[i].assistant)]);
    const agent = new Agent({ name: "payments", instructions: "Be brief.", model });
    const infos = [];
    const session = recallSession({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN, ...k, budget: 2500, onPrompt: (i) => infos.push(i) });
    for (const t of turns) {
      if (t === turns.at(-1)) await caughtUp(session);
      const result = await run(agent, t.user, { session, stream: true });
      let text = "";
      for await (const delta of result.toTextStream()) text += delta;
      await result.completed;
      assert.equal(text.trim(), t.assistant);
    }
    await session.flush();
    const last = model.inputs.at(-1);
    assert.ok(tokens(last.slice(0, -1)) <= 2500);
    assert.ok(infos.at(-1).droppedTurns > 10, `${infos.at(-1).droppedTurns} turns dropped`);
    assert.ok(textOf(last[0]).includes(RULE), "the rule is in the evidence of the streamed run");
  });
});
