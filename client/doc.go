// Package client reads from recall's HTTP API: the evidence of a
// conversation, a search of it, the bounded prompt of the next model call,
// and a user's conversations, export and deletion. It is the Go
// counterpart of the TypeScript and Python clients' read calls; package
// publisher sends the checkpoints.
//
// It uses the standard library alone. Every method takes a context, which
// bounds the whole call (for Export, the whole stream); a Client is safe
// for concurrent use.
//
//	c, err := client.New("http://127.0.0.1:8080", os.Getenv("RECALL_TOKEN"))
//	if err != nil {
//		return err
//	}
//	ev, err := c.Evidence(ctx, "user-1", "conversation-1", &client.EvidenceOptions{
//		MinCursor: newestUserIndex, // wait until this message is summarised…
//		Wait:      2 * time.Second, // …for at most 2s
//	})
//	if err != nil {
//		return err
//	}
//	if ev.Message != nil {
//		prompt = append(prompt, systemMessage, ev.Message) // right after the system message
//	}
//
// An error answer of the API is an [*APIError] with its status, code and
// message; branch on it with [errors.As]. An export that ends without its
// end line fails with an error that wraps [ErrExportIncomplete]:
//
//	for line, err := range c.Export(ctx, "user-1") {
//		if err != nil {
//			return err // ask again: the export was cut short or refused
//		}
//		save(line)
//	}
//
// The routes and their fields are documented in docs/openapi.yaml.
package client
