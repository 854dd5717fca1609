// vitest runs LangChain's checkpoint saver conformance suite (validate/),
// and nothing else: the client's own tests run with node --test (test/).
export default {
  test: {
    include: ["validate/**/*.test.js"],
    globals: true,
    testTimeout: 30_000,
  },
};
