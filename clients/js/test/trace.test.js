// The client sends a W3C traceparent header when given one: checked against
// a local HTTP server that records the requests (no recall needed).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import { RecallClient } from "../src/index.js";

const TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TP2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const evidence = { version: 1, cursor: 0, message_count: 0, buckets: {}, message: null };

describe("traceparent", () => {
  let server, url;
  const seen = [];
  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        seen.push({ method: req.method, path: new URL(req.url, "http://x").pathname, traceparent: req.headers.traceparent });
        res.setHeader("Content-Type", "application/json");
        const body = req.url.startsWith("/v1/checkpoints") ? { stream_seq: 1, duplicate: false } : evidence;
        res.end(JSON.stringify(body));
      });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => server.close());

  test("a call's traceparent is sent on ingest and reads", async () => {
    seen.length = 0;
    const client = new RecallClient({ url, token: "t" });
    await client.publish("u", "c", [{ id: "m0", role: "user", content: "hi" }], { traceparent: TP });
    await client.evidence("u", "c", { traceparent: TP });
    await client.search("u", "c", "q", { traceparent: TP });
    await client.context("u", "c", [{ id: "m0", role: "user", content: "hi" }], { traceparent: TP });
    await client.evidence("u", "c");
    assert.deepEqual(
      seen.map((r) => [r.method, r.path.split("/").at(-1), r.traceparent]),
      [
        ["POST", "checkpoints", TP],
        ["GET", "evidence", TP],
        ["POST", "search", TP],
        ["POST", "context", TP],
        ["GET", "evidence", undefined],
      ],
    );
  });

  test("the client's traceparent, a string or a function, is the default", async () => {
    seen.length = 0;
    let current = TP;
    const client = new RecallClient({ url, token: "t", traceparent: () => current });
    await client.evidence("u", "c");
    current = undefined;
    await client.evidence("u", "c");
    await client.evidence("u", "c", { traceparent: TP2 });
    await new RecallClient({ url, token: "t", traceparent: TP2 }).publishDelete("u", "c");
    assert.deepEqual(
      seen.map((r) => r.traceparent),
      [TP, undefined, TP2, TP2],
    );
  });

  test("a malformed traceparent is refused before anything is sent", async () => {
    seen.length = 0;
    const client = new RecallClient({ url, token: "t" });
    await assert.rejects(client.evidence("u", "c", { traceparent: "not-a-traceparent" }), TypeError);
    assert.equal(seen.length, 0);
  });
});
