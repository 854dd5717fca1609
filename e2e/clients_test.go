package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/testutil/proctest"
)

// TestClients runs the Python and JavaScript clients' own test suites
// (python3 -m unittest, node --test) against one recall dev: digests
// against the repository's vectors, publishing over HTTP and NATS, reads,
// waits, refusals and deletes, withRecall, the LangGraph.js saver, in a
// graph, and the AI SDK middleware and the OpenAI Agents SDK session with
// their libraries' mock models (300 turns, tool loops, streaming, their
// latency). Then LangChain's conformance suite for checkpoint savers runs
// against withRecall (saverValidation), and a graph, the middleware and the
// session run through a recall restart (outage).
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
	runIn(t, js, proctest.Env(), 5*time.Minute, "npm", "ci", "--no-audit", "--no-fund")

	d := startDev(t, devConfig{DatabaseURL: pgtest.UncreatedDatabase(t)})
	env := append(d.env(), "RECALL_JWT_SECRET="+devSecret(t, d.dataDir), "RECALL_REPO="+repo, "PYTHONDONTWRITEBYTECODE=1")
	t.Run("python", func(t *testing.T) {
		runIn(t, filepath.Join(repo, "clients", "python"), env, 5*time.Minute,
			"python3", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	})
	t.Run("js", func(t *testing.T) {
		runIn(t, js, env, 5*time.Minute, "node", "--test", "test/")
	})
	t.Run("js-saver-validation", func(t *testing.T) {
		saverValidation(t, js, append(env, "RECALL_SAVER_DATABASE_URL="+pgtest.NewDatabase(t)))
	})
	d.interrupt()
	t.Run("js-outage", func(t *testing.T) {
		outage(t, js, "e2e/outage.mjs", "e2e/adapters-outage.mjs")
	})
}

// vitestReport is the part of vitest's JSON report the test reads.
type vitestReport struct {
	NumTotalTests   int  `json:"numTotalTests"`
	NumPassedTests  int  `json:"numPassedTests"`
	NumFailedTests  int  `json:"numFailedTests"`
	NumPendingTests int  `json:"numPendingTests"`
	NumTodoTests    int  `json:"numTodoTests"`
	Success         bool `json:"success"`
	TestResults     []struct {
		Name             string `json:"name"`
		AssertionResults []struct {
			FullName string `json:"fullName"`
			Status   string `json:"status"`
		} `json:"assertionResults"`
	} `json:"testResults"`
}

// memorySaverSkip is the one test the conformance suite skips for
// MemorySaver itself, which keeps every channel's value in each checkpoint.
const memorySaverSkip = "should only store channel_values that have changed (based on newVersions)"

// saverValidation runs LangChain's conformance suite for checkpoint savers
// (@langchain/langgraph-checkpoint-validation, by vitest) against withRecall
// around MemorySaver and around PostgresSaver, publishing to recall. Every
// test must pass, but the one the suite skips for MemorySaver by name.
func saverValidation(t *testing.T, js string, env []string) {
	report := filepath.Join(t.TempDir(), "vitest.json")
	runIn(t, js, env, 5*time.Minute, filepath.Join(js, "node_modules", ".bin", "vitest"), "run",
		"--reporter=default", "--reporter=json", "--outputFile.json="+report)
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("vitest's JSON report: %v", err)
	}
	var r vitestReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("vitest's JSON report: %v", err)
	}
	if !r.Success || r.NumFailedTests > 0 || r.NumTodoTests > 0 || r.NumTotalTests < 1000 || len(r.TestResults) != 2 {
		t.Fatalf("the conformance suite: %d tests in %d files, %d passed, %d failed, %d skipped, %d todo; want two files, over 1,000 tests, none failed",
			r.NumTotalTests, len(r.TestResults), r.NumPassedTests, r.NumFailedTests, r.NumPendingTests, r.NumTodoTests)
	}
	for _, f := range r.TestResults {
		var passed, skipped int
		for _, a := range f.AssertionResults {
			switch {
			case a.Status == "passed":
				passed++
			case strings.HasSuffix(f.Name, "memory.test.js") && strings.HasSuffix(a.FullName, memorySaverSkip):
				skipped++
			default:
				t.Errorf("%s: %q is %s", filepath.Base(f.Name), a.FullName, a.Status)
			}
		}
		t.Logf("%s: %d passed, %d skipped by the suite for MemorySaver", filepath.Base(f.Name), passed, skipped)
	}
}

// outage runs the outage drivers of clients/js (scripts, in the client's
// folder js) while recall stops and starts again: e2e/outage.mjs, a
// LangGraph.js graph with withRecall, goes on while recall is down and the
// evidence catches up when it is back; e2e/adapters-outage.mjs does the
// same with the AI SDK middleware and the Agents SDK session, whose calls
// go on with their own cut of the history meanwhile. Each driver says
// "stop recall" and "start recall" when it is ready for the next phase,
// and "ok: …" at the end; all of them go through the same restart.
func outage(t *testing.T, js string, scripts ...string) {
	cfg := devConfig{
		DatabaseURL: pgtest.UncreatedDatabase(t),
		DataDir:     t.TempDir(),
		OwnNATSPort: true, // the same port after the restart
		Env:         []string{fmt.Sprintf("RECALL_HTTP_ADDR=127.0.0.1:%d", proctest.FreePort(t))},
	}
	d := startDev(t, cfg)
	drivers := make([]*driver, len(scripts))
	for i, script := range scripts {
		drivers[i] = startDriver(t, js, d.env(), script)
	}
	for _, dr := range drivers {
		dr.await("stop recall")
	}
	d.interrupt()
	requireClosed(t, "the API", d.APIURL)
	for _, dr := range drivers {
		dr.say("stopped")
	}
	for _, dr := range drivers {
		dr.await("start recall")
	}
	d2 := startDev(t, cfg)
	if d2.APIURL != d.APIURL {
		t.Fatalf("recall came back at %s, not at %s", d2.APIURL, d.APIURL)
	}
	for _, dr := range drivers {
		dr.say("started")
	}
	for _, dr := range drivers {
		ok := dr.await("ok: ")
		dr.stdin.Close()
		if err := dr.cmd.Wait(); err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", dr.script, err, strings.Join(dr.out, "\n"), dr.stderr.String())
		}
		t.Logf("%s:\n%s", dr.script, strings.Join(dr.out, "\n"))
		t.Log(ok)
	}
	d2.interrupt()
}

// driver is an outage driver: a node script the test talks to over its
// stdin and stdout.
type driver struct {
	t      *testing.T
	script string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *proctest.Buffer
	lines  chan string
	out    []string
}

func startDriver(t *testing.T, dir string, env []string, script string) *driver {
	t.Helper()
	cmd := exec.Command("node", script)
	cmd.Dir, cmd.Env = dir, env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	dr := &driver{t: t, script: script, cmd: cmd, stdin: stdin, stderr: &proctest.Buffer{}, lines: make(chan string)}
	cmd.Stderr = dr.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", script, err)
	}
	go func() {
		defer close(dr.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			dr.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return dr
}

// await reads the driver's lines until one starts with want, and fails the
// test if the driver ends or says nothing for a minute first.
func (dr *driver) await(want string) string {
	dr.t.Helper()
	for {
		select {
		case line, ok := <-dr.lines:
			if !ok {
				_ = dr.cmd.Wait()
				dr.t.Fatalf("%s ended before %q: %v\nstdout:\n%s\nstderr:\n%s", dr.script, want, dr.cmd.ProcessState, strings.Join(dr.out, "\n"), dr.stderr.String())
			}
			dr.out = append(dr.out, line)
			if strings.HasPrefix(line, want) {
				return line
			}
		case <-time.After(time.Minute):
			_ = dr.cmd.Process.Kill()
			dr.t.Fatalf("%s said nothing for a minute, waiting for %q\nstdout:\n%s\nstderr:\n%s", dr.script, want, strings.Join(dr.out, "\n"), dr.stderr.String())
		}
	}
}

// say writes a line to the driver's stdin.
func (dr *driver) say(word string) {
	dr.t.Helper()
	if _, err := io.WriteString(dr.stdin, word+"\n"); err != nil {
		dr.t.Fatalf("tell %s %q: %v", dr.script, word, err)
	}
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
