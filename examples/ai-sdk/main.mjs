// An AI SDK agent with recall keeping its prompt within a budget.
//
// The one line is the middleware: wrapLanguageModel({ model, middleware:
// recallMiddleware({ … }) }). Each call names its user and conversation in
// providerOptions.recall; the middleware publishes the call's messages to
// recall and sends the model the prompt recall assembles: recall's evidence
// of the turns that no longer fit, the newest turns that do, large tool
// results compacted, the current request whole.
//
// Without OPENAI_API_KEY the model is the AI SDK's own mock model, which
// answers from a script; with it, OpenAI's (OPENAI_MODEL, gpt-4.1-mini by
// default). Either way the example checks, from a middleware placed inside
// recall's, the prompt the model receives: within the budget, ending with
// the request, and at the last turn holding the first turn's rule; it exits
// non-zero when that is not so. Configuration is what `recall dev` prints:
// RECALL_API_URL and RECALL_TOKEN.

import { randomUUID } from "node:crypto";
import { generateText, stepCountIs, streamText, tool, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { openai } from "@ai-sdk/openai";
import { z } from "zod";
import { recallMiddleware } from "@recallhq/recall-client/ai-sdk";

const BUDGET = 2500;
const RULE = "never store card numbers in our own database";
const SYSTEM = "You are the invoicing team's assistant. Answer in two sentences at most.";

// The conversation: a rule, then long notes the team pastes, then a
// request the rule decides.
const notes = (week) =>
  `Notes of week ${week}: ${["the billing run", "the dunning emails", "the tax export", "the refund queue"][week % 4]} took ` +
  `${20 + week} minutes; ${3 + (week % 5)} invoices bounced, customers ${100 + week} and ${200 + week} complained about the PDF layout, ` +
  `and finance asked for the ledger export to include the cost centre. ${"The rest of the meeting went over the backlog item by item, with no change of plan. ".repeat(6)}`;
const requests = [
  `Hard rule for this project: we ${RULE}; the payment provider keeps them.`,
  ...Array.from({ length: 12 }, (_, i) => `${notes(i + 1)} What should we fix first?`),
  "How many invoices are overdue right now? Check the ledger.",
  "Write the migration for the payments table: which columns do we keep for each card?",
];

const overdueInvoices = tool({
  description: "Counts the overdue invoices in the ledger.",
  inputSchema: z.object({}),
  execute: async () => ({ overdue: 17, oldest_days: 41 }),
});

// The model: OpenAI's with a key, else the AI SDK's mock model with a script.
function model() {
  if (process.env.OPENAI_API_KEY) return openai(process.env.OPENAI_MODEL || "gpt-4.1-mini");
  const usage = { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: 0 } };
  const answer = (content, finish = "stop") => ({ content, finishReason: { unified: finish, raw: undefined }, usage, warnings: [] });
  const mock = new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last.role === "user" && last.content[0].text.startsWith("How many invoices")) {
        return answer([{ type: "tool-call", toolCallId: "call-1", toolName: "overdue_invoices", input: "{}" }], "tool-calls");
      }
      if (last.role === "tool") return answer([{ type: "text", text: "17 invoices are overdue; the oldest by 41 days." }]);
      return answer([{ type: "text", text: "Noted. Start with the bounced invoices, then the PDF layout." }]);
    },
    doStream: async () => ({
      stream: new ReadableStream({
        start(c) {
          for (const chunk of [
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: "Only the provider's token, its last four digits and the expiry: " },
            { type: "text-delta", id: "t", delta: "card numbers stay with the provider." },
            { type: "text-end", id: "t" },
            { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
          ]) c.enqueue(chunk);
          c.close();
        },
      }),
    }),
  });
  return mock;
}

class CheckError extends Error {}

function check(ok, what) {
  if (!ok) throw new CheckError(what);
}

// A middleware inside recall's that keeps every prompt the model receives.
const received = [];
const seen = { specificationVersion: "v3", transformParams: async ({ params }) => (received.push(params.prompt), params) };

const textOf = (m) => (typeof m.content === "string" ? m.content : m.content.filter((p) => p.type === "text").map((p) => p.text).join("\n"));

async function main() {
  const { RECALL_API_URL, RECALL_TOKEN } = process.env;
  if (!RECALL_API_URL || !RECALL_TOKEN) {
    throw new Error("set RECALL_API_URL and RECALL_TOKEN (run `recall dev` and paste the export lines it prints)");
  }
  const warnings = [], prompts = [];
  const recall = recallMiddleware({
    url: RECALL_API_URL,
    token: RECALL_TOKEN,
    budget: BUDGET,
    logger: { warn: (message) => warnings.push(message) },
    onPrompt: (info) => prompts.push(info),
  });
  // The one line: the model, wrapped.
  const agent = wrapLanguageModel({ model: model(), middleware: [recall, seen] });

  const key = { userId: process.env.RECALL_USER_ID || "ai-sdk-demo", conversationId: `ai-sdk-${randomUUID()}` };
  console.log(`user ${key.userId}, conversation ${key.conversationId}, ${process.env.OPENAI_API_KEY ? "OpenAI's model" : "the mock model"}`);
  const messages = [];
  for (const [i, request] of requests.entries()) {
    if (i === requests.length - 1 && !process.env.OPENAI_API_KEY) {
      // A real model takes a while to answer; the mock answers at once, and
      // recall may not have read the turns before the last one yet: wait
      // until it has (a real agent never needs to).
      await recall.flush();
      await recall.client.waitFor(key.userId, key.conversationId, messages.findLastIndex((m) => m.role === "user"));
    }
    const first = received.length;
    messages.push({ role: "user", content: request });
    const call = { model: agent, system: SYSTEM, messages, tools: { overdue_invoices: overdueInvoices }, stopWhen: stepCountIs(3), providerOptions: { recall: key } };
    let text;
    if (i === requests.length - 1) {
      // The last turn streams.
      const result = streamText(call);
      text = "";
      for await (const delta of result.textStream) text += delta;
      messages.push(...(await result.response).messages);
    } else {
      const result = await generateText(call);
      text = result.text;
      messages.push(...result.response.messages);
    }
    const info = prompts.at(-1);
    console.log(
      `turn ${String(i + 1).padStart(2)}: ${info.estimatedTokens.total} of ${info.limit} tokens, ${info.kept} of ${info.messages} messages, ` +
        `${info.droppedTurns} turns dropped, evidence ${info.evidence?.included ? "in" : "out"}: ${text.slice(0, 60)}`,
    );
    for (const p of received.slice(first)) {
      check(p.at(-1).role === "tool" || textOf(p.at(-1)) === request, `turn ${i + 1}: the prompt ends with the request (or its tool results)`);
    }
  }
  await recall.flush();

  check(warnings.length === 0, `no warnings: ${warnings.join("; ")}`);
  check(prompts.every((p) => p.estimatedTokens.total <= BUDGET && !p.fallback), `every prompt within ${BUDGET} tokens, assembled by recall`);
  const last = prompts.at(-1);
  check(last.droppedTurns > 0, "the last prompt left older turns out");
  check(last.evidence.included, "recall's evidence is in the last prompt");
  check(received.at(-1).some((m) => m.role === "assistant" && textOf(m).includes(RULE)), "the first turn's rule reached the model at the last turn");
  console.log(`\nok: the last prompt held the first turn's rule in recall's evidence, ${last.estimatedTokens.total} of ${BUDGET} tokens`);
}

main().catch((err) => {
  console.error(err instanceof CheckError ? `FAIL: ${err.message}` : `error: ${err.message}`);
  if (process.env.DEBUG && !(err instanceof CheckError)) console.error(err);
  process.exitCode = 1;
});
