// waitFor waits for the cursor and, with minMessages, for the messages
// after it: checked against a local HTTP server whose evidence covers the
// reply to the newest user message only from its third answer on (no recall
// needed).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import { RecallClient } from "../src/index.js";

describe("waitFor", () => {
  let server, url;
  let answers = 0;
  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        answers++;
        res.setHeader("Content-Type", "application/json");
        res.end(JSON.stringify({ version: answers, cursor: 2, message_count: answers >= 3 ? 4 : 3, buckets: {}, message: null, lagging: false }));
      });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => server.close());

  test("the cursor alone: the first answer that reaches it", async () => {
    answers = 0;
    const ev = await new RecallClient({ url, token: "t" }).waitFor("u", "c", 2);
    assert.deepEqual([ev.cursor, ev.message_count, answers], [2, 3, 1]);
  });

  test("minMessages: the first answer that also covers the reply", async () => {
    answers = 0;
    const ev = await new RecallClient({ url, token: "t" }).waitFor("u", "c", 2, { minMessages: 4, timeoutMs: 5_000 });
    assert.deepEqual([ev.cursor, ev.message_count, answers], [2, 4, 3]);
  });

  test("minMessages never reached: an error after timeoutMs", async () => {
    answers = -1_000;
    await assert.rejects(new RecallClient({ url, token: "t" }).waitFor("u", "c", 2, { minMessages: 4, timeoutMs: 300 }), /3 messages, short of 2 and 4/);
  });
});
