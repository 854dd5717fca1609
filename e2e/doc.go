// Package e2e tests recall from outside, as its users run it: the recall
// binary as a child process (recall dev with the machine's Postgres, with a
// private cluster of its own, and with no Postgres at all; recall publish
// against it), and the LangGraph.js example in examples/langgraph-js with
// Node and npm. It holds tests only.
//
// The tests need Postgres at TEST_DATABASE_URL (default: the machine's,
// postgres@127.0.0.1:5432), PostgreSQL server binaries (on PATH or under
// /usr/lib/postgresql/*/bin) and npm on PATH. They fail, never skip, when
// one is missing.
package e2e
