// Package proctest runs the recall binary as a child process of a test, as
// the client's, the end-to-end and the fault tests do: it builds the
// binary once for a TestMain, gives a child an environment without the
// test's own recall settings and a free port, keeps its output, waits for
// it to be ready and stops it as an operator would, with SIGINT.
package proctest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build builds ./cmd/recall into a new temporary folder and returns the
// binary's path and a function that removes the folder. It is for a
// TestMain; go test puts its own go first on PATH.
func Build() (bin string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "recall-bin-")
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "recall")
	build := exec.Command("go", "build", "-o", bin, "github.com/recallhq/recall/cmd/recall")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go build ./cmd/recall: %w", err)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// Env returns the test's environment without recall's own settings
// (DATABASE_URL, NATS_URL and RECALL_*), plus extra (KEY=value), so that a
// child reads only what the test gives it.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || k == "NATS_URL" || strings.HasPrefix(k, "RECALL_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Buffer is a bytes.Buffer safe for concurrent writers and a reader: a
// child's output, or a logger's.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Process is a running child whose stdout and stderr are kept.
type Process struct {
	Cmd            *exec.Cmd
	Stdout, Stderr Buffer
	exited         chan struct{}
	waitErr        error
}

// Start starts cmd with its stdout and stderr written into the Process's
// buffers, and does not wait for anything.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{Cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.Stdout, &p.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed when the process has exited; Cmd.ProcessState then
// says how.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// WaitFor polls ready until it reports true, and fails (with the output)
// when the process exits first or timeout passes; what names what is
// awaited in the error.
func (p *Process) WaitFor(timeout time.Duration, what string, ready func() bool) error {
	deadline := time.After(timeout)
	for !ready() {
		select {
		case <-p.exited:
			if ready() {
				return nil
			}
			return fmt.Errorf("%s exited before %s: %v\n%s", p.name(), what, p.Cmd.ProcessState, p.output())
		case <-deadline:
			return fmt.Errorf("%s: no %s within %s\n%s", p.name(), what, timeout, p.output())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Interrupt sends SIGINT and waits for the exit, and returns how long it
// took. It fails when the process does not exit within timeout (it is then
// killed) or exits with an error.
func (p *Process) Interrupt(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		select {
		case <-p.exited:
		default:
			return 0, fmt.Errorf("%s: SIGINT: %w", p.name(), err)
		}
	}
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		<-p.exited
		return time.Since(start), fmt.Errorf("%s did not exit within %s of SIGINT\n%s", p.name(), timeout, p.output())
	}
	took := time.Since(start)
	if p.waitErr != nil {
		return took, fmt.Errorf("%s after SIGINT: %w\n%s", p.name(), p.waitErr, p.output())
	}
	return took, nil
}

// Stop stops a process still running, as Interrupt does, and ignores how it
// ends: a test's cleanup after the test failed to stop it.
func (p *Process) Stop(timeout time.Duration) {
	select {
	case <-p.exited:
	default:
		_, _ = p.Interrupt(timeout)
	}
}

func (p *Process) name() string {
	return strings.Join(append([]string{filepath.Base(p.Cmd.Path)}, p.Cmd.Args[1:]...), " ")
}

func (p *Process) output() string {
	return "stdout:\n" + p.Stdout.String() + "\nstderr:\n" + p.Stderr.String()
}
