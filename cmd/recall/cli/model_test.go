package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallhq/recall/testutil/fakemodel"
)

// TestModelSettings: the model lane's settings are checked before anything
// starts, with errors that say how to fix them; the lexical extractor
// ignores them.
func TestModelSettings(t *testing.T) {
	t.Parallel()
	noPG := []string{"worker", "--no-migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable"}
	model := func(kv ...string) map[string]string {
		env := map[string]string{"RECALL_EXTRACTOR": "model", "RECALL_MODEL_URL": "http://127.0.0.1:1/v1", "RECALL_MODEL_NAME": "m"}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"an unknown extractor", noPG, map[string]string{"RECALL_EXTRACTOR": "llm"}, `RECALL_EXTRACTOR (-extractor) must be lexical (the evidence profile's own rules) or model`},
		{"no URL", noPG, model("RECALL_MODEL_URL", ""), "needs RECALL_MODEL_URL (-model-url)"},
		{"no name", noPG, model("RECALL_MODEL_NAME", ""), "needs RECALL_MODEL_NAME (-model-name)"},
		{"not an http URL", noPG, model("RECALL_MODEL_URL", "localhost:11434"), "set RECALL_MODEL_URL to the endpoint's OpenAI-compatible base URL"},
		{"the seed profile", noPG, model("RECALL_EVIDENCE_PROFILE", "seed"), "set RECALL_EVIDENCE_PROFILE=focus"},
		{"eleven turns", noPG, model("RECALL_MODEL_CONTEXT_TURNS", "11"), "from 0 (no context) to 10"},
		{"negative turns", append(noPG, "-model-context-turns", "-1"), model(), "from 0 (no context) to 10"},
		{"turns that do not parse", noPG, model("RECALL_MODEL_CONTEXT_TURNS", "two"), `RECALL_MODEL_CONTEXT_TURNS="two" does not parse`},
		{"capture that does not parse", noPG, model("RECALL_MODEL_CAPTURE_ASSISTANT", "maybe"), "give true or false"},
		{"a zero timeout", noPG, model("RECALL_MODEL_TIMEOUT", "0s"), "a positive Go duration"},
		{"no concurrency", noPG, model("RECALL_MODEL_CONCURRENCY", "0"), "1 or more"},
		{"the extractor as a flag", append(noPG, "-extractor", "both"), nil, `not "both"`},
		// Good settings pass and the start goes on to Postgres.
		{"a good lane", noPG, model("RECALL_MODEL_CONTEXT_TURNS", "0", "RECALL_MODEL_CAPTURE_ASSISTANT", "true"), "connect to Postgres"},
		{"the lexical extractor ignores the lane's settings", noPG, map[string]string{"RECALL_MODEL_CONTEXT_TURNS": "99"}, "connect to Postgres"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCLI(t, tt.env, tt.args...)
			if code == 0 || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want an error with %q", code, stderr, tt.wantErr)
			}
		})
	}
}

// TestModelHelp: the commands that run the worker list the lane's flags;
// the API alone does not. No flag carries the key.
func TestModelHelp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cmd  string
		want bool
	}{{"worker", true}, {"run", true}, {"dev", true}, {"api", false}} {
		code, _, stderr := runCLI(t, nil, tt.cmd, "-h")
		if code != 0 {
			t.Fatalf("%s -h: exit %d", tt.cmd, code)
		}
		for _, f := range []string{"-extractor", "-model-url", "-model-name", "-model-context-turns", "-model-capture-assistant", "-model-timeout", "-model-concurrency"} {
			if listed := strings.Contains(stderr, "  "+f+" ") || strings.Contains(stderr, "  "+f+"\n"); listed != tt.want {
				t.Errorf("%s -h lists %s: %v, want %v", tt.cmd, f, listed, tt.want)
			}
		}
		if strings.Contains(stderr, "-model-api-key ") {
			t.Errorf("%s -h has a flag for the key", tt.cmd)
		}
	}
}

// TestModelSecretsNeverPrinted: the API key, and a password in the
// endpoint's URL, never reach -h or an error.
func TestModelSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	env := map[string]string{"RECALL_EXTRACTOR": "model", "RECALL_MODEL_NAME": "m", "RECALL_MODEL_API_KEY": "sk-hunter2hunter2",
		"RECALL_MODEL_URL": "https://user:hunter2pass@example.com/v1?api_key=hunter2query"}
	for _, args := range [][]string{
		{"worker", "-h"},
		{"run", "-h"},
		{"worker", "--no-migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable"},
		{"worker", "--no-migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable", "-model-url", "ftp://u:hunter2flag@x/v1"},
	} {
		var stdout, stderr bytes.Buffer
		e := &Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
		mainEnv(e, args)
		if out := stdout.String() + stderr.String(); strings.Contains(out, "hunter2") {
			t.Errorf("recall %s printed a secret:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestEvalModel: recall eval --extractor model runs the fixtures with the
// notes of the model at RECALL_MODEL_URL beside the lexical run, one call
// a turn, and checks them as strictly.
func TestEvalModel(t *testing.T) {
	t.Parallel()
	srv := fakemodel.Start(t, nil)
	dir := t.TempDir()
	fixture, err := os.ReadFile(filepath.Join("..", "..", "..", "eval", "fixtures", "dev", "revised-constraints.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "revised-constraints.json"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RECALL_MODEL_URL": srv.URL(), "RECALL_MODEL_NAME": "fake", "RECALL_MODEL_API_KEY": "sk-hunter2hunter2"}
	code, stdout, stderr := runCLI(t, env, "eval", "--extractor", "model", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	t.Logf("recall eval --extractor model:\n%s", stdout)
	reqs := srv.Requests()
	if len(reqs) == 0 || reqs[0].Authorization != "Bearer sk-hunter2hunter2" {
		t.Fatalf("%d requests", len(reqs))
	}
	want := fmt.Sprintf("calls %d (failed 0, answers that were not JSON notes 0)", len(reqs))
	if !strings.Contains(stdout, want) || !strings.Contains(stdout, "lexical ") || !strings.Contains(stdout, "model ") {
		t.Errorf("stdout lacks %q and the two rows:\n%s", want, stdout)
	}
	if strings.Contains(stdout+stderr, "hunter2") {
		t.Errorf("the key was printed")
	}
	// A model that answers nothing useful still passes the hard rules.
	srv.SetScript(func(int, *fakemodel.Request) fakemodel.Reply { return fakemodel.Reply{Content: "no"} })
	code, stdout, _ = runCLI(t, env, "eval", "--extractor", "model", "--json", dir)
	var out struct {
		Calls struct {
			Invalid int `json:"invalid_answers"`
		} `json:"calls"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || out.Calls.Invalid == 0 {
		t.Errorf("exit %d, %s", code, stdout)
	}
	// Without a model.
	if code, _, stderr := runCLI(t, nil, "eval", "--extractor", "model", dir); code == 0 || !strings.Contains(stderr, "RECALL_MODEL_URL") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}
