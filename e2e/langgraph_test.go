package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/testutil/proctest"
)

// TestLangGraphJSExample runs examples/langgraph-js against recall dev, as
// `make example-langgraph` does: npm ci, then node main.mjs, which checks
// the evidence itself and exits non-zero when it is wrong.
func TestLangGraphJSExample(t *testing.T) {
	needNode(t, "examples/langgraph-js")
	work := installExamples(t, "langgraph-js")[0]

	d := startDev(t, devConfig{DatabaseURL: pgtest.UncreatedDatabase(t)})
	out := runIn(t, work, d.env(), 2*time.Minute, "node", "main.mjs")
	if !strings.Contains(out, "ok: ") {
		t.Errorf("the example exited 0 without its ok line:\n%s", out)
	}
	d.interrupt()
}

// needNode fails the test unless node and npm are on the PATH, to run what.
func needNode(t *testing.T, what string) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run %s (install Node.js 20 or later, with npm): %v", tool, what, err)
		}
	}
}

// installExamples copies the named examples/ folders and runs npm ci in
// each, and returns their copies' paths. Copies, so that the test leaves
// no node_modules in the tree and does not race a developer's own npm
// install; the examples depend on the JavaScript client by path
// (file:../../clients/js), so the client is copied beside them.
func installExamples(t *testing.T, names ...string) []string {
	t.Helper()
	root := t.TempDir()
	copyTree(t, filepath.Join("..", "clients", "js"), filepath.Join(root, "clients", "js"))
	dirs := make([]string, len(names))
	for i, name := range names {
		dirs[i] = filepath.Join(root, "examples", name)
		copyTree(t, filepath.Join("..", "examples", name), dirs[i])
		runIn(t, dirs[i], proctest.Env(), 5*time.Minute, "npm", "ci", "--no-audit", "--no-fund")
	}
	return dirs
}

// runIn runs a command in dir and fails the test unless it exits 0 within
// timeout. It returns the command's stdout and logs both outputs.
func runIn(t *testing.T, dir string, env []string, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	line := name + " " + strings.Join(args, " ")
	if err != nil {
		t.Fatalf("%s: %v after %s\nstdout:\n%s\nstderr:\n%s", line, err, time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
	}
	t.Logf("%s: exit 0 in %s\n%s", line, time.Since(start).Round(time.Millisecond), stdout.String())
	return stdout.String()
}
