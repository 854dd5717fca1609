// LangChain's checkpoint saver conformance suite against withRecall around
// LangGraph's MemorySaver (`npm run validate-saver`; see initializer.js).
//
// The suite runs as its README's "existing test suite" usage says,
// validate(initializer) in a vitest file: its CLI cannot load an
// initializer in the 1.1.1 release (its runner imports a function that its
// build does not export).
//
// The checkpointer is named MemorySaver because it stores exactly what
// MemorySaver stores: the suite knows that MemorySaver keeps every channel's
// value in each checkpoint, not only the changed ones, and skips that one
// test for it by this name ("TODO: MemorySaver doesn't store channel
// deltas"), as it does for MemorySaver alone. postgres.test.js runs the
// whole suite, that test included, around a saver that stores deltas.

import { MemorySaver } from "@langchain/langgraph-checkpoint";
import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";
import { recallInitializer } from "./initializer.js";

const initializer = recallInitializer({ name: "MemorySaver", create: () => new MemorySaver() });
validate(initializer);
// The wrapper hands getDeltaChannelHistory to the wrapped saver: the suite's
// tests of it, which validate() leaves out, run too.
deltaChannelHistoryTests(initializer);
