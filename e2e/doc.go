// Package e2e tests recall from outside, as its users run it: the recall
// binary as a child process (recall dev with the machine's Postgres, with a
// private cluster of its own, and with no Postgres at all; recall publish
// against it), the LangGraph.js example in examples/langgraph-js with
// Node and npm, the clients' own suites (the saver's conformance suite and
// a recall outage among them), real MCP clients (the Go SDK's over stdio,
// the TypeScript SDK's over streamable HTTP, e2e/testdata/mcp-ts), and a
// backup and restore with pg_dump, pg_restore and recall migrate
// (docs/operations.md). It holds tests only.
//
// The tests need Postgres at TEST_DATABASE_URL (default: the machine's,
// postgres@127.0.0.1:5432), PostgreSQL server binaries (on PATH or under
// /usr/lib/postgresql/*/bin) and npm on PATH. They fail, never skip, when
// one is missing. The backup test also needs pg_dump and pg_restore (the
// PostgreSQL client, in the same places): without them it is skipped,
// except when CI is set, where it fails.
package e2e
