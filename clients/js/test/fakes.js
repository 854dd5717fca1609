// Stand-ins for a recall that fails, for the adapters' tests: one that
// never answers, one that refuses every request with status and code, and
// the URL of a port nothing listens on.

import { createServer } from "node:http";

function serve(answer) {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => answer(req, res));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const urlOf = (server) => `http://127.0.0.1:${server.address().port}`;

/**
 * Starts the three failing recalls; close() stops them (and ends the
 * requests the slow one holds).
 */
export async function failingRecalls({ status = 401, code = "unauthorized" } = {}) {
  const slow = await serve(() => {});
  const refusing = await serve((req, res) => {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ error: { code, message: "refused" } }));
  });
  const closed = await serve(() => {});
  const closedURL = urlOf(closed);
  await new Promise((resolve) => closed.close(resolve));
  return {
    slowURL: urlOf(slow),
    refusingURL: urlOf(refusing),
    closedURL,
    close() {
      slow.closeAllConnections();
      slow.close();
      refusing.close();
    },
  };
}
