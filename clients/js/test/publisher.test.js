// The Publisher the saver and the adapters publish through, with a
// recording client in place of recall: appends of what is new, events
// spaced per conversation, publishing deferred past the caller, and the
// snapshot that heals a conversation whose cursor recall never advanced.

import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { prefixDigest } from "../src/index.js";
import { Publisher } from "../src/publisher.js";

function recorder() {
  return {
    events: [],
    async publishEvent(event) {
      this.events.push(event);
      return { stream_seq: this.events.length, duplicate: false };
    },
  };
}

const history = (n) => Array.from({ length: n }, (_, i) => ({ id: `m${i}`, role: i % 2 ? "assistant" : "user", content: `message ${i}` }));
const spans = (events) => events.map((e) => [e.offset, e.messages.length]);

describe("Publisher", () => {
  test("a snapshot, then appends of what is new, nothing when nothing is", async () => {
    const client = recorder();
    const p = new Publisher(client);
    p.schedule("u", "c", history(2));
    await p.flush();
    p.schedule("u", "c", history(4));
    await p.flush();
    p.schedule("u", "c", history(4));
    await p.flush();
    assert.deepEqual(spans(client.events), [[0, 2], [2, 2]]);
    assert.equal(client.events[1].prefix_digest, prefixDigest(history(2)));
  });

  test("a changed message makes the next event a snapshot", async () => {
    const client = recorder();
    const p = new Publisher(client);
    p.schedule("u", "c", history(2));
    await p.flush();
    const changed = history(4);
    changed[1] = { ...changed[1], content: "edited" };
    p.schedule("u", "c", changed);
    await p.flush();
    assert.deepEqual(spans(client.events), [[0, 2], [0, 4]]);
  });

  test("minIntervalMs spaces a conversation's events; what comes meanwhile goes in one", async () => {
    const client = recorder();
    const p = new Publisher(client, { minIntervalMs: 200 });
    const started = Date.now();
    for (let n = 2; n <= 10; n += 2) {
      p.schedule("u", "c", history(n));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await p.flush();
    assert.deepEqual(spans(client.events), [[0, 2], [2, 8]]);
    assert.ok(Date.now() - started >= 200);
  });

  test("defer publishes after the caller's turn: what it schedules meanwhile goes in one event", async () => {
    const client = recorder();
    const p = new Publisher(client, { defer: true });
    p.schedule("u", "c", history(2));
    assert.equal(client.events.length, 0, "nothing is published in the caller's turn");
    p.schedule("u", "c", history(3));
    await p.flush();
    assert.deepEqual(spans(client.events), [[0, 3]]);
  });

  test("a cursor that stays behind a history published long enough ago heals with a snapshot", async () => {
    const client = recorder();
    const healed = [];
    const p = new Publisher(client, { healAfterMs: 50, onHeal: (meta) => healed.push(meta) });
    p.schedule("u", "c", history(3), { conversationId: "c" });
    await p.flush();
    p.observe("u", "c", 0); // from here on, publishes are watched
    p.schedule("u", "c", history(5), { conversationId: "c" });
    await p.flush();
    p.observe("u", "c", 4); // recall has it: confirmed
    p.schedule("u", "c", history(7), { conversationId: "c" });
    await p.flush();
    p.observe("u", "c", 4); // not yet, but not long ago
    assert.deepEqual(healed, []);
    await new Promise((resolve) => setTimeout(resolve, 60));
    p.observe("u", "c", 4); // still not, long after: recall missed it
    assert.deepEqual(healed, [{ conversationId: "c" }]);
    p.schedule("u", "c", history(9), { conversationId: "c" });
    await p.flush();
    assert.deepEqual(spans(client.events), [[0, 3], [3, 2], [5, 2], [0, 9]]);
  });

  test("a failed publish is reported; the next one sends what recall missed", async () => {
    const client = recorder();
    const errors = [];
    const p = new Publisher(client, { onError: (err, meta) => errors.push([err.message, meta]) });
    p.schedule("u", "c", history(2));
    await p.flush();
    const publish = client.publishEvent;
    client.publishEvent = async () => {
      throw new TypeError("fetch failed");
    };
    p.schedule("u", "c", history(4), { conversationId: "c" });
    await p.flush();
    client.publishEvent = publish;
    p.schedule("u", "c", history(6));
    await p.flush();
    assert.deepEqual(errors, [["fetch failed", { conversationId: "c" }]]);
    assert.deepEqual(spans(client.events), [[0, 2], [2, 4]]);
  });
});
