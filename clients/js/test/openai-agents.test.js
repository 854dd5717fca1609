// The OpenAI Agents SDK session without recall: the mapping of session
// items to recall's flat messages and back, and run() with the session
// when recall is unreachable, slow or refuses the token (the run goes on
// with the history cut to the budget, and a warning without message text
// says why). A fake Model stands for the provider.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Agent, Usage, run, setTracingDisabled } from "@openai/agents";

import { RecallError, chain, normalizeMessage } from "../src/index.js";
import { itemsFromRecall, itemsToRecall, recallSession } from "../src/openai-agents.js";
import { estimateMessage } from "../src/prompt.js";
import { failingRecalls } from "./fakes.js";

setTracingDisabled(true);

const PNG_DATA_URL = `data:image/png;base64,${Buffer.from([137, 80, 78, 71, 1, 2, 3]).toString("base64")}`;

// Session items of every kind the SDK stores.
function everyKind() {
  return [
    { type: "message", role: "system", content: "You are the ledger assistant." },
    {
      role: "user",
      content: [
        { type: "input_text", text: "We must never store card numbers." },
        { type: "input_image", image: PNG_DATA_URL, detail: "low" },
        { type: "input_file", file: { url: "https://example.com/invoice.pdf" }, filename: "invoice.pdf" },
      ],
    },
    { type: "reasoning", id: "rs_1", content: [{ type: "input_text", text: "A rule." }], providerData: { encryptedContent: "gAAAA" } },
    { type: "function_call", id: "fc_1", callId: "call-1", name: "read_invoice", arguments: '{"id":"inv-7"}', status: "completed" },
    { type: "function_call_result", callId: "call-1", name: "read_invoice", status: "completed", output: { type: "text", text: '{"total":120.5}' } },
    { type: "hosted_tool_call", id: "ws_1", name: "web_search_call", arguments: '{"query":"card rules"}', status: "completed", output: "PCI DSS" },
    { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Noted." }, { type: "refusal", refusal: "I won't store them." }] },
    { type: "message", role: "user", content: "Run the report." },
    { type: "shell_call", callId: "sh-1", status: "completed", action: { commands: ["ls"] } },
    { type: "shell_call_output", callId: "sh-1", output: [{ stdout: "a\nb", stderr: "", outcome: { type: "exit", exitCode: 0 } }] },
    { type: "computer_call", callId: "cu-1", status: "completed", action: { type: "screenshot" } },
    { type: "computer_call_result", callId: "cu-1", output: { type: "computer_screenshot", data: PNG_DATA_URL } },
    { type: "function_call", callId: "call-2", name: "chart", arguments: "{}", status: "completed" },
    { type: "function_call_result", callId: "call-2", name: "chart", status: "completed", output: [{ type: "input_text", text: "chart:" }, { type: "input_image", image: PNG_DATA_URL }] },
    { type: "unknown", providerData: { kind: "mystery" } },
    { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Report done." }] },
    { type: "message", role: "user", content: "Thanks." },
  ];
}

describe("itemsToRecall and itemsFromRecall", () => {
  test("every kind of item maps to messages recall accepts, and back to itself", () => {
    const items = everyKind();
    const { system, messages, plan } = itemsToRecall(items);
    assert.equal(system, "You are the ledger assistant.");
    messages.forEach((m, i) => normalizeMessage(m, i));
    assert.equal(new Set(messages.map((m) => m.id)).size, messages.length);
    const wire = JSON.stringify(messages);
    assert.ok(!wire.includes(PNG_DATA_URL.slice(22)), "image bytes are never published");
    assert.ok(!wire.includes("gAAAA"), "provider data is not published");
    assert.deepEqual(messages.find((m) => m.id === "m2"), { id: "m2", role: "assistant", type: "thinking", content: "A rule." });
    assert.deepEqual(messages.find((m) => m.id === "m3").tool_calls, [{ id: "call-1", name: "read_invoice", args: { id: "inv-7" } }]);
    assert.deepEqual(messages.find((m) => m.id === "m5").tool_calls, [{ id: "ws_1", name: "web_search_call", args: { query: "card rules" } }]);
    assert.deepEqual(messages.find((m) => m.id === "m5.1"), { id: "m5.1", role: "tool", tool_call_id: "ws_1", name: "web_search_call", content: "PCI DSS" });
    assert.equal(messages.find((m) => m.id === "m6").content[1].text, "[refusal] I won't store them.");
    assert.match(messages.find((m) => m.id === "m14").content[0].text, /^\[unknown\] /);
    // recall answers every message as it was sent: the items come back.
    const back = itemsFromRecall([{ role: "system", content: system }, ...messages], plan);
    assert.deepEqual(back, items);
    back.forEach((item, i) => assert.equal(item, items[i]));
  });

  test("a longer session extends the same digests", () => {
    const first = itemsToRecall(everyKind()).messages;
    const longer = itemsToRecall([...everyKind(), { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Welcome." }] }]).messages;
    assert.deepEqual(longer.slice(0, first.length), first);
    assert.deepEqual(chain(itemsToRecall(everyKind()).messages).at(-1), chain(first).at(-1));
  });

  test("what recall changed maps back onto the items", () => {
    const items = everyKind();
    const { messages, plan } = itemsToRecall(items);
    const byId = new Map(messages.map((m) => [m.id, JSON.parse(JSON.stringify(m))]));
    const chart = byId.get("m13");
    chart.content[1] = { type: "text", text: "[image omitted]" };
    const screenshot = byId.get("m11");
    screenshot.content[0] = { type: "text", text: "[image omitted]" };
    const answer = [
      { role: "assistant", content: "EVIDENCE" },
      ...["m7", "m8", "m9", "m10"].map((id) => byId.get(id)),
      screenshot,
      byId.get("m12"),
      chart,
      byId.get("m14"),
      byId.get("m15"),
      byId.get("m16"),
    ];
    const got = itemsFromRecall(answer, plan);
    assert.deepEqual(got[0], items[0]);
    assert.deepEqual(got[1], { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "EVIDENCE" }] });
    assert.equal(got[2], items[7]);
    assert.equal(got[6], items[11], "a result the SDK holds in a fixed shape comes back as it was");
    assert.deepEqual(got[8].output, [items[13].output[0], { type: "input_text", text: "[image omitted]" }]);
    assert.equal(got.length, 2 + 10);
    assert.ok(!got.includes(items[2]), "the reasoning of a dropped turn goes with it");
  });

  test("a compacted result and an older image map back; reasoning comes back with its call", () => {
    const items = [
      { type: "message", role: "user", content: [{ type: "input_text", text: "see" }, { type: "input_image", image: "https://example.com/a.png" }] },
      { type: "reasoning", content: [] },
      { type: "function_call", callId: "c1", name: "read", arguments: "{}", status: "completed" },
      { type: "function_call_result", callId: "c1", name: "read", status: "completed", output: '{"rows":[1,2,3]}' },
      { type: "message", role: "user", content: "again" },
    ];
    const { messages, plan } = itemsToRecall(items);
    const answer = JSON.parse(JSON.stringify(messages.filter((m) => !m.type)));
    answer[0].content[1] = { type: "text", text: "[image omitted]" };
    answer[2].content = '{"rows":[1],"_compaction":{}}';
    const got = itemsFromRecall(answer, plan);
    assert.deepEqual(got, [
      { ...items[0], content: [items[0].content[0], { type: "input_text", text: "[image omitted]" }] },
      items[1],
      items[2],
      { ...items[3], output: '{"rows":[1],"_compaction":{}}' },
      items[4],
    ]);
  });
});

// fakeModel answers each request with one message and records its input.
function fakeModel() {
  const inputs = [];
  return {
    inputs,
    async getResponse(req) {
      inputs.push(req.input);
      return { usage: new Usage(), output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: `Secret answer ${inputs.length}: ${"dolor ".repeat(40)}` }] }] };
    },
    async *getStreamedResponse() {
      throw new Error("not streamed");
    },
  };
}

describe("recallSession when recall fails", () => {
  let recalls;
  before(async () => {
    recalls = await failingRecalls({ status: 403, code: "forbidden" });
  });
  after(() => recalls.close());

  const cases = [
    { name: "unreachable", url: () => recalls.closedURL, reason: /recall is unreachable \(ECONNREFUSED\)/ },
    { name: "slow", url: () => recalls.slowURL, reason: /recall did not answer within 300 ms/ },
    { name: "refusing the token", url: () => recalls.refusingURL, reason: /recall answered 403 forbidden/ },
  ];
  for (const tt of cases) {
    test(`${tt.name}: run() goes on with the newest turns within the budget, and warns`, async () => {
      const warnings = [];
      const session = recallSession({ url: tt.url(), token: "t", userId: "u-1", conversationId: `c-${tt.name}`, budget: 500, timeoutMs: 300, logger: { warn: (message, fields) => warnings.push({ message, fields }) } });
      const model = fakeModel();
      const agent = new Agent({ name: "ledger", instructions: "Be brief.", model });
      for (let i = 0; i < 12; i++) {
        const result = await run(agent, `Secret question ${i}: ${"lorem ".repeat(40)}`, { session });
        assert.match(result.finalOutput, /^Secret answer/);
      }
      const input = model.inputs.at(-1);
      const stored = await session.allItems();
      assert.equal(stored.length, 24);
      assert.ok(input.length < stored.length, "the history was cut");
      assert.equal(input.at(-1).content, `Secret question 11: ${"lorem ".repeat(40)}`);
      const history = itemsToRecall(input.slice(0, -1)).messages;
      const total = history.reduce((n, m) => n + estimateMessage(m), 0);
      assert.ok(total <= 500, `the history is ${total} estimated tokens, over 500`);
      const warning = warnings.find((w) => /the run goes on with its own history/.test(w.message));
      assert.ok(warning, JSON.stringify(warnings));
      assert.match(warning.message, tt.reason);
      assert.equal(warning.fields.conversation_id, `c-${tt.name}`);
      assert.ok(!JSON.stringify(warnings).includes("Secret"), "a warning carries message text");
    });
  }
});

describe("recallSession", () => {
  // recorder stands for a RecallClient: it assembles nothing away and
  // records what is published and deleted.
  function recorder() {
    return {
      events: [],
      deleted: [],
      failDelete: false,
      async context(user, conv, messages) {
        return { messages, estimated_tokens: { total: 1 }, limit: 100, dropped_turns: 0, evidence: { included: false } };
      },
      async publishEvent(event) {
        this.events.push(event);
        return { stream_seq: this.events.length, duplicate: false };
      },
      async delete(user, conv) {
        if (this.failDelete) throw new RecallError(503, "unavailable", "try again");
        this.deleted.push([user, conv]);
      },
    };
  }

  test("publishes the history as it grows: a snapshot, then appends", async () => {
    const client = recorder();
    const session = recallSession({ client, userId: "u-1", conversationId: "c-1" });
    const agent = new Agent({ name: "a", model: fakeModel() });
    await run(agent, "first", { session });
    await session.flush();
    await run(agent, "second", { session });
    await session.flush();
    assert.deepEqual(client.events.map((e) => [e.offset, e.messages.length]), [[0, 2], [2, 2]]);
    assert.equal(await session.getSessionId(), "c-1");
    assert.deepEqual(client.events.map((e) => [e.user_id, e.conversation_id]), [["u-1", "c-1"], ["u-1", "c-1"]]);
  });

  test("getItems with a limit answers the newest items as stored; popItem and clearSession", async () => {
    const client = recorder();
    const session = recallSession({ client, userId: "u-1" });
    const id = await session.getSessionId();
    assert.match(id, /^[0-9a-f-]{36}$/);
    const items = [
      { type: "message", role: "user", content: "a" },
      { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "b" }] },
    ];
    await session.addItems(items);
    assert.deepEqual(await session.getItems(1), [items[1]]);
    assert.deepEqual(await session.getItems(), items);
    assert.deepEqual(await session.popItem(), items[1]);
    assert.deepEqual(await session.allItems(), [items[0]]);
    client.failDelete = true;
    await assert.rejects(session.clearSession(), RecallError);
    assert.deepEqual(await session.allItems(), []);
    client.failDelete = false;
    await session.clearSession();
    assert.deepEqual(client.deleted, [["u-1", id]]);
  });

  test("it wraps another session, which keeps the items", async () => {
    const { MemorySession } = await import("@openai/agents");
    const inner = new MemorySession({ sessionId: "inner-7" });
    const client = recorder();
    const session = recallSession({ client, userId: "u-1", session: inner });
    await run(new Agent({ name: "a", model: fakeModel() }), "hello", { session });
    await session.flush();
    assert.equal(await session.getSessionId(), "inner-7");
    assert.equal((await inner.getItems()).length, 2);
    assert.equal(client.events[0].conversation_id, "inner-7");
  });

  test("userId is required", () => {
    assert.throws(() => recallSession({ client: recorder() }), /give userId/);
  });
});
