// Package mcp serves recall's evidence over the Model Context Protocol, on
// the protocol's official Go SDK, so that an agent or a desktop assistant
// that speaks MCP reads recall without a client library.
//
// One server definition, [New], holds the tools and the resource template;
// it reads through a small [Backend] interface with two implementations:
//
//   - [NewClientBackend], a client of recall's HTTP API acting with one
//     bearer token: `recall mcp` serves it over stdio ([Server.Serve]);
//   - [NewReadsBackend], the API's own reads ([api.Reads]) for the
//     request's verified caller: the API serves it at /mcp over the
//     streamable HTTP transport ([Server.HTTPHandler], mounted with
//     api.Config.MCP).
//
// The tools, each with a JSON schema for its input and its structured
// output:
//
//   - recall_evidence (conversation_id; optional min_cursor, wait,
//     max_tokens): the evidence message to put into the next prompt, with
//     its cursor, version and lagging, as GET …/evidence answers them;
//   - recall_search (conversation_id, query; optional max_tokens): the
//     evidence selected for a query, as POST …/evidence/search answers it;
//   - recall_conversations (optional after, limit): a page of the user's
//     conversations.
//
// Every tool takes user_id: optional with a user's own token (it must then
// be that user), required with a recall:service token. A conversation's
// evidence is also a resource, recall://conversations/{conversation_id}/evidence
// (for a service token, recall://users/{user_id}/conversations/{conversation_id}/evidence).
//
// Errors are MCP tool errors whose text starts with the API's code
// ("forbidden: …", "invalid_wait: …", "unknown_conversation: …"). The
// server never logs arguments: no query, message or id appears in its log
// lines.
package mcp
