package faults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// child is one recall process. Its stderr (JSON logs) goes to a file that
// outlives it, so the logs of every generation can be read at the end.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	started time.Time
	done    chan struct{} // closed when the process has exited
	state   *os.ProcessState
	waitErr error
}

// startChild starts recall with args and env (added to a minimal base).
func startChild(t *testing.T, name string, env []string, args ...string) *child {
	t.Helper()
	logPath := filepath.Join(logDir(t), name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(recallBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Stdout, cmd.Stderr = f, f
	// The child dies with the test process, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, started: time.Now(), done: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		c.state = cmd.ProcessState
		f.Close()
		close(c.done)
	}()
	t.Cleanup(func() { c.kill() })
	return c
}

var logDirs sync.Map // test name → folder

// logDir is the folder of a test's child logs. It is kept when the test
// fails (its path is logged) so that the logs can be read.
func logDir(t *testing.T) string {
	if d, ok := logDirs.Load(t.Name()); ok {
		return d.(string)
	}
	d, err := os.MkdirTemp("", "recall-faults-logs-")
	if err != nil {
		t.Fatal(err)
	}
	logDirs.Store(t.Name(), d)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("child logs kept in %s", d)
			return
		}
		os.RemoveAll(d)
	})
	return d
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *child) kill() {
	if c.alive() {
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-c.done
}

// term sends SIGTERM and waits at most timeout for the exit. It returns the
// exit code (-1 when killed by a signal) and how long the drain took.
func (c *child) term(timeout time.Duration) (code int, took time.Duration, err error) {
	start := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return -1, 0, err
	}
	select {
	case <-c.done:
	case <-time.After(timeout):
		c.kill()
		return -1, time.Since(start), fmt.Errorf("%s did not exit within %s of SIGTERM", c.name, timeout)
	}
	return c.state.ExitCode(), time.Since(start), nil
}

// vmHWM returns the peak resident set size of the running process in bytes.
func (c *child) vmHWM() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.pid()))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("VmHWM line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// waitLog waits until the child's log has a JSON line whose msg is msg and
// returns it.
func (c *child) waitLog(t *testing.T, msg string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var found map[string]any
		_ = scanLog(c.logPath, func(rec map[string]any, _ []byte) {
			if found == nil && rec["msg"] == msg {
				found = rec
			}
		})
		if found != nil {
			return found
		}
		if !c.alive() {
			t.Fatalf("%s exited (%v) before logging %q; log:\n%s", c.name, c.waitErr, msg, tail(c.logPath, 40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %s; log:\n%s", c.name, msg, timeout, tail(c.logPath, 40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scanLog calls fn for every JSON line of a log file (other lines are
// passed with a nil record).
func scanLog(path string, fn func(rec map[string]any, line []byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var rec map[string]any
		if len(line) > 0 && line[0] == '{' {
			if json.Unmarshal(line, &rec) != nil {
				rec = nil
			}
		}
		fn(rec, line)
	}
	return sc.Err()
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var out strings.Builder
	for _, l := range lines {
		if len(l) > 400 {
			l = append(l[:400:400], "…"...)
		}
		out.Write(l)
		out.WriteByte('\n')
	}
	return out.String()
}
