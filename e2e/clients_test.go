package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClients runs the Python and JavaScript clients' own test suites
// (python3 -m unittest, node --test) against one recall dev: digests
// against the repository's vectors, publishing over HTTP and NATS, reads,
// waits, refusals and deletes.
func TestClients(t *testing.T) {
	for _, tool := range []string{"python3", "node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to test the clients in clients/ (Python 3.9 or later; Node.js 20 or later, with npm): %v", tool, err)
		}
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// The JavaScript client is tested from a copy, so that the test leaves
	// no node_modules in the tree.
	js := filepath.Join(t.TempDir(), "js")
	copyTree(t, filepath.Join(repo, "clients", "js"), js)
	runIn(t, js, childEnv(), 5*time.Minute, "npm", "ci", "--no-audit", "--no-fund")

	d := startDev(t, devConfig{DatabaseURL: newDatabaseURL(t)})
	env := append(d.env(), "RECALL_JWT_SECRET="+devSecret(t, d.dataDir), "RECALL_REPO="+repo, "PYTHONDONTWRITEBYTECODE=1")
	t.Run("python", func(t *testing.T) {
		runIn(t, filepath.Join(repo, "clients", "python"), env, 5*time.Minute,
			"python3", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	})
	t.Run("js", func(t *testing.T) {
		runIn(t, js, env, 5*time.Minute, "node", "--test", "test/")
	})
	d.interrupt()
}

// copyTree copies the regular files under src to dst, leaving out
// node_modules.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if e.IsDir() {
			if e.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".pyc") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}
