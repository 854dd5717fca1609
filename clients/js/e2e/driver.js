// What an outage driver shares: the lines e2e.TestClients writes to its
// stdin ("stopped", "started") and its checks.

import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

/** Waits for word, the next line on stdin. */
export async function waitFor(word) {
  const { value, done } = await lines.next();
  if (done || value.trim() !== word) throw new Error(`want "${word}" on stdin, got ${done ? "its end" : JSON.stringify(value)}`);
}

/** Fails the driver, saying what, unless ok. */
export function check(ok, what) {
  if (!ok) throw new Error(`FAIL: ${what}`);
}

/** Stops reading stdin, so that the driver can exit. */
export function done() {
  lines.return?.();
  process.stdin.destroy();
}
