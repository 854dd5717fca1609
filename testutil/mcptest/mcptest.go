// Package mcptest helps tests drive recall's MCP server with the Go SDK's
// client.
package mcptest

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call calls the tool name with args and returns its structured output, or,
// when the tool failed, its error text. A protocol error fails the test.
func Call(t testing.TB, cs *sdk.ClientSession, name string, args map[string]any) (out map[string]any, toolError string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		if len(res.Content) == 0 {
			t.Fatalf("%s: a tool error without text", name)
		}
		text, _ := res.Content[0].(*sdk.TextContent)
		if text == nil {
			t.Fatalf("%s: a tool error whose content is %T, not text", name, res.Content[0])
		}
		return nil, text.Text
	}
	out, _ = res.StructuredContent.(map[string]any)
	return out, ""
}
