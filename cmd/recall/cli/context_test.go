package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/assemble"
)

const contextRequest = `{
 "system": "You are a careful engineer.",
 "tools": [{"name":"search","parameters":{"type":"object"}}],
 "budget": {"prompt": 16000},
 "evidence": {"role":"assistant","content":"[memory] Earlier turns exist in this conversation's history but are not currently in context."},
 "messages": [
  {"id":"m0","role":"user","content":"We must ship by Friday."},
  {"id":"m1","role":"assistant","content":"","tool_calls":[{"id":"t1","name":"search","args":{"q": "schema"}}]},
  {"id":"m2","role":"tool","tool_call_id":"t1","content":"{\"rows\":[]}"},
  {"id":"m3","role":"assistant","content":"Agreed: we'll use Postgres."},
  {"id":"m4","role":"assistant","type":"thinking","content":"hmm"},
  {"id":"m5","role":"user","content":"Next, draft the schema."}
 ]
}`

func runContextCmd(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
	err := runContext(t.Context(), env, args)
	return stdout.String(), err
}

func TestContextCommand(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(path, []byte(contextRequest), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runContextCmd(t, "", path)
	if err != nil {
		t.Fatalf("recall context: %v", err)
	}
	for _, want := range []string{
		"131 of 16000 estimated tokens: system 13, tools 16 (1 schemas), evidence 35, history 55, current turn 12",
		"5 of 6 checkpoint messages kept, 0 older turns dropped, 0 tool results compacted; evidence included (version 0, cursor 0)",
		"assistant  m1  22      [calls search t1]",
		"user       m5  12      Next, draft the schema.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hmm") {
		t.Errorf("a thinking message was kept:\n%s", out)
	}

	// --json from standard input is the endpoint's response.
	out, err = runContextCmd(t, contextRequest, "--json", "-")
	if err != nil {
		t.Fatal(err)
	}
	body, err := assemble.DecodeBody([]byte(contextRequest))
	if err != nil {
		t.Fatal(err)
	}
	res, err := assemble.Build(&body.Request)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json output is not JSON: %v", err)
	}
	_ = json.Unmarshal(res.AppendJSON(nil), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("--json (-want +got):\n%s", diff)
	}

	// A budget override that drops the older turn.
	out, err = runContextCmd(t, contextRequest, "--prompt", "70", "-")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "1 older turns dropped") || !strings.Contains(out, "evidence left out") {
		t.Errorf("with --prompt 70:\n%s", out)
	}
}

func TestContextCommandErrors(t *testing.T) {
	t.Parallel()
	if _, err := runContextCmd(t, ""); err != errUsage {
		t.Errorf("no FILE: %v, want the usage", err)
	}
	_, err := runContextCmd(t, contextRequest, "--prompt", "20", "-")
	if err == nil || !strings.Contains(err.Error(), "budget_too_small") {
		t.Errorf("tiny prompt: %v, want budget_too_small", err)
	}
	_, err = runContextCmd(t, `{"messages":[{"role":"wizard"}]}`, "-")
	if err == nil || !strings.Contains(err.Error(), "invalid_messages") {
		t.Errorf("unknown role: %v, want invalid_messages", err)
	}
}

// The worked example in docs/context.md is the command's real output.
func TestContextCommandDocExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "context.md"))
	if err != nil {
		t.Fatal(err)
	}
	const start = "```console\n$ recall context docs/context-example.json\n"
	_, block, ok := strings.Cut(string(doc), start)
	if !ok {
		t.Fatalf("docs/context.md has no %q block", strings.TrimSpace(start))
	}
	want, _, _ := strings.Cut(block, "```")
	got, err := runContextCmd(t, "", filepath.Join("..", "..", "..", "docs", "context-example.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/context.md's example (-doc +output):\n%s", diff)
	}
}
