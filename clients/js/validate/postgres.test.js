// LangChain's checkpoint saver conformance suite, every test, against
// withRecall around LangGraph's PostgresSaver, each checkpointer in a schema
// of its own in the database at RECALL_SAVER_DATABASE_URL (see
// initializer.js and memory.test.js).

import { randomUUID } from "node:crypto";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";
import pg from "pg";
import { recallInitializer } from "./initializer.js";

const url = process.env.RECALL_SAVER_DATABASE_URL;
// Each saver's pool and schema, to drop and close.
const owned = new WeakMap();

const initializer = recallInitializer({
  name: "withRecall(PostgresSaver)",
  beforeAll() {
    if (!url) throw new Error("set RECALL_SAVER_DATABASE_URL to a Postgres database the suite may create schemas in");
  },
  async create() {
    const schema = `saver_${randomUUID().replaceAll("-", "")}`;
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const saver = new PostgresSaver(pool, undefined, { schema });
    await saver.setup();
    owned.set(saver, { pool, schema });
    return saver;
  },
  async destroy(saver) {
    const { pool, schema } = owned.get(saver);
    await pool.query(`DROP SCHEMA ${schema} CASCADE`);
    await pool.end();
  },
});
validate(initializer);
deltaChannelHistoryTests(initializer);
