// Files of the recall repository the tests read: the digest vectors and the
// sample conversations. RECALL_REPO names the repository; by default it is
// the one this client sits in.

import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const dir = process.env.RECALL_REPO;
const root = dir ? pathToFileURL(dir.endsWith("/") ? dir : `${dir}/`) : new URL("../../../", import.meta.url);

export function readRepoJSON(path) {
  return JSON.parse(readFileSync(fileURLToPath(new URL(path, root)), "utf8"));
}
