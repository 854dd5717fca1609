// Canonicalisation and digests against RFC 8785's examples and the recall
// repository's digest vectors (checkpoint/testdata/digest_vectors.json).

import { test } from "node:test";
import assert from "node:assert/strict";

import {
  CHAIN_START, MessageError, appendEvent, canonicalJSON, chain, messageDigest, newestUserIndex,
  normalizeMessage, prefixDigest, snapshotEvent,
} from "../src/index.js";
import { readRepoJSON } from "./repo.js";

const vectors = readRepoJSON("checkpoint/testdata/digest_vectors.json");

test("RFC 8785 example", () => {
  const input = JSON.parse('{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}');
  assert.equal(canonicalJSON(input), '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}');
});

test("members sorted by UTF-16 code units", () => {
  const v = { "\u20ac": 1, "\r": 2, "\ufb33": 3, 1: 4, "\u{1F600}": 5, "\u0080": 6, "\u00f6": 7 };
  assert.deepEqual(Object.keys(JSON.parse(canonicalJSON(v))).length, 7);
  const order = [...canonicalJSON(v).matchAll(/"([^"]*)":/g)].map((m) => JSON.parse(`"${m[1]}"`));
  assert.deepEqual(order, ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\u{1F600}", "\ufb33"]);
});

test("the chain starts at SHA-256 of recall.v1", () => {
  assert.equal(CHAIN_START.toString("hex"), vectors.chain_start);
});

test("digest vectors", async (t) => {
  assert.ok(vectors.vectors.length > 5);
  for (const v of vectors.vectors) {
    await t.test(`${v.group}/${v.form}`, () => {
      assert.deepEqual(v.messages.map((m) => canonicalJSON(normalizeMessage(m))), v.canonical);
      assert.deepEqual(v.messages.map((m) => messageDigest(m).toString("hex")), v.message_digests);
      assert.deepEqual(chain(v.messages).map((c) => c.toString("hex")), v.chain);
      assert.equal(prefixDigest(v.messages), v.chain.at(-1));
    });
  }
});

test("append event carries the prefix digest", () => {
  const v = vectors.vectors[0];
  const ev = appendEvent("u", "c", v.messages, 3, { eventId: "e" });
  assert.equal(ev.offset, 3);
  assert.equal(ev.prefix_digest, v.chain[3]);
  assert.deepEqual(ev.messages, v.messages.slice(3));
  assert.equal(newestUserIndex(v.messages), v.messages.length - 1);
});

test("a LangChain-like object is digested as the JSON it is sent as", () => {
  const asSent = { lc: 1, type: "constructor", id: ["langchain_core", "messages", "HumanMessage"], kwargs: { content: "hi", id: "m0" } };
  const obj = { toJSON: () => asSent };
  assert.deepEqual(messageDigest(obj), messageDigest(asSent));
  assert.deepEqual(messageDigest(obj), messageDigest({ role: "user", content: "hi", id: "m0" }));
  assert.deepEqual(snapshotEvent("u", "c", [obj]).messages, [asSent]);
});

test("refuses what recall rejects", () => {
  const bad = [
    [{ role: "robot", content: "x" }],
    [{ content: "secret text" }],
    [{ role: "user", content: 7 }],
    [{ role: "user", id: 3 }],
    [{ role: "assistant", tool_calls: { id: "t" } }],
    [{ lc: 1, type: "constructor", id: ["x", "Nope"], kwargs: {} }],
  ];
  for (const msgs of bad) {
    assert.throws(() => snapshotEvent("u", "c", msgs), (err) => err instanceof MessageError && !err.message.includes("secret text"));
  }
  for (const [u, c] of [["", "c"], ["u", ""], ["u".repeat(257), "c"], ["u\0", "c"]]) {
    assert.throws(() => snapshotEvent(u, c, []));
  }
});

test("OpenAI arguments are parsed when they hold JSON", () => {
  const m = { role: "assistant", tool_calls: [
    { id: "a", function: { name: "f", arguments: ' {"x": 1} ' } },
    { id: "b", function: { name: "g", arguments: " not json " } },
    { id: "c", function: { name: "h" } },
    { id: "d", function: { name: "i", arguments: "NaN" } },
  ] };
  assert.deepEqual(normalizeMessage(m).tool_calls.map((c) => c.args), [{ x: 1 }, " not json ", {}, "NaN"]);
});
