// The client against a running recall. recall dev prints what to export:
//
//   RECALL_API_URL=… NATS_URL=… RECALL_TOKEN=… RECALL_JWT_SECRET=$(cat .recall-dev/jwt-secret) node --test test/
//
// The search and context tests need POST …/evidence/search and POST …/context.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";

import { RecallClient, RecallError, buildPrompt, newestUserIndex, signToken, snapshotEvent } from "../src/index.js";
import { readRepoJSON } from "./repo.js";

const env = process.env;
const missing = ["RECALL_API_URL", "RECALL_TOKEN", "NATS_URL", "RECALL_JWT_SECRET"].filter((k) => !env[k]);
if (missing.length) {
  throw new Error(`set ${missing.join(", ")}: run \`recall dev\` and paste its export lines (the JWT secret is in .recall-dev/jwt-secret)`);
}

const sample = (name) => readRepoJSON(`examples/conversations/${name}.json`);
const key = () => [`js-${randomUUID().slice(0, 12)}`, `conv-${randomUUID().slice(0, 8)}`];
const userClient = (user, opts = {}) =>
  new RecallClient({ url: env.RECALL_API_URL, token: signToken(env.RECALL_JWT_SECRET, user, { ttlSeconds: 600 }), ...opts });
const turns = (history) => history.flatMap((m, i) => (m.role === "user" ? [history.slice(0, i + 1)] : []));

async function publishTurns(client, user, conv, history) {
  const acks = [];
  for (const prefix of turns(history)) acks.push(await client.publish(user, conv, prefix));
  return { acks, ev: await client.waitFor(user, conv, newestUserIndex(history)) };
}

describe("over HTTP", () => {
  test("append mode, turn by turn, then read", async () => {
    const [user, conv] = key();
    const history = sample("planning").messages;
    const client = userClient(user, { mode: "append" });
    const { acks, ev } = await publishTurns(client, user, conv, history);
    assert.equal(acks[0].offset, 0);
    assert.ok(acks.slice(1).every((a) => a.offset > 0), JSON.stringify(acks.map((a) => a.offset)));
    assert.equal(acks.reduce((n, a) => n + a.sent, 0), history.length);
    assert.equal(ev.cursor, newestUserIndex(history));
    assert.equal(ev.message_count, history.length);
    assert.equal(ev.lagging, false);
    assert.equal(ev.message.role, "assistant");
    assert.equal(JSON.parse(ev.message.content).type, "untrusted_historical_evidence");
    const prompt = buildPrompt({ role: "system", content: "Be brief." }, ev, history);
    assert.deepEqual(prompt[1], ev.message);
    assert.equal(prompt.length, 2 + history.length - ev.cursor);
  });

  test("duplicate event id", async () => {
    const [user, conv] = key();
    const client = userClient(user);
    const ev = snapshotEvent(user, conv, [{ role: "user", content: "hello", id: "m0" }]);
    const first = await client.publishEvent(ev);
    const again = await client.publishEvent(ev);
    assert.equal(first.duplicate, false);
    assert.equal(again.duplicate, true);
    assert.equal(again.stream_seq, first.stream_seq);
  });

  test("refusals", async () => {
    const [user, conv] = key();
    const client = userClient(user);
    const refused = async (p, status, code) => {
      await assert.rejects(p, (err) => err instanceof RecallError && err.status === status && (code === undefined || err.code === code));
    };
    await refused(client.publishEvent({ schema: "recall.checkpoint.v1", event_id: "x", user_id: user }), 400, "invalid");
    await refused(client.publish("someone-else", conv, [{ role: "user", content: "hi" }]), 403, "forbidden");
    await refused(client.evidence("someone-else", conv), 403, "forbidden");
    await refused(new RecallClient({ url: env.RECALL_API_URL, token: "nope" }).evidence(user, conv), 401, "unauthorized");
  });

  test("lagging and unknown", async () => {
    const [user, conv] = key();
    const service = new RecallClient({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN });
    const ev = await service.evidence(user, conv, { minCursor: 5, wait: 0.2 });
    assert.equal(ev.lagging, true);
    assert.deepEqual([ev.version, ev.cursor, ev.message], [0, 0, null]);
  });

  test("delete", async () => {
    const [user, conv] = key();
    const client = userClient(user);
    const history = sample("coding").messages;
    await publishTurns(client, user, conv, history);
    await client.delete(user, conv);
    let ev = await client.evidence(user, conv);
    assert.deepEqual([ev.version, ev.cursor, ev.message], [0, 0, null]);
    await client.publish(user, conv, history);
    ev = await client.evidence(user, conv, { minCursor: 1, wait: 1 });
    assert.deepEqual([ev.version, ev.cursor], [0, 0]);
  });

  test("a user's conversations, export and deletion", async () => {
    const [user] = key();
    const client = userClient(user);
    const history = sample("planning").messages;
    for (const conv of ["c-1", "c-2"]) await publishTurns(client, user, conv, history);

    const first = await client.conversations(user, { limit: 1 });
    assert.deepEqual(first.conversations.map((c) => c.conversation_id), ["c-1"]);
    assert.equal(first.next, "c-1");
    assert.equal(first.conversations[0].cursor, newestUserIndex(history));
    const second = await client.conversations(user, { limit: 1, after: first.next });
    assert.deepEqual(second.conversations.map((c) => c.conversation_id), ["c-2"]);
    assert.equal(second.next, null);
    const all = [];
    for await (const c of client.allConversations(user, { limit: 1 })) all.push(c.conversation_id);
    assert.deepEqual(all, ["c-1", "c-2"]);

    const lines = [];
    for await (const line of client.export(user)) lines.push(line);
    const kinds = lines.map((l) => l.type).filter((t, i, a) => i === 0 || a[i - 1] !== t);
    assert.deepEqual(kinds.filter((t) => t !== "rejection"), ["conversation", "entry", "end"]);
    const end = lines.at(-1);
    assert.deepEqual(end, {
      type: "end",
      conversations: 2,
      entries: lines.filter((l) => l.type === "entry").length,
      rejections: lines.filter((l) => l.type === "rejection").length,
    });
    assert.ok(end.entries > 0);

    const other = userClient(`${user}-other`);
    const refused = (err) => err instanceof RecallError && err.status === 403 && err.code === "forbidden";
    await assert.rejects(other.conversations(user), refused);
    await assert.rejects(async () => {
      for await (const _ of other.export(user));
    }, refused);
    await assert.rejects(other.deleteUser(user), refused);
    await assert.rejects(client.conversations(user, { limit: 0 }), (err) => err instanceof RecallError && err.status === 400);

    await client.deleteUser(user);
    assert.deepEqual(await client.conversations(user), { conversations: [], next: null });
    // The deleted key stays deleted; a new conversation id is accepted.
    await client.publish(user, "c-1", history);
    const ev = await client.evidence(user, "c-1", { minCursor: 1, wait: 1 });
    assert.deepEqual([ev.version, ev.cursor], [0, 0]);
    await publishTurns(client, user, "c-3", history);
    assert.deepEqual((await client.conversations(user)).conversations.map((c) => c.conversation_id), ["c-3"]);
    await client.deleteUser(user);
  });

  test("search (needs POST …/evidence/search)", async () => {
    const [user, conv] = key();
    const client = userClient(user);
    const history = sample("planning").messages;
    await publishTurns(client, user, conv, history);
    const got = await client.search(user, conv, "what did we decide about the database?", { maxTokens: 400 });
    for (const k of ["version", "cursor", "buckets", "message", "lagging"]) assert.ok(k in got, k);
    assert.equal(got.cursor, newestUserIndex(history));
    await assert.rejects(client.search(user, conv, ""), (err) => err instanceof RecallError && err.status === 400);
  });

  test("context (needs POST …/context)", async () => {
    const [user, conv] = key();
    const client = userClient(user);
    const history = sample("planning").messages;
    await publishTurns(client, user, conv, history);
    const got = await client.context(user, conv, history, {
      system: "You are a planning assistant.",
      budget: { context_window: 32768, prompt: 16000 },
      minCursor: newestUserIndex(history),
      wait: 5,
    });
    assert.equal(got.messages[0].role, "system");
    // The whole history fits: evidence chosen from older messages would be
    // empty, so there is none (it never repeats what the prompt holds).
    assert.equal(got.dropped_turns, 0);
    assert.equal(got.evidence.included, false);
    assert.equal(got.messages[1].role, history[0].role === "system" ? history[1].role : history[0].role);
    assert.ok(got.estimated_tokens.total <= got.limit);
    assert.equal(got.messages.at(-1).content, history.at(-1).content);
  });
});

describe("over NATS", () => {
  let nc;
  before(async () => {
    nc = await connect({ servers: env.NATS_URL, name: "recall client tests" });
  });
  after(async () => {
    await nc?.drain();
  });

  test("snapshots and appends through JetStream", async () => {
    const [user, conv] = key();
    const history = sample("coding").messages;
    // Reads need a token for the user; publishing over NATS needs none.
    const client = new RecallClient({ url: env.RECALL_API_URL, token: signToken(env.RECALL_JWT_SECRET, user), nats: nc, mode: "append" });
    const { acks, ev } = await publishTurns(client, user, conv, history);
    assert.ok(acks.every((a) => a.stream_seq > 0));
    assert.ok(acks.slice(1).every((a) => a.offset > 0));
    assert.equal(ev.cursor, newestUserIndex(history));
    assert.ok(Object.values(ev.buckets).flat().length > 0);
  });

  test("a wrong prefix digest is not applied", async () => {
    const [user, conv] = key();
    const history = sample("planning").messages;
    const client = new RecallClient({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN, nats: nc });
    const k = newestUserIndex(history.slice(0, 5));
    await client.publish(user, conv, history.slice(0, k + 1));
    const before = await client.waitFor(user, conv, k);
    const bad = snapshotEvent(user, conv, history);
    Object.assign(bad, { offset: k + 1, prefix_digest: "0".repeat(64), messages: history.slice(k + 1) });
    await client.publishEvent(bad);
    const ev = await client.evidence(user, conv, { minCursor: newestUserIndex(history), wait: 1 });
    assert.equal(ev.cursor, before.cursor);
    assert.equal(ev.lagging, true);
  });
});
