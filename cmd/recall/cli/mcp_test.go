package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestMCPNeedsAPI: recall mcp refuses to start without a token or with an
// API URL it cannot use, saying which variable to fix.
func TestMCPNeedsAPI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"no token", map[string]string{"RECALL_API_URL": "http://127.0.0.1:8080"}, "set RECALL_TOKEN"},
		{"not a URL", map[string]string{"RECALL_API_URL": "127.0.0.1:8080", "RECALL_TOKEN": "t"}, "RECALL_API_URL: "},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, tt.env, "mcp")
		if code != 1 || !strings.Contains(stderr, tt.wantErr) || stdout != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want 1 with %q and nothing on stdout", tt.name, code, stderr, stdout, tt.wantErr)
		}
	}
}

// TestMCPSnippet: the snippet recall dev prints is one line of JSON, an
// mcpServers entry that runs `recall mcp` with the API's URL and a token.
func TestMCPSnippet(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	printMCPSnippet(&out, "http://127.0.0.1:8080", "tok\"en", "/opt/recall")
	var line string
	for l := range strings.Lines(out.String()) {
		if strings.HasPrefix(l, "{") {
			line = l
		}
	}
	var got struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("no JSON line in the snippet: %v\n%s", err, out.String())
	}
	r := got.MCPServers["recall"]
	if r.Command != "/opt/recall" || len(r.Args) != 1 || r.Args[0] != "mcp" ||
		r.Env["RECALL_API_URL"] != "http://127.0.0.1:8080" || r.Env["RECALL_TOKEN"] != "tok\"en" {
		t.Errorf("snippet entry = %+v", r)
	}
	if !strings.Contains(out.String(), "http://127.0.0.1:8080/mcp") {
		t.Errorf("the snippet does not name the API's /mcp:\n%s", out.String())
	}
}
