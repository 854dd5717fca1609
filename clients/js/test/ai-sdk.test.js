// The AI SDK middleware without recall: the mapping of the SDK's prompt to
// recall's flat messages and back, the fallback cut, and the middleware in
// generateText and streamText when recall is unreachable, slow or refuses
// the token (the call goes on, and a warning without message text says
// why). The AI SDK's own mock model stands for the provider.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { generateText, simulateReadableStream, streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import { chain, normalizeMessage } from "../src/index.js";
import { fromRecall, recallMiddleware, toRecall } from "../src/ai-sdk.js";
import { cutTurns, estimateMessage, limitOf } from "../src/prompt.js";
import { failingRecalls } from "./fakes.js";

const PNG = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 1, 2, 3, 4]);
const PNG_BASE64 = Buffer.from(PNG).toString("base64");

// A prompt with every kind of part the AI SDK's language-model prompt has.
function everyKind() {
  return [
    { role: "system", content: "You are the ledger assistant." },
    {
      role: "user",
      content: [
        { type: "text", text: "We must never store card numbers. Here is the old invoice." },
        { type: "file", mediaType: "image/png", data: PNG },
        { type: "file", mediaType: "application/pdf", data: new URL("https://example.com/invoice.pdf"), filename: "invoice.pdf" },
      ],
      providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } },
    },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "The user set a rule.", providerOptions: { anthropic: { signature: "sig-1" } } },
        { type: "text", text: "Noted. Let me read the invoice." },
        { type: "tool-call", toolCallId: "call-1", toolName: "read_invoice", input: { id: "inv-7" } },
        { type: "tool-call", toolCallId: "ws-1", toolName: "web_search", input: { query: "card rules" }, providerExecuted: true },
        { type: "tool-result", toolCallId: "ws-1", toolName: "web_search", output: { type: "json", value: { results: ["PCI DSS"] } } },
      ],
    },
    {
      role: "tool",
      content: [
        { type: "tool-result", toolCallId: "call-1", toolName: "read_invoice", output: { type: "json", value: { total: 120.5, currency: "EUR" } } },
        { type: "tool-approval-response", approvalId: "ap-1", approved: true },
      ],
    },
    { role: "assistant", content: [{ type: "text", text: "The invoice totals 120.50 EUR." }] },
    { role: "system", content: "Answer in English." },
    {
      role: "user",
      content: [
        { type: "text", text: "Check these too." },
        { type: "file", mediaType: "image/png", data: PNG_BASE64 },
      ],
    },
    {
      role: "assistant",
      content: [
        { type: "tool-call", toolCallId: "call-2", toolName: "lookup", input: { q: "a" } },
        { type: "tool-call", toolCallId: "call-3", toolName: "lookup", input: { q: "b" } },
      ],
    },
    {
      role: "tool",
      content: [
        { type: "tool-result", toolCallId: "call-2", toolName: "lookup", output: { type: "text", value: "found a" } },
        { type: "tool-result", toolCallId: "call-3", toolName: "lookup", output: { type: "error-text", value: "lookup failed" } },
      ],
    },
    {
      role: "assistant",
      content: [{ type: "tool-call", toolCallId: "call-4", toolName: "delete_rows", input: {} }],
    },
    {
      role: "tool",
      content: [
        { type: "tool-result", toolCallId: "call-4", toolName: "delete_rows", output: { type: "execution-denied", reason: "not approved" } },
      ],
    },
    {
      role: "assistant",
      content: [{ type: "tool-call", toolCallId: "call-5", toolName: "render", input: {} }],
    },
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "call-5",
          toolName: "render",
          output: { type: "content", value: [{ type: "text", text: "rendered" }, { type: "image-data", data: PNG_BASE64, mediaType: "image/png" }, { type: "custom", providerOptions: { x: { y: 1 } } }] },
        },
      ],
    },
  ];
}

describe("toRecall and fromRecall", () => {
  test("every kind of part maps to messages recall accepts, and back to itself", () => {
    const prompt = everyKind();
    const { system, messages, plan } = toRecall(prompt);
    assert.equal(system, "You are the ledger assistant.\n\nAnswer in English.");
    messages.forEach((m, i) => normalizeMessage(m, i)); // throws for what recall rejects
    assert.equal(new Set(messages.map((m) => m.id)).size, messages.length, "ids are unique");
    const wire = JSON.stringify(messages);
    assert.ok(!wire.includes(PNG_BASE64), "image bytes are never published");
    assert.ok(wire.includes('"sha256"') && wire.includes("https://example.com/invoice.pdf"), "media go by reference");
    const thinking = messages.filter((m) => m.type === "thinking");
    assert.deepEqual(thinking.map((m) => m.id), ["m1.r"]);
    const approval = messages.find((m) => m.id === "m2.s");
    assert.equal(approval.type, "status");
    assert.match(approval.content[0].text, /^\[tool-approval-response\] /);
    const provider = messages.find((m) => m.id === "m1");
    assert.deepEqual(provider.tool_calls, [{ id: "call-1", name: "read_invoice", args: { id: "inv-7" } }]);
    assert.match(provider.content[1].text, /^\[provider tool call web_search\] \{"query":"card rules"\}$/);
    assert.match(provider.content[2].text, /^\[provider tool result web_search\] /);
    const denied = messages.find((m) => m.tool_call_id === "call-4");
    assert.equal(denied.content, "[execution denied] not approved");
    const custom = messages.find((m) => m.tool_call_id === "call-5");
    assert.match(custom.content[2].text, /^\[custom\] /);

    // recall answers every message as it was sent: the prompt comes back,
    // its own objects.
    const back = fromRecall([{ role: "system", content: system }, ...messages], plan);
    assert.deepEqual(back, prompt);
    back.forEach((m, i) => assert.equal(m, prompt[i]));
  });

  test("the same conversation maps to the same digests, and a longer one extends them", () => {
    const prompt = everyKind();
    const first = toRecall(prompt).messages;
    const again = toRecall(everyKind()).messages;
    assert.deepEqual(chain(again).at(-1), chain(first).at(-1));
    const longer = toRecall([...prompt, { role: "assistant", content: [{ type: "text", text: "Done." }] }, { role: "user", content: [{ type: "text", text: "Next." }] }]).messages;
    assert.deepEqual(longer.slice(0, first.length), first);
    // A system prompt that changes does not change the history's digests.
    const other = toRecall([{ role: "system", content: "It is Tuesday." }, ...prompt.slice(1)]).messages;
    assert.deepEqual(chain(other).at(-1), chain(first).at(-1));
  });

  test("what recall changed maps back to the parts it came from", () => {
    const prompt = everyKind();
    const { messages, plan } = toRecall(prompt);
    const byId = new Map(messages.map((m) => [m.id, structuredClone(m)]));
    // recall's answer: the first turn dropped, an older turn's image a
    // placeholder, a compacted result, a call whose result is missing left
    // out, and its evidence message.
    const user2 = byId.get("m4");
    user2.content[1] = { type: "text", text: "[image omitted]" };
    const r2 = byId.get("m6.0");
    r2.content = '{"_compaction":{"notice":"…"}}';
    const renderResult = byId.get("m10.0");
    renderResult.content[1] = { type: "text", text: "[image omitted]" };
    const answer = [
      { role: "system", content: "You are the ledger assistant.\n\nAnswer in English." },
      { role: "assistant", content: '{"type":"untrusted_historical_evidence"}' },
      user2,
      byId.get("m5"),
      r2,
      byId.get("m6.1"),
      byId.get("m9"),
      renderResult,
    ];
    const got = fromRecall(answer, plan);
    assert.equal(got.length, 8, "the dropped turn and the call recall left out are gone");
    assert.equal(got[0], prompt[0]);
    assert.deepEqual(got[1], { role: "assistant", content: [{ type: "text", text: '{"type":"untrusted_historical_evidence"}' }] });
    assert.equal(got[2], prompt[5], "a system message stays in place when what follows it does");
    assert.deepEqual(got[3], { ...prompt[6], content: [prompt[6].content[0], { type: "text", text: "[image omitted]" }] });
    assert.equal(got[4], prompt[7], "a message recall kept as sent is the original");
    assert.deepEqual(got[5].content[0].output, { type: "text", value: '{"_compaction":{"notice":"…"}}' });
    assert.equal(got[5].content[1], prompt[8].content[1]);
    assert.equal(got[6], prompt[11]);
    assert.deepEqual(got[7].content[0].output.value, [prompt[12].content[0].output.value[0], { type: "text", text: "[image omitted]" }, prompt[12].content[0].output.value[2]]);
  });

  test("a system message in a dropped turn moves to the head; reasoning and approvals go with their message", () => {
    const prompt = [
      { role: "user", content: [{ type: "text", text: "one" }] },
      { role: "system", content: "Mind the rule." },
      { role: "assistant", content: [{ type: "reasoning", text: "r1" }, { type: "text", text: "a1" }] },
      { role: "user", content: [{ type: "text", text: "two" }] },
      { role: "assistant", content: [{ type: "reasoning", text: "r2" }, { type: "text", text: "a2" }] },
      { role: "tool", content: [{ type: "tool-approval-response", approvalId: "x", approved: false }] },
      { role: "user", content: [{ type: "text", text: "three" }] },
    ];
    const { messages, plan } = toRecall(prompt);
    const chat = messages.filter((m) => !m.type);
    assert.deepEqual(fromRecall(chat.slice(2), plan), [prompt[1], prompt[3], prompt[4], prompt[5], prompt[6]]);
    assert.deepEqual(fromRecall(chat.slice(4), plan), [prompt[1], prompt[6]]);
    // One after the request stays after it.
    const trailing = [...prompt, { role: "system", content: "Answer in French." }];
    const t = toRecall(trailing);
    assert.deepEqual(fromRecall(t.messages.filter((m) => !m.type).slice(4), t.plan), [prompt[1], prompt[6], trailing[7]]);
  });

  test("a json result recall compacted stays json; shortened prose replaces the text", () => {
    const prompt = [
      { role: "user", content: [{ type: "text", text: "Read it." }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "thinking" },
          { type: "text", text: "x".repeat(2000) },
          { type: "tool-call", toolCallId: "c1", toolName: "read", input: {} },
        ],
      },
      { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "read", output: { type: "json", value: { rows: [1, 2, 3] } } }] },
      { role: "user", content: [{ type: "text", text: "Again." }] },
    ];
    const { messages, plan } = toRecall(prompt);
    const answer = structuredClone(messages.filter((m) => m.type !== "thinking"));
    answer[1].content = "xxxx… [1996 characters omitted]";
    answer[2].content = '{"rows":[1],"_compaction":{"collections":[{"path":"rows","returned":3,"retained":1,"omitted":2}]}}';
    const got = fromRecall(answer, plan);
    assert.deepEqual(got[1].content, [prompt[1].content[0], { type: "text", text: "xxxx… [1996 characters omitted]" }, prompt[1].content[2]]);
    assert.deepEqual(got[2].content[0].output, { type: "json", value: { rows: [1], _compaction: { collections: [{ path: "rows", returned: 3, retained: 1, omitted: 2 }] } } });
  });
});

describe("the fallback cut", () => {
  const turn = (i, size) => [
    { id: `u${i}`, role: "user", content: [{ type: "text", text: `${i}`.padEnd(size, ".") }] },
    { id: `a${i}`, role: "assistant", content: [{ type: "text", text: "ok" }] },
  ];

  test("keeps the current turn whole and the newest whole turns that fit", () => {
    const messages = [...turn(0, 300), ...turn(1, 300), ...turn(2, 300), { id: "t", role: "assistant", type: "thinking", content: "hm" }, { id: "now", role: "user", content: "now" }];
    const budget = { prompt: 300, context_window: 32768 };
    const got = cutTurns(messages, { system: "Be brief.", budget });
    assert.deepEqual(got.messages.map((m) => m.id), ["u1", "a1", "u2", "a2", "now"]);
    assert.equal(got.dropped_turns, 1);
    assert.equal(got.limit, 300);
    assert.ok(got.estimated <= 300, `${got.estimated}`);
    const est = Math.ceil(Buffer.byteLength("Be brief.") / 3) + 4 + got.messages.reduce((n, m) => n + estimateMessage(m), 0);
    assert.equal(got.estimated, est);
  });

  test("never cuts the current turn, even over the limit", () => {
    const messages = [...turn(0, 30), { id: "big", role: "user", content: "x".repeat(3000) }];
    const got = cutTurns(messages, { budget: { prompt: 100 } });
    assert.deepEqual(got.messages.map((m) => m.id), ["big"]);
    assert.equal(got.dropped_turns, 1);
  });

  test("the limit is recall's", () => {
    assert.equal(limitOf(undefined), 16000);
    assert.equal(limitOf({ context_window: 8192 }), 8192 - 4096 - 2048);
    assert.equal(estimateMessage({ role: "user", content: [{ type: "text", text: "abc" }, { type: "image" }] }), 1 + 4 + 1000);
  });
});

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 2, text: 2, reasoning: 0 } };

// A conversation long enough that the budget cuts it, and its texts.
function longConversation(turns) {
  const messages = [];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: "user", content: `Secret user text ${i}: ${"lorem ipsum ".repeat(30)}` });
    messages.push({ role: "assistant", content: `Secret reply ${i}: ${"dolor sit ".repeat(30)}` });
  }
  messages.push({ role: "user", content: "Secret current request." });
  return messages;
}

function assertNoText(warnings, messages) {
  const logged = JSON.stringify(warnings);
  for (const m of messages) assert.ok(!logged.includes(m.content.slice(0, 20)), "a warning carries message text");
  assert.ok(!logged.includes("Secret"), "a warning carries message text");
}

describe("recallMiddleware when recall fails", () => {
  let recalls;
  before(async () => {
    recalls = await failingRecalls({ status: 401, code: "unauthorized" });
  });
  after(() => recalls.close());

  const cases = [
    // The slow recall's publishes stay under way until the server closes.
    { name: "unreachable", url: () => recalls.closedURL, reason: /recall is unreachable \(ECONNREFUSED\)/, settles: true },
    { name: "slow", url: () => recalls.slowURL, reason: /recall did not answer within 300 ms/, settles: false },
    { name: "refusing the token", url: () => recalls.refusingURL, reason: /recall answered 401 unauthorized/, settles: true },
  ];
  for (const tt of cases) {
    test(`${tt.name}: generateText goes on with the newest turns within the budget, and warns`, async () => {
      const warnings = [];
      const logger = { warn: (message, fields) => warnings.push({ message, fields }) };
      const middleware = recallMiddleware({ url: tt.url(), token: "t", budget: 600, timeoutMs: 300, logger });
      const mock = new MockLanguageModelV3({ doGenerate: { content: [{ type: "text", text: "fine" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] } });
      const messages = longConversation(20);
      const started = Date.now();
      const result = await generateText({
        model: wrapLanguageModel({ model: mock, middleware }),
        system: "Be brief.",
        messages,
        providerOptions: { recall: { userId: "u-1", conversationId: "c-1" } },
      });
      assert.equal(result.text, "fine");
      assert.ok(Date.now() - started < 5000);
      const [call] = mock.doGenerateCalls;
      assert.equal(call.prompt[0].role, "system");
      assert.deepEqual(call.prompt.at(-1).content, [{ type: "text", text: "Secret current request." }]);
      assert.ok(call.prompt.length < messages.length, "the history was cut");
      assert.equal((call.prompt.length - 2) % 2, 0, "whole turns");
      const { messages: flat } = toRecall(call.prompt);
      const total = Math.ceil(Buffer.byteLength("Be brief.") / 3) + 4 + flat.reduce((n, m) => n + estimateMessage(m), 0);
      assert.ok(total <= 600, `the prompt is ${total} estimated tokens, over 600`);
      assert.equal(call.providerOptions?.recall, undefined, "recall's options are not passed to the provider");
      const warning = warnings.find((w) => /goes on with its own history/.test(w.message));
      assert.ok(warning, JSON.stringify(warnings));
      assert.match(warning.message, tt.reason);
      assert.equal(warning.fields.conversation_id, "c-1");
      if (tt.settles) {
        await middleware.flush();
        assert.ok(warnings.some((w) => /could not publish/.test(w.message)), "the failed publish is reported");
      }
      assertNoText(warnings, messages);
    });
  }

  test("streamText goes on too", async () => {
    const warnings = [];
    const middleware = recallMiddleware({ url: recalls.closedURL, token: "t", budget: 600, logger: { warn: (m, f) => warnings.push({ m, f }) } });
    const mock = new MockLanguageModelV3({
      doStream: {
        stream: simulateReadableStream({
          chunks: [
            { type: "text-start", id: "t1" },
            { type: "text-delta", id: "t1", delta: "still " },
            { type: "text-delta", id: "t1", delta: "here" },
            { type: "text-end", id: "t1" },
            { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
          ],
        }),
      },
    });
    const messages = longConversation(20);
    const result = streamText({ model: wrapLanguageModel({ model: mock, middleware }), messages, providerOptions: { recall: { userId: "u-1", conversationId: "c-2" } } });
    let text = "";
    for await (const delta of result.textStream) text += delta;
    assert.equal(text, "still here");
    assert.ok(mock.doStreamCalls[0].prompt.length < messages.length);
    assert.ok(warnings.length > 0);
    await middleware.flush();
    assertNoText(warnings, messages);
  });

  test("a call that names no user or conversation goes on, and warns", async () => {
    const warnings = [];
    const middleware = recallMiddleware({ url: recalls.closedURL, token: "t", budget: 600, logger: { warn: (m) => warnings.push(m) } });
    const mock = new MockLanguageModelV3({ doGenerate: { content: [{ type: "text", text: "fine" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] } });
    const result = await generateText({ model: wrapLanguageModel({ model: mock, middleware }), messages: longConversation(20) });
    assert.equal(result.text, "fine");
    assert.match(warnings.join("\n"), /names no recall user or conversation/);
  });

  test("userId and conversationId may be functions of the call", async () => {
    const seen = [];
    const client = {
      async context(user, conv, messages) {
        seen.push([user, conv]);
        return { messages, estimated_tokens: { total: 1 }, limit: 100, dropped_turns: 0, evidence: { included: false } };
      },
      async publishEvent() {
        return { stream_seq: 1, duplicate: false };
      },
    };
    const middleware = recallMiddleware({
      client,
      userId: (params) => params.headers?.["x-user"],
      conversationId: (params) => params.headers?.["x-conversation"],
    });
    const mock = new MockLanguageModelV3({ doGenerate: { content: [{ type: "text", text: "fine" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] } });
    const prompt = [{ role: "user", content: "hello" }];
    await generateText({ model: wrapLanguageModel({ model: mock, middleware }), messages: prompt, headers: { "x-user": "u-9", "x-conversation": "c-9" } });
    assert.deepEqual(seen, [["u-9", "c-9"]]);
    assert.deepEqual(mock.doGenerateCalls[0].prompt.map(({ role, content }) => ({ role, content })), [{ role: "user", content: [{ type: "text", text: "hello" }] }]);
  });

  test("a prompt with no user message goes to the model as it is", async () => {
    const client = {
      async context() {
        throw new Error("not asked");
      },
      async publishEvent() {
        return { stream_seq: 1, duplicate: false };
      },
    };
    const warnings = [];
    const middleware = recallMiddleware({ client, logger: { warn: (m) => warnings.push(m) } });
    const prompt = [{ role: "system", content: "Greet the user." }];
    const params = { prompt, providerOptions: { recall: { userId: "u", conversationId: "c" }, openai: { store: false } } };
    const got = await middleware.transformParams({ type: "generate", params });
    assert.equal(got.prompt, prompt);
    assert.deepEqual(got.providerOptions, { openai: { store: false } });
    assert.deepEqual(warnings, []);
  });

  test("a bad budget is refused when the middleware is made", () => {
    assert.throws(() => recallMiddleware({ url: "http://x", token: "t", budget: { promt: 100 } }), /unknown field "promt"/);
    assert.throws(() => recallMiddleware({ url: "http://x", token: "t", budget: -1 }), /whole number/);
  });
});
