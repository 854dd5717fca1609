// The AI SDK middleware against a running recall, with the AI SDK's own
// mock model: a 300-turn conversation whose first rule still reaches the
// model at turn 300 within the budget, a tool loop, streaming, and the
// middleware's own latency. recall dev prints what to export:
//
//   RECALL_API_URL=… NATS_URL=… RECALL_TOKEN=… RECALL_JWT_SECRET=… node --test test/live-ai-sdk.test.js

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { generateText, simulateReadableStream, stepCountIs, streamText, tool, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";

import { RecallClient } from "../src/index.js";
import { recallMiddleware } from "../src/ai-sdk.js";
import { RULE, conversation, latency } from "./conversation.js";

const env = process.env;
const missing = ["RECALL_API_URL", "RECALL_TOKEN"].filter((k) => !env[k]);
if (missing.length) throw new Error(`set ${missing.join(", ")}: run \`recall dev\` and paste its export lines`);

const SYSTEM = "You are the payments team's assistant.";
const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 2, text: 2, reasoning: 0 } };
const done = { finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
const key = () => ({ userId: `ai-${randomUUID().slice(0, 8)}`, conversationId: `conv-${randomUUID().slice(0, 8)}` });
const service = () => new RecallClient({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN });

// tokens estimates a prompt the way recall's docs say it is charged, from
// the AI SDK's messages themselves: ceil(UTF-8 bytes of the text and of the
// tool calls' JSON / 3) + 4 per message, 1,000 per image or file.
function tokens(prompt) {
  let n = 0;
  for (const m of prompt) {
    if (typeof m.content === "string") {
      n += Math.ceil(Buffer.byteLength(m.content) / 3) + 4;
      continue;
    }
    const texts = [], calls = [];
    let files = 0;
    for (const p of m.content) {
      if (p.type === "text") texts.push(p.text);
      else if (p.type === "tool-call") calls.push({ id: p.toolCallId, name: p.toolName, args: p.input });
      else if (p.type === "tool-result") texts.push(p.output.type === "json" ? JSON.stringify(p.output.value) : String(p.output.value));
      else if (p.type === "file") files++;
    }
    const b = Buffer.byteLength(texts.join("\n")) + (calls.length ? Buffer.byteLength(JSON.stringify(calls)) : 0);
    n += Math.ceil(b / 3) + 4 + files * 1000;
  }
  return n;
}

const textOf = (m) => (typeof m.content === "string" ? m.content : m.content.filter((p) => p.type === "text").map((p) => p.text).join("\n"));


// caughtUp waits until recall has read the conversation up to its newest
// request: the mock model answers at once, and a test of what reaches the
// model at the last turn must not race recall's worker, which a real model
// gives seconds per turn.
async function caughtUp(middleware, k, messages) {
  await middleware.flush();
  await service().waitFor(k.userId, k.conversationId, messages.findLastIndex((m) => m.role === "user"), { timeoutMs: 30_000 });
}

// recorder is a middleware that keeps the prompt each call had before
// recall's: put it first, and it sees what the SDK sent.
function recorder() {
  const prompts = [];
  return { prompts, middleware: { specificationVersion: "v3", transformParams: async ({ params }) => (prompts.push(params.prompt), params) } };
}

describe("recallMiddleware against recall", () => {
  test("300 turns: the first turn's rule reaches the model at turn 300, the prompt within its budget", async () => {
    const BUDGET = 3000;
    const k = key();
    const turns = conversation(300);
    const warnings = [], infos = [];
    const mock = new MockLanguageModelV3({
      doGenerate: async (opts) => ({ content: [{ type: "text", text: turns[mock.doGenerateCalls.length - 1].assistant }], ...done }),
    });
    const middleware = recallMiddleware({
      url: env.RECALL_API_URL,
      token: env.RECALL_TOKEN,
      budget: BUDGET,
      logger: { warn: (message) => warnings.push(message) },
      onPrompt: (info) => infos.push(info),
    });
    const { prompts: sent, middleware: before } = recorder();
    const model = wrapLanguageModel({ model: mock, middleware: [before, middleware] });
    const messages = [];
    for (const t of turns) {
      if (t === turns.at(-1)) await caughtUp(middleware, k, messages);
      messages.push({ role: "user", content: t.user });
      const result = await generateText({ model, system: SYSTEM, messages, providerOptions: { recall: k } });
      messages.push(...result.response.messages);
    }
    await middleware.flush();
    assert.deepEqual(warnings, []);
    const prompts = mock.doGenerateCalls.map((c) => c.prompt);
    assert.equal(prompts.length, 300);
    assert.deepEqual(prompts[0], sent[0], "a prompt that fits whole reaches the model as the SDK sent it");
    for (const [i, p] of prompts.entries()) {
      assert.ok(tokens(p) <= BUDGET, `turn ${i + 1}: the prompt is ${tokens(p)} estimated tokens, over ${BUDGET}`);
      assert.equal(textOf(p.at(-1)), turns[i].user, `turn ${i + 1} ends with its request`);
    }
    const last = prompts.at(-1);
    assert.ok(tokens(sent.at(-1)) > 10 * BUDGET, "the whole conversation is far over the budget");
    assert.equal(last[1].role, "assistant");
    assert.ok(textOf(last[1]).includes(RULE), "the first turn's rule is in the evidence the model receives at turn 300");
    assert.equal(infos.at(-1).evidence.included, true);
    assert.ok(infos.at(-1).droppedTurns > 250, `${infos.at(-1).droppedTurns} turns dropped`);

    // recall holds the whole conversation: every call's checkpoint was an
    // append it accepted.
    const ev = await service().waitFor(k.userId, k.conversationId, 598, { minMessages: 599, timeoutMs: 30_000 });
    assert.equal(ev.message_count, 599);

    console.log(`ai-sdk middleware: ${latency(infos)} (turn 300: ${tokens(last)} of ${BUDGET} tokens, ${last.length} messages of ${sent.at(-1).length}, ${infos.at(-1).droppedTurns} turns dropped)`);
  });

  test("a tool loop: each step's exchange reaches the model whole, in the SDK's own form; a large result is compacted", async () => {
    const k = key();
    const rows = Array.from({ length: 120 }, (_, i) => ({ id: `tx-${i}`, date: `2026-03-${String((i % 28) + 1).padStart(2, "0")}`, amount: -(i + 0.5), memo: `transaction ${i} of the month` }));
    const listTransactions = tool({
      description: "Lists a month's transactions.",
      inputSchema: z.object({ month: z.string() }),
      execute: async ({ month }) => ({ month, count: rows.length, transactions: rows }),
    });
    let step = 0;
    const mock = new MockLanguageModelV3({
      doGenerate: async () => {
        step++;
        if (step === 2) {
          return { content: [{ type: "tool-call", toolCallId: "call-1", toolName: "list_transactions", input: JSON.stringify({ month: "2026-03" }) }], ...done, finishReason: { unified: "tool-calls", raw: undefined } };
        }
        return { content: [{ type: "text", text: `answer ${step}` }], ...done };
      },
    });
    const warnings = [];
    const middleware = recallMiddleware({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN, budget: { prompt: 4000, tool_result_tokens: 800 }, logger: { warn: (m) => warnings.push(m) } });
    const { prompts: sent, middleware: before } = recorder();
    const model = wrapLanguageModel({ model: mock, middleware: [before, middleware] });
    const messages = [];
    for (const text of ["We must reconcile March before the audit.", "List March's transactions.", "Which was the largest?"]) {
      messages.push({ role: "user", content: text });
      const result = await generateText({ model, system: SYSTEM, messages, tools: { list_transactions: listTransactions }, stopWhen: stepCountIs(4), providerOptions: { recall: k } });
      messages.push(...result.response.messages);
    }
    await middleware.flush();
    assert.deepEqual(warnings, []);
    const prompts = mock.doGenerateCalls.map((c) => c.prompt);
    assert.equal(prompts.length, 4, "turn 2 took two steps");
    // Step 2 of turn 2: the tool call as the SDK sent it, the result compacted.
    const [call, result] = prompts[2].slice(-2);
    assert.equal(call, sent[2].at(-2), "the calling assistant message is the SDK's own object");
    assert.equal(result.role, "tool");
    const output = result.content[0].output;
    assert.equal(output.type, "json");
    assert.equal(output.value.count, 120, "totals and counts stay as the tool returned them");
    assert.ok(output.value.transactions.length < 120, "rows were sampled");
    assert.equal(output.value._compaction.collections[0].returned, 120);
    assert.ok(JSON.stringify(output).length < JSON.stringify(sent[2].at(-1).content[0].output).length / 3);
    // Turn 3: the older exchange is whole, its result compacted too.
    assert.deepEqual(prompts[3].map((m) => m.role), ["system", "user", "assistant", "user", "assistant", "tool", "assistant", "user"]);
    assert.equal(prompts[3][5].content[0].output.value._compaction.collections[0].omitted, output.value._compaction.collections[0].omitted);
    // recall holds what the last call sent: the exchange (the call, its
    // result, the answer) and the last request; that call's own answer
    // comes with the next call's checkpoint.
    const ev = await service().waitFor(k.userId, k.conversationId, 6, { minMessages: 7, timeoutMs: 30_000 });
    assert.equal(ev.message_count, 7);
  });

  test("everything fits: each step's prompt reaches the model exactly as the SDK sent it (text, images, files, tool calls)", async () => {
    const k = key();
    const mock = new MockLanguageModelV3({
      supportedUrls: { "application/pdf": [/^https:\/\/example\.com\//] }, // the SDK would download it otherwise
      doGenerate: async () =>
        mock.doGenerateCalls.length === 1
          ? { content: [{ type: "reasoning", text: "Look at the image." }, { type: "tool-call", toolCallId: "c-1", toolName: "ocr", input: "{}" }], ...done, finishReason: { unified: "tool-calls", raw: undefined } }
          : { content: [{ type: "text", text: "It says PAID." }], ...done },
    });
    const middleware = recallMiddleware({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN, budget: 16000 });
    const { prompts: sent, middleware: before } = recorder();
    const model = wrapLanguageModel({ model: mock, middleware: [before, middleware] });
    const image = new Uint8Array(Buffer.from("a tiny png, as far as this test is concerned"));
    await generateText({
      model,
      system: SYSTEM,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What does the stamp on this invoice say?" },
            { type: "image", image, mediaType: "image/png" },
            { type: "file", data: new URL("https://example.com/invoice.pdf"), mediaType: "application/pdf", filename: "invoice.pdf" },
          ],
        },
      ],
      tools: { ocr: tool({ description: "Reads the image.", inputSchema: z.object({}), execute: async () => ({ text: "PAID" }) }) },
      stopWhen: stepCountIs(3),
      providerOptions: { recall: k },
    });
    await middleware.flush();
    assert.equal(mock.doGenerateCalls.length, 2);
    mock.doGenerateCalls.forEach((c, i) => assert.deepEqual(c.prompt, sent[i]));
    assert.equal(mock.doGenerateCalls[1].prompt[1].content[1].data, image, "the image reaches the model as the same bytes");
  });

  test("streamText: the answer streams, over recall's prompt", async () => {
    const k = key();
    const turns = conversation(40);
    const mock = new MockLanguageModelV3({
      doStream: async () => ({
        stream: simulateReadableStream({
          chunks: [
            { type: "text-start", id: "t" },
            ...turns[mock.doStreamCalls.length - 1].assistant.split(" ").map((w, i) => ({ type: "text-delta", id: "t", delta: (i ? " " : "") + w })),
            { type: "text-end", id: "t" },
            { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
          ],
        }),
      }),
    });
    const infos = [];
    const middleware = recallMiddleware({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN, budget: 2500, onPrompt: (i) => infos.push(i) });
    const model = wrapLanguageModel({ model: mock, middleware });
    const messages = [];
    for (const t of turns) {
      if (t === turns.at(-1)) await caughtUp(middleware, k, messages);
      messages.push({ role: "user", content: t.user });
      const result = streamText({ model, system: SYSTEM, messages, providerOptions: { recall: k } });
      let text = "";
      for await (const delta of result.textStream) text += delta;
      assert.equal(text, t.assistant);
      messages.push(...(await result.response).messages);
    }
    await middleware.flush();
    const last = mock.doStreamCalls.at(-1).prompt;
    assert.ok(tokens(last) <= 2500, `${tokens(last)}`);
    assert.ok(infos.at(-1).droppedTurns > 10, `${infos.at(-1).droppedTurns} turns dropped`);
    assert.ok(textOf(last[1]).includes(RULE), "the rule is in the evidence of the streamed call");
  });
});
