// An OpenAI Agents SDK agent whose session recall keeps within a budget.
//
// The one line is the session: run(agent, input, { session: recallSession({
// … }) }). The session keeps the conversation's items and publishes them to
// recall as they grow; each run reads them back as recall's evidence of
// the turns that no longer fit, then the newest turns that do (large tool
// results compacted), so the run keeps working past the model's window.
//
// Without OPENAI_API_KEY the model is a fake Model that answers from a
// script; with it, OpenAI's (OPENAI_MODEL, gpt-4.1-mini by default).
// Either way the example checks what the session gave each run (within
// the budget, and at the last turn recall's evidence holding the first
// turn's rule) and exits non-zero when that is not so. Configuration is
// what `recall dev` prints: RECALL_API_URL and RECALL_TOKEN.

import { randomUUID } from "node:crypto";
import { Agent, Usage, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";
import { recallSession } from "@recallhq/recall-client/openai-agents";

const BUDGET = 2500;
const RULE = "never store card numbers in our own database";

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
  name: "overdue_invoices",
  description: "Counts the overdue invoices in the ledger.",
  parameters: z.object({}),
  execute: async () => JSON.stringify({ overdue: 17, oldest_days: 41 }),
});

const say = (text) => [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] }];

// A Model that answers from a script and keeps each request's input.
const inputs = [];
const scripted = {
  async getResponse({ input }) {
    inputs.push(input);
    const last = input.at(-1);
    if (last.type === "function_call_result") return { usage: new Usage(), output: say("17 invoices are overdue; the oldest by 41 days.") };
    if (last.role === "user" && String(last.content).startsWith("How many invoices")) {
      return { usage: new Usage(), output: [{ type: "function_call", callId: "call-1", name: "overdue_invoices", arguments: "{}", status: "completed" }] };
    }
    if (last.role === "user" && String(last.content).startsWith("Write the migration")) {
      return { usage: new Usage(), output: say("Only the provider's token, its last four digits and the expiry: card numbers stay with the provider.") };
    }
    return { usage: new Usage(), output: say("Noted. Start with the bounced invoices, then the PDF layout.") };
  },
  async *getStreamedResponse() {
    throw new Error("this example does not stream");
  },
};

class CheckError extends Error {}

function check(ok, what) {
  if (!ok) throw new CheckError(what);
}

const textOf = (item) => (typeof item.content === "string" ? item.content : (item.content ?? []).map((p) => p.text ?? "").join("\n"));

async function main() {
  const { RECALL_API_URL, RECALL_TOKEN, OPENAI_API_KEY } = process.env;
  if (!RECALL_API_URL || !RECALL_TOKEN) {
    throw new Error("set RECALL_API_URL and RECALL_TOKEN (run `recall dev` and paste the export lines it prints)");
  }
  if (!OPENAI_API_KEY) setTracingDisabled(true);
  const agent = new Agent({
    name: "invoicing",
    instructions: "You are the invoicing team's assistant. Answer in two sentences at most.",
    model: OPENAI_API_KEY ? process.env.OPENAI_MODEL || "gpt-4.1-mini" : scripted,
    tools: [overdueInvoices],
  });
  const warnings = [], prompts = [];
  const userId = process.env.RECALL_USER_ID || "agents-demo";
  // The one line: the session.
  const session = recallSession({
    url: RECALL_API_URL,
    token: RECALL_TOKEN,
    userId,
    conversationId: `agents-${randomUUID()}`,
    budget: BUDGET,
    logger: { warn: (message) => warnings.push(message) },
    onPrompt: (info) => prompts.push(info),
  });
  console.log(`user ${userId}, session ${await session.getSessionId()}, ${OPENAI_API_KEY ? "OpenAI's model" : "the scripted model"}`);
  let history = [];
  for (const [i, request] of requests.entries()) {
    if (i === requests.length - 1 && !OPENAI_API_KEY) {
      // A real model takes a while to answer; the scripted one answers at
      // once, and recall may not have read the turns before the last one
      // yet: wait until it has (a real agent never needs to).
      await session.flush();
      const items = await session.allItems();
      await session.client.waitFor(userId, await session.getSessionId(), items.findLastIndex((it) => it.role === "user"));
    }
    // What the run will get from the session, read as the runner reads it.
    history = await session.getItems();
    const result = await run(agent, request, { session });
    const info = prompts.at(-1);
    console.log(
      `turn ${String(i + 1).padStart(2)}: ` +
        (info ? `${info.estimatedTokens.total} of ${info.limit} tokens, ${info.kept} of ${info.items} items, ${info.droppedTurns} turns dropped, evidence ${info.evidence?.included ? "in" : "out"}` : "a new session") +
        `: ${String(result.finalOutput).slice(0, 60)}`,
    );
  }
  await session.flush();

  check(warnings.length === 0, `no warnings: ${warnings.join("; ")}`);
  check(prompts.every((p) => p.estimatedTokens.total <= BUDGET && !p.fallback), `every history within ${BUDGET} tokens, assembled by recall`);
  const last = prompts.at(-1);
  check(last.droppedTurns > 0, "the last run's history left older turns out");
  check(last.evidence.included && textOf(history[0]).includes(RULE), "recall's evidence, with the first turn's rule, is in front of the last run's history");
  if (!OPENAI_API_KEY) check(textOf(inputs.at(-1)[0]) === textOf(history[0]), "and it reached the model");
  console.log(`\nok: the last run's history held the first turn's rule in recall's evidence, ${last.estimatedTokens.total} of ${BUDGET} tokens`);
}

main().catch((err) => {
  console.error(err instanceof CheckError ? `FAIL: ${err.message}` : `error: ${err.message}`);
  if (process.env.DEBUG && !(err instanceof CheckError)) console.error(err);
  process.exitCode = 1;
});
