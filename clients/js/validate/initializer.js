// The initializer of LangChain's checkpoint saver conformance suite
// (@langchain/langgraph-checkpoint-validation) for withRecall around a
// saver, publishing to a running recall (RECALL_API_URL, and RECALL_TOKEN,
// which must act for any user: recall dev prints one).
//
// Each checkpointer the suite creates publishes as a user of its own, so
// that deleteThread deletes only its conversations in recall. The suite's
// checkpoints hold values that are not messages ("hi", numbers): those
// publishes are refused before anything is sent and reported to onError,
// which counts them; any other failure (recall unreachable, an event it
// refused) fails the run in afterAll.

import { randomUUID } from "node:crypto";
import { MessageError, RecallClient } from "../src/index.js";
import { withRecall } from "../src/langgraph.js";

const env = process.env;

/**
 * An initializer that wraps each saver create() makes with withRecall;
 * destroy(saver), when given, cleans the wrapped saver up.
 */
export function recallInitializer({ name, create, destroy, beforeAll }) {
  const failures = [];
  let published = 0;
  let refused = 0;
  return {
    checkpointerName: name,
    beforeAllTimeout: 30_000,

    async beforeAll() {
      const missing = ["RECALL_API_URL", "RECALL_TOKEN"].filter((k) => !env[k]);
      if (missing.length) throw new Error(`set ${missing.join(", ")}: run \`recall dev\` and paste its export lines`);
      await beforeAll?.();
    },

    async createCheckpointer() {
      const client = new RecallClient({ url: env.RECALL_API_URL, token: env.RECALL_TOKEN });
      const publishEvent = client.publishEvent.bind(client);
      client.publishEvent = async (event) => {
        const ack = await publishEvent(event);
        published++;
        return ack;
      };
      return withRecall(await create(), {
        client,
        userId: `validation-${randomUUID().slice(0, 8)}`,
        onError: (err) => (err instanceof MessageError ? refused++ : failures.push(err)),
      });
    },

    async destroyCheckpointer(saver) {
      await saver.flush();
      await destroy?.(saver.saver);
    },

    afterAll() {
      console.log(`${name}: ${published} events published to recall, ${refused} values that are not messages refused before sending`);
      if (failures.length) throw new Error(`publishing to recall failed ${failures.length} times: ${failures[0].message}`);
    },
  };
}
