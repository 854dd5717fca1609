// recall's MCP server at /mcp, driven by the official TypeScript SDK's
// client over streamable HTTP. e2e.TestMCP runs it against a recall dev that
// holds the sample conversation "planning" of demo-user, with:
//
//   RECALL_MCP_URL        the API's /mcp
//   RECALL_USER_TOKEN     a token for demo-user
//   RECALL_TOKEN          a recall:service token
//   RECALL_WANT_CURSOR    the planning conversation's cursor

import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const env = process.env;
const missing = ["RECALL_MCP_URL", "RECALL_USER_TOKEN", "RECALL_TOKEN", "RECALL_WANT_CURSOR"].filter((k) => !env[k]);
if (missing.length) throw new Error(`set ${missing.join(", ")} (e2e.TestMCP sets them)`);

const USER = "demo-user";
const CONVERSATION = "planning";
const wantCursor = Number(env.RECALL_WANT_CURSOR);

async function connect(token) {
  const client = new Client({ name: "recall-e2e-ts", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(env.RECALL_MCP_URL), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

// The text of a tool error, which starts with the API's code.
function errorText(result) {
  assert.equal(result.isError, true, `want a tool error, got ${JSON.stringify(result)}`);
  return result.content.map((c) => c.text).join("\n");
}

describe("MCP over streamable HTTP", () => {
  let user, service;
  before(async () => {
    user = await connect(env.RECALL_USER_TOKEN);
    service = await connect(env.RECALL_TOKEN);
  });
  after(async () => {
    await user?.close();
    await service?.close();
  });

  test("the server names itself and lists three tools, each with an input and an output schema", async () => {
    assert.equal(user.getServerVersion().name, "recall");
    const { tools } = await user.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ["recall_conversations", "recall_evidence", "recall_search"]);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, "object", t.name);
      assert.equal(t.outputSchema?.type, "object", t.name);
      assert.ok(t.description, t.name);
      assert.ok("user_id" in t.inputSchema.properties, `${t.name} takes user_id`);
    }
    const evidence = tools.find((t) => t.name === "recall_evidence");
    assert.deepEqual(evidence.inputSchema.required, ["conversation_id"]);
  });

  test("recall_evidence: the user's own conversation, without user_id", async () => {
    // callTool checks structuredContent against the tool's output schema.
    const result = await user.callTool({ name: "recall_evidence", arguments: { conversation_id: CONVERSATION } });
    assert.ok(!result.isError, JSON.stringify(result));
    const ev = result.structuredContent;
    assert.equal(ev.user_id, USER);
    assert.equal(ev.cursor, wantCursor);
    assert.ok(ev.version > 0);
    assert.equal(ev.lagging, false);
    assert.equal(ev.message.role, "assistant");
    assert.equal(JSON.parse(ev.message.content).type, "untrusted_historical_evidence");
    // The text content carries the same JSON, for clients that read only it.
    assert.deepEqual(JSON.parse(result.content[0].text), ev);
  });

  test("recall_evidence: min_cursor, wait and max_tokens", async () => {
    const result = await user.callTool({
      name: "recall_evidence",
      arguments: { conversation_id: CONVERSATION, min_cursor: wantCursor + 5, wait: "200ms", max_tokens: 120 },
    });
    const ev = result.structuredContent;
    assert.equal(ev.lagging, true);
    assert.equal(ev.cursor, wantCursor);
    assert.ok(ev.message === null || Math.ceil(Buffer.byteLength(ev.message.content) / 3) + 4 <= 120);
  });

  test("recall_search: the evidence chosen for a query", async () => {
    const result = await user.callTool({
      name: "recall_search",
      arguments: { conversation_id: CONVERSATION, query: "what did we decide about the database?" },
    });
    assert.ok(!result.isError, JSON.stringify(result));
    assert.equal(result.structuredContent.cursor, wantCursor);
    assert.equal(result.structuredContent.message.role, "assistant");
  });

  test("recall_conversations: the user's conversations", async () => {
    const result = await user.callTool({ name: "recall_conversations", arguments: { limit: 10 } });
    assert.ok(!result.isError, JSON.stringify(result));
    const ids = result.structuredContent.conversations.map((c) => c.conversation_id);
    assert.ok(ids.includes(CONVERSATION), JSON.stringify(ids));
    assert.equal(result.structuredContent.next, null);
  });

  test("a service token names the user, and must", async () => {
    const missingUser = await service.callTool({ name: "recall_evidence", arguments: { conversation_id: CONVERSATION } });
    assert.match(errorText(missingUser), /^user_id_required: /);
    const result = await service.callTool({ name: "recall_evidence", arguments: { user_id: USER, conversation_id: CONVERSATION } });
    assert.equal(result.structuredContent.cursor, wantCursor);
  });

  test("another user's conversation is forbidden", async () => {
    const result = await user.callTool({ name: "recall_evidence", arguments: { user_id: "someone-else", conversation_id: CONVERSATION } });
    assert.match(errorText(result), /^forbidden: /);
    const list = await user.callTool({ name: "recall_conversations", arguments: { user_id: "someone-else" } });
    assert.match(errorText(list), /^forbidden: /);
  });

  test("an unknown conversation", async () => {
    const result = await user.callTool({ name: "recall_evidence", arguments: { conversation_id: "no-such-conversation" } });
    assert.match(errorText(result), /^unknown_conversation: /);
    const search = await user.callTool({ name: "recall_search", arguments: { conversation_id: "no-such-conversation", query: "x" } });
    assert.match(errorText(search), /^unknown_conversation: /);
  });

  test("bad arguments", async () => {
    const wait = await user.callTool({ name: "recall_evidence", arguments: { conversation_id: CONVERSATION, wait: "soon" } });
    assert.match(errorText(wait), /^invalid_wait: /);
    const tooLong = await user.callTool({ name: "recall_evidence", arguments: { conversation_id: CONVERSATION, min_cursor: 1, wait: "31s" } });
    assert.match(errorText(tooLong), /^wait_too_long: /);
    const limit = await user.callTool({ name: "recall_conversations", arguments: { limit: 5000 } });
    assert.match(errorText(limit), /limit/);
    const query = await user.callTool({ name: "recall_search", arguments: { conversation_id: CONVERSATION, query: "" } });
    assert.ok(query.isError);
  });

  test("a conversation's evidence is a resource", async () => {
    const { resourceTemplates } = await user.listResourceTemplates();
    assert.ok(resourceTemplates.some((t) => t.uriTemplate === "recall://conversations/{conversation_id}/evidence"));
    const { contents } = await user.readResource({ uri: `recall://conversations/${CONVERSATION}/evidence` });
    assert.equal(contents[0].mimeType, "application/json");
    assert.equal(JSON.parse(contents[0].text).cursor, wantCursor);
    await assert.rejects(user.readResource({ uri: "recall://conversations/no-such-conversation/evidence" }), /not found/i);
  });
});

test("a wrong token is refused with 401", async () => {
  await assert.rejects(connect("not-a-token"), (err) => err.code === 401);
});
