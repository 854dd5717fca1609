package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallhq/recall/testutil/mcptest"
	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/testutil/proctest"
)

// mcpSnippet is the entry recall dev prints for an MCP client's
// configuration.
type mcpSnippet struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// mcpSnippet reads the mcpServers entry of recall dev's banner.
func (d *devProc) mcpSnippet(t *testing.T) mcpSnippet {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(d.Stdout.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, `{"mcpServers"`) {
			continue
		}
		var cfg struct {
			MCPServers map[string]mcpSnippet `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(line), &cfg); err != nil {
			t.Fatalf("the banner's MCP snippet is not JSON: %v\n%s", err, line)
		}
		s, ok := cfg.MCPServers["recall"]
		if !ok || s.Command == "" || s.Env["RECALL_TOKEN"] == "" || s.Env["RECALL_API_URL"] != d.APIURL {
			t.Fatalf("the banner's MCP snippet has no recall server with the API's URL and a token: %s", line)
		}
		return s
	}
	t.Fatalf("recall dev printed no MCP snippet:\n%s", d.Stdout.String())
	return mcpSnippet{}
}

// TestMCP runs real MCP clients against recall dev: the Go SDK's client
// starts the command of the MCP snippet recall dev prints (recall mcp,
// over stdio), and the TypeScript SDK's client (e2e/testdata/mcp-ts, from
// npm) speaks streamable HTTP to the API's /mcp. Both list the tools, call
// each, and are refused as the API refuses: a wrong token, another user's
// conversation, an unknown conversation, a bad argument.
func TestMCP(t *testing.T) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the TypeScript SDK's MCP client (install Node.js 20 or later, with npm): %v", tool, err)
		}
	}
	ts := filepath.Join(t.TempDir(), "mcp-ts")
	copyTree(t, filepath.Join("testdata", "mcp-ts"), ts)
	runIn(t, ts, proctest.Env(), 5*time.Minute, "npm", "ci", "--no-audit", "--no-fund")

	d := startDev(t, devConfig{DatabaseURL: pgtest.UncreatedDatabase(t)})
	c := sample(t, "planning")
	runRecall(t, d.env(), "publish", "--example", "planning", "--turns", "--wait")
	snippet := d.mcpSnippet(t)

	t.Run("go-sdk-stdio", func(t *testing.T) {
		testMCPStdio(t, snippet, c)
	})
	t.Run("typescript-sdk-http", func(t *testing.T) {
		runIn(t, ts, proctest.Env(
			"RECALL_MCP_URL="+d.APIURL+"/mcp",
			"RECALL_USER_TOKEN="+snippet.Env["RECALL_TOKEN"],
			"RECALL_TOKEN="+d.Token,
			"RECALL_WANT_CURSOR="+strconv.Itoa(c.Want.Cursor),
		), 2*time.Minute, "node", "--test", "mcp.test.mjs")
	})
	d.interrupt()
}

// startMCP starts the snippet's command with env over and above the
// snippet's, and connects the Go SDK's client to it.
func startMCP(t *testing.T, s mcpSnippet, stderr *proctest.Buffer, env ...string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(s.Command, s.Args...)
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = proctest.Env(append(cmd.Env, env...)...)
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "recall-e2e-go", Version: "1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %s %s: %v\nstderr:\n%s", s.Command, strings.Join(s.Args, " "), err, stderr.String())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close the MCP session: %v", err)
		}
	})
	return cs
}

func testMCPStdio(t *testing.T, s mcpSnippet, c conversation) {
	ctx := context.Background()
	var stderr proctest.Buffer
	cs := startMCP(t, s, &stderr)
	if info := cs.InitializeResult().ServerInfo; info.Name != "recall" {
		t.Errorf("server name %q, want recall", info.Name)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: want an input and an output schema", tool.Name)
		}
	}
	if got := strings.Join(names, ","); got != "recall_conversations,recall_evidence,recall_search" {
		t.Errorf("tools %s, want recall_conversations, recall_evidence and recall_search", got)
	}

	const query = "which database did we settle on for the ledger?"
	tests := []struct {
		name       string
		tool       string
		args       map[string]any
		wantCursor bool   // the answer has the conversation's cursor
		wantError  string // the tool error's prefix
	}{
		{"evidence", "recall_evidence", map[string]any{"conversation_id": c.ConversationID}, true, ""},
		{"evidence without lag", "recall_evidence", map[string]any{"conversation_id": c.ConversationID, "min_cursor": c.Want.Cursor, "wait": "2s"}, true, ""},
		{"search", "recall_search", map[string]any{"conversation_id": c.ConversationID, "query": query}, true, ""},
		{"conversations", "recall_conversations", map[string]any{"limit": 5}, false, ""},
		{"another user's", "recall_evidence", map[string]any{"user_id": "someone-else", "conversation_id": c.ConversationID}, false, "forbidden: "},
		{"unknown conversation", "recall_evidence", map[string]any{"conversation_id": "no-such-conversation"}, false, "unknown_conversation: "},
		{"bad wait", "recall_evidence", map[string]any{"conversation_id": c.ConversationID, "wait": "soon"}, false, "invalid_wait: "},
		{"wait over the API's longest", "recall_evidence", map[string]any{"conversation_id": c.ConversationID, "min_cursor": 1, "wait": "31s"}, false, "wait_too_long: "},
		{"limit out of range", "recall_conversations", map[string]any{"limit": 5000}, false, `validating "arguments"`},
	}
	for _, tt := range tests {
		got, errText := mcptest.Call(t, cs, tt.tool, tt.args)
		switch {
		case tt.wantError != "":
			if !strings.HasPrefix(errText, tt.wantError) {
				t.Errorf("%s: %v %q, want a tool error starting %q", tt.name, got, errText, tt.wantError)
			}
		case errText != "":
			t.Errorf("%s: tool error %q", tt.name, errText)
		case tt.wantCursor:
			msg, _ := got["message"].(map[string]any)
			if got["cursor"] != float64(c.Want.Cursor) || got["lagging"] != false || msg["role"] != "assistant" || got["user_id"] != c.UserID {
				t.Errorf("%s = %v, want cursor %d for %s, not lagging, with the evidence message", tt.name, got, c.Want.Cursor, c.UserID)
			}
		default:
			list, _ := got["conversations"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["conversation_id"] != c.ConversationID {
				t.Errorf("%s = %v, want the one conversation %s", tt.name, got, c.ConversationID)
			}
		}
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "recall://conversations/" + c.ConversationID + "/evidence"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, `"cursor":`+strconv.Itoa(c.Want.Cursor)) {
		t.Errorf("the evidence resource: %+v, %v", res, err)
	}

	// A wrong token: the server starts, and every call says unauthorized.
	var badStderr proctest.Buffer
	bad := startMCP(t, s, &badStderr, "RECALL_TOKEN=not-a-token")
	if _, errText := mcptest.Call(t, bad, "recall_evidence", map[string]any{"user_id": c.UserID, "conversation_id": c.ConversationID}); !strings.HasPrefix(errText, "unauthorized: ") {
		t.Errorf("a wrong token: %q, want an unauthorized tool error", errText)
	}

	// Nothing the calls carried reaches the log.
	for _, out := range []string{stderr.String(), badStderr.String()} {
		if strings.Contains(out, query) || strings.Contains(out, "no-such-conversation") {
			t.Errorf("recall mcp logged a call's arguments:\n%s", out)
		}
	}
}
