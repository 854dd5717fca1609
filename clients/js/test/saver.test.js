// withRecall around LangGraph's MemorySaver, with a recording client in
// place of recall: what it publishes, when, and that recall's failures
// never fail the graph. No recall needed.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { AIMessage, HumanMessage } from "@langchain/core/messages";

import { RecallError, chain, prefixDigest } from "../src/index.js";
import { withRecall } from "../src/langgraph.js";

// recorder is a RecallClient stand-in: it records events and deletions, and
// fails while failWith is set.
function recorder() {
  return {
    events: [],
    deleted: [],
    failWith: null,
    async publishEvent(event) {
      if (this.failWith) throw this.failWith;
      this.events.push(event);
      return { stream_seq: this.events.length, duplicate: false };
    },
    async delete(userId, conversationId) {
      if (this.failWith) throw this.failWith;
      this.deleted.push([userId, conversationId]);
    },
  };
}

// echoGraph answers each user message with one assistant message.
function echoGraph(checkpointer) {
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [new AIMessage(`noted: ${state.messages.at(-1).content}`)] }))
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer });
}

function setup(options = {}) {
  const client = recorder();
  const errors = [];
  const saver = withRecall(new MemorySaver(), { client, onError: (err, ctx) => errors.push([err, ctx]), ...options });
  return { client, errors, saver, graph: echoGraph(saver) };
}

const turn = (graph, text, thread = "t-1", user = "u-1") =>
  graph.invoke({ messages: [new HumanMessage(text)] }, { configurable: { thread_id: thread, user_id: user } });

describe("withRecall", () => {
  test("publishes a snapshot, then appends of what is new, once per change", async () => {
    const { client, errors, saver, graph } = setup();
    await turn(graph, "We must ship by Friday.");
    await turn(graph, "Use Postgres.");
    await saver.flush();
    assert.deepEqual(errors, []);
    const state = await graph.getState({ configurable: { thread_id: "t-1" } });
    const history = state.values.messages;
    assert.equal(history.length, 4);
    // Each event extends the last: a snapshot first, then appends.
    assert.equal(client.events[0].offset, 0);
    let held = 0;
    for (const ev of client.events) {
      assert.equal(ev.user_id, "u-1");
      assert.equal(ev.conversation_id, "t-1");
      assert.equal(ev.offset, held, "each event starts where the last ended");
      if (ev.offset > 0) assert.equal(ev.prefix_digest, prefixDigest(history.slice(0, ev.offset)));
      assert.ok(ev.messages.length > 0, "no event without new messages");
      held += ev.messages.length;
    }
    assert.equal(held, history.length);
    // The LangChain constructor form, with the graph's message ids.
    assert.deepEqual(client.events[0].messages[0].id.at(-1), "HumanMessage");
    assert.equal(client.events[0].messages[0].kwargs.id, history[0].id);
  });

  test("returns the wrapped saver's result, and reads and lists what it holds", async () => {
    const { saver, graph } = setup();
    await turn(graph, "hello");
    const config = { configurable: { thread_id: "t-1" } };
    const mine = await saver.getTuple(config);
    const theirs = await saver.saver.getTuple(config);
    assert.deepEqual(mine, theirs);
    const listed = [];
    for await (const t of saver.list(config)) listed.push(t.config.configurable.checkpoint_id);
    const wrapped = [];
    for await (const t of saver.saver.list(config)) wrapped.push(t.config.configurable.checkpoint_id);
    assert.deepEqual(listed, wrapped);
    assert.ok(listed.length >= 2);
  });

  test("an outage never fails a step; the next put catches up with an append", async () => {
    const { client, errors, saver, graph } = setup();
    await turn(graph, "first");
    await saver.flush();
    const before = client.events.length;
    client.failWith = new TypeError("fetch failed");
    await turn(graph, "second, while recall is down");
    await saver.flush();
    assert.equal(client.events.length, before);
    assert.ok(errors.length > 0);
    assert.equal(errors[0][1].threadId, "t-1");
    client.failWith = null;
    await turn(graph, "third, recall is back");
    await saver.flush();
    const history = (await graph.getState({ configurable: { thread_id: "t-1" } })).values.messages;
    // The first put after the outage sends what recall missed, as an append
    // from what it held; the turn's own messages follow.
    const caughtUp = client.events[before];
    assert.deepEqual([caughtUp.offset, caughtUp.messages.length], [2, 2]);
    assert.equal(caughtUp.messages[0].kwargs.content, "second, while recall is down");
    const last = client.events.at(-1);
    assert.equal(last.offset + last.messages.length, history.length);
  });

  test("after recall refuses an event, the next publish is a snapshot", async () => {
    const { client, errors, saver, graph } = setup();
    await turn(graph, "first");
    await saver.flush();
    client.failWith = new RecallError(400, "invalid", "bad event");
    await turn(graph, "second");
    await saver.flush();
    client.failWith = null;
    await turn(graph, "third");
    await saver.flush();
    assert.ok(errors.some(([err]) => err instanceof RecallError));
    const healed = client.events.find((ev, i) => i > 0 && ev.offset === 0);
    assert.ok(healed, "a snapshot after the refusal");
    assert.equal(healed.messages.length, 4, "the whole history the put held");
  });

  test("what cannot be published is reported, and the graph goes on", async () => {
    const { client, errors, saver } = setup();
    const cp = (messages, id) => ({
      v: 4, id, ts: new Date().toISOString(),
      channel_values: { messages }, channel_versions: { messages: 1 }, versions_seen: {},
    });
    const meta = { source: "loop", step: 0, parents: {} };
    // No user: neither in the options nor in the configurable.
    await saver.put({ configurable: { thread_id: "t-2", checkpoint_ns: "" } }, cp([new HumanMessage("hi")], "1"), meta, {});
    // Not messages.
    await saver.put({ configurable: { thread_id: "t-2", checkpoint_ns: "", user_id: "u" } }, cp(["hi", 7], "2"), meta, {});
    await saver.flush();
    assert.equal(client.events.length, 0);
    assert.equal(errors.length, 2);
    assert.match(errors[0][0].message, /no user id/);
    assert.equal(errors[1][0].name, "MessageError");
    assert.ok(!errors[1][0].message.includes("hi"), "errors never carry message text");
    // A subgraph's checkpoint is not a conversation.
    await saver.put({ configurable: { thread_id: "t-2", checkpoint_ns: "child:1", user_id: "u" } }, cp([new HumanMessage("hi")], "3"), meta, {});
    // A callback that throws does not fail the put either.
    const { saver: loud } = setup({ onError: () => { throw new Error("boom"); } });
    await loud.put({ configurable: { thread_id: "t-3", checkpoint_ns: "" } }, cp([new HumanMessage("hi")], "4"), meta, {});
    await saver.flush();
    assert.equal(client.events.length, 0);
  });

  test("a static userId and a chosen channel", async () => {
    const client = recorder();
    const saver = withRecall(new MemorySaver(), { client, userId: "u-static", channel: "history", onError: (err) => assert.fail(err) });
    const cp = { v: 4, id: "1", ts: new Date().toISOString(), channel_values: { history: [{ role: "user", content: "hi", id: "m0" }] }, channel_versions: {}, versions_seen: {} };
    await saver.put({ configurable: { thread_id: "t-4", checkpoint_ns: "" } }, cp, { source: "input", step: -1, parents: {} }, {});
    await saver.flush();
    assert.deepEqual(client.events.map((e) => [e.user_id, e.conversation_id, e.messages.length]), [["u-static", "t-4", 1]]);
    assert.equal(chain(client.events[0].messages).length, 2);
  });

  test("deleteThread deletes in the wrapped saver, then in recall", async () => {
    const { client, saver, graph } = setup();
    await turn(graph, "hello", "t-5", "u-5");
    await saver.deleteThread("t-5");
    assert.equal(await saver.saver.getTuple({ configurable: { thread_id: "t-5" } }), undefined);
    assert.deepEqual(client.deleted, [["u-5", "t-5"]]);
    // recall down: the wrapped saver's deletion stands, and the error is thrown.
    await turn(graph, "again", "t-6", "u-6");
    await saver.flush();
    client.failWith = new TypeError("fetch failed");
    await assert.rejects(saver.deleteThread("t-6"), /fetch failed/);
    assert.equal(await saver.saver.getTuple({ configurable: { thread_id: "t-6" } }), undefined);
    // A thread this process never saw, without a static user: it cannot say whose.
    client.failWith = null;
    await assert.rejects(saver.deleteThread("t-unknown"), /user is unknown/);
  });

  test("the wrapped saver's failure is the put's", async () => {
    const inner = new MemorySaver();
    inner.put = async () => {
      throw new Error("disk full");
    };
    const saver = withRecall(inner, { client: recorder() });
    await assert.rejects(echoGraph(saver).invoke({ messages: [new HumanMessage("x")] }, { configurable: { thread_id: "t", user_id: "u" } }), /disk full/);
  });

  test("refuses to wrap nothing", () => {
    assert.throws(() => withRecall(undefined, { client: recorder() }), TypeError);
  });
});
