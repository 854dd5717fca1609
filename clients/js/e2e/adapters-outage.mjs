// The AI SDK middleware and the OpenAI Agents SDK session through a recall
// restart, driven by e2e.TestClients: each runs turns, and between phases
// the driver waits for a line on stdin while the test stops or restarts
// recall.
//
//   phase 1: three turns each; recall assembles every prompt.  prints "stop recall"
//   phase 2: three turns each while recall is down: every call
//            goes on with the adapter's own cut of the history,
//            within the budget, and warns without message text. prints "start recall"
//   phase 3: one turn each with recall back: recall assembles
//            the prompt again, and holds every turn.            prints "ok: …"
//
// Environment: RECALL_API_URL, RECALL_TOKEN (a token that acts for any user).

import { randomUUID } from "node:crypto";
import { generateText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Agent, Usage, run, setTracingDisabled } from "@openai/agents";

import { RecallClient, newestUserIndex } from "../src/index.js";
import { recallMiddleware, toRecall } from "../src/ai-sdk.js";
import { itemsToRecall, recallSession } from "../src/openai-agents.js";
import { estimateMessage, estimateText } from "../src/prompt.js";
import { check, done, waitFor } from "./driver.js";

const { RECALL_API_URL, RECALL_TOKEN } = process.env;
if (!RECALL_API_URL || !RECALL_TOKEN) throw new Error("set RECALL_API_URL and RECALL_TOKEN");
setTracingDisabled(true);

const BUDGET = 700;
const SYSTEM = "You are the payments team's assistant.";
const client = new RecallClient({ url: RECALL_API_URL, token: RECALL_TOKEN, timeoutMs: 5_000 });
const requests = [
  "We must never store card numbers in our own database.",
  "Agreed: we'll use Postgres for the ledger, with one schema per tenant.",
  "List the tables the ledger needs for invoices and refunds, with their keys.",
  "The deadline moved: we must ship the ledger by the 14th.",
  "Also, the invoices table needs a currency column next to the amount.",
  "And refunds must point at the invoice they reverse.",
  "Draft the schema now, with the columns we agreed on.",
];
const reply = (i) => `Noted (${i}): ${"we will keep that in the ledger design, with the tables and keys as discussed. ".repeat(3)}`;

// Each adapter with its own warnings, prompt reports and what its model got.
const key = (name) => ({ userId: `outage-${name}-${randomUUID().slice(0, 8)}`, conversationId: `conv-${randomUUID().slice(0, 8)}` });

function aiSdk() {
  const k = key("ai");
  const warnings = [], infos = [];
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  const mock = new MockLanguageModelV3({
    doGenerate: async () => ({ content: [{ type: "text", text: reply(mock.doGenerateCalls.length) }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] }),
  });
  const middleware = recallMiddleware({ client, budget: BUDGET, logger: { warn: (m, f) => warnings.push({ m, f }) }, onPrompt: (i) => infos.push(i) });
  const model = wrapLanguageModel({ model: mock, middleware });
  const messages = [];
  return {
    name: "ai-sdk",
    k,
    warnings,
    infos,
    async turn(text) {
      messages.push({ role: "user", content: text });
      const result = await generateText({ model, system: SYSTEM, messages, providerOptions: { recall: k } });
      messages.push(...result.response.messages);
      const prompt = mock.doGenerateCalls.at(-1).prompt;
      const { system, messages: flat } = toRecall(prompt);
      return { tokens: estimateText(system) + flat.reduce((n, m) => n + estimateMessage(m), 0), last: prompt.at(-1).content[0].text };
    },
    // What the last call published: its messages, all but its own answer.
    published: async () => toRecall(messages.slice(0, -1).map((m) => ({ role: m.role, content: typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content }))).messages.length,
    flush: () => middleware.flush(),
  };
}

function openAIAgents() {
  const k = key("agents");
  const warnings = [], infos = [];
  const inputs = [];
  const model = {
    async getResponse(req) {
      inputs.push(req.input);
      return { usage: new Usage(), output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: reply(inputs.length) }] }] };
    },
    async *getStreamedResponse() {
      throw new Error("not streamed");
    },
  };
  const agent = new Agent({ name: "payments", instructions: SYSTEM, model });
  const session = recallSession({ client, ...k, budget: BUDGET, logger: { warn: (m, f) => warnings.push({ m, f }) }, onPrompt: (i) => infos.push(i) });
  return {
    name: "openai-agents",
    k,
    warnings,
    infos,
    async turn(text) {
      await run(agent, text, { session });
      const input = inputs.at(-1);
      const flat = itemsToRecall(input.slice(0, -1)).messages;
      return { tokens: flat.reduce((n, m) => n + estimateMessage(m), 0), last: input.at(-1).content };
    },
    published: async () => itemsToRecall(await session.allItems()).messages.length,
    flush: () => session.flush(),
  };
}

const adapters = [aiSdk(), openAIAgents()];
const noText = (a) => !requests.some((r) => JSON.stringify(a.warnings).includes(r.slice(0, 24)));

// turns runs requests [from, to) on each adapter and returns, per adapter,
// the reports of the assemblies they made (a session's first run has no
// history, and makes none).
async function turns(from, to, phase) {
  const made = [];
  for (const a of adapters) {
    const before = a.infos.length;
    for (let i = from; i < to; i++) {
      const { tokens, last } = await a.turn(requests[i]);
      check(last === requests[i], `${phase}, ${a.name}: the prompt ends with the request`);
      check(tokens <= BUDGET, `${phase}, ${a.name}: the prompt is ${tokens} estimated tokens, over ${BUDGET}`);
    }
    await a.flush();
    made.push(a.infos.slice(before));
    check(made.at(-1).length >= to - from - 1, `${phase}, ${a.name}: ${made.at(-1).length} assemblies for ${to - from} turns`);
  }
  return made;
}

// Phase 1.
const phase1 = await turns(0, 3, "phase 1");
for (const [j, a] of adapters.entries()) {
  check(phase1[j].every((i) => !i.fallback), `phase 1, ${a.name}: recall assembled every prompt (${phase1[j].find((i) => i.fallback)?.fallback})`);
  check(a.warnings.length === 0, `phase 1, ${a.name}: no warnings (${a.warnings.map((w) => w.m).join("; ")})`);
}
console.log(`phase 1: three turns each, every prompt assembled by recall`);
console.log("stop recall");

// Phase 2: recall is down.
await waitFor("stopped");
const phase2 = await turns(3, 6, "phase 2");
for (const [j, a] of adapters.entries()) {
  const down = phase2[j];
  check(down.length === 3 && down.every((i) => /recall is unreachable/.test(i.fallback ?? "")), `phase 2, ${a.name}: every call went on with its own cut (${down.map((i) => i.fallback).join("; ")})`);
  check(a.warnings.some((w) => /goes on with its own history cut to the budget/.test(w.m)), `phase 2, ${a.name}: a warning says so`);
  check(noText(a), `phase 2, ${a.name}: no warning carries message text`);
}
const said = adapters[0].warnings.find((w) => /goes on with its own history/.test(w.m)).m;
console.log(`phase 2: three turns each while recall was down, each cut by the adapter ("${said}")`);
console.log("start recall");

// Phase 3: recall is back.
await waitFor("started");
await turns(6, 7, "phase 3");
const held = [];
for (const a of adapters) {
  check(!a.infos.at(-1).fallback, `phase 3, ${a.name}: recall assembled the prompt again (${a.infos.at(-1).fallback})`);
  const n = await a.published();
  const ev = await client.waitFor(a.k.userId, a.k.conversationId, 12, { minMessages: n, timeoutMs: 60_000 });
  check(ev.message_count === n, `phase 3, ${a.name}: recall holds ${ev.message_count} messages, want ${n}`);
  const kept = Object.values(ev.buckets).flat().map((e) => e.excerpt).join("\n");
  check(kept.includes("we must ship the ledger by the 14th"), `phase 3, ${a.name}: a turn made while recall was down is in the evidence`);
  held.push(`${a.name} ${ev.message_count} messages, cursor ${ev.cursor}`);
}
console.log(`ok: both adapters went on through the outage, and recall caught up: ${held.join("; ")}`);
done();
