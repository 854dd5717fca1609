// Package api serves recall's HTTP API, described in docs/openapi.yaml.
//
// Routes:
//
//	GET    /v1/users/{user_id}/conversations/{conversation_id}/evidence
//	POST   /v1/users/{user_id}/conversations/{conversation_id}/context
//	DELETE /v1/users/{user_id}/conversations/{conversation_id}
//	GET    /v1/users/{user_id}/conversations/{conversation_id}/rejections
//	GET    /v1/users/{user_id}/conversations   the user's conversations, a page at a time
//	GET    /v1/users/{user_id}/export          everything held for the user, as JSON lines
//	DELETE /v1/users/{user_id}                 every conversation of the user
//	POST   /v1/checkpoints   publish a checkpoint event over HTTP
//	GET    /healthz   process up
//	GET    /readyz    dependencies reachable and not draining
//	GET    /metrics   Prometheus exposition
//	GET    /inspect/  the evidence inspector's page, and its data under
//	                  /inspect/api/ for a recall:service token (inspect.go)
//	       /mcp       the Model Context Protocol server Config.MCP builds
//	                  (package mcp), for any verified token (reads.go)
//
// The evidence routes need a bearer JWT with exp: HS256 with the API's
// secret (or a previous one, during a rotation), or RS256, ES256 or EdDSA
// with a key of an [IdentityProvider]'s JWKS, whose iss and aud are checked
// where configured. The algorithm follows the key: an HS256 token is never
// verified with a public key, nor another with the secret. A token acts for
// the user named by its sub claim; a token whose scope holds recall:service
// acts for any user. Errors are {"error":{"code","message"}}.
//
// The handler reads through a small [Source] interface, so that it knows
// nothing of Postgres, and long-polls (?min_cursor=N&wait=2s) on a
// [Notifier] that wakes waiters when a conversation's state changes, so that
// a waiting request reads only when woken (recall's notifier wakes it on a
// change and, in case a wake-up was lost, once a second besides). The
// requests waiting on one key share one subscription and one read per
// wake-up, whether they came for evidence or for a context; at most
// Config.MaxWaiters wait at once (past it, 429 with Retry-After), and every
// read has a deadline (Config.ReadTimeout).
//
// Servers of other protocols mounted on the API, such as the MCP server at
// /mcp, read through [Reads]: the evidence, search and listing routes' own
// reads for a verified [Caller], which authorise and check their arguments
// as the routes do and fail with the routes' *Error.
//
// The context route assembles the bounded prompt of an agent's next model
// call from the checkpoint in its body and the conversation's evidence,
// with package assemble; it stores nothing.
package api
