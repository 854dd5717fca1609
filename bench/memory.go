package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MemoryMethod says how scenario 5 measures.
const MemoryMethod = "child process `recall worker`, VmHWM from /proc/PID/status"

// memoryScenario is scenario 5: the peak RSS of `recall worker`, run as a
// child process, while it processes one large snapshot (through an
// in-process NATS server whose max_payload fits it), and while it processes
// scenario 1's workload (through the configured NATS).
func (e *env) memoryScenario(ctx context.Context, res *Result) error {
	// No in-process River client may take the child's jobs, and the child
	// needs connections of its own.
	if err := e.stopPipeline(); err != nil {
		return err
	}
	e.pool.Reset()
	res.MemoryMethod = MemoryMethod

	// One large snapshot.
	dir, err := os.MkdirTemp("", "recall-bench-nats-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true, MaxPayload: int32(max(32<<20, 2*e.sz.bigEvent))})
	if err != nil {
		return fmt.Errorf("in-process NATS: %w", err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("in-process NATS is not ready")
	}
	hist := bigHistory(e.sz.bigEvent)
	big := workload{prefix: "mem-big", users: 1, convs: 1, turns: (len(hist) + 1) / 2}
	userID, conversationID := big.key(0)
	id := e.ids.next()
	data := encodeEvent(id, userID, conversationID, 0, nil, hist)
	stream, subject := e.stream+"_BIG", "recall.bench."+e.id+".big"
	child, err := e.startChild(ctx, ns.ClientURL(), stream, subject)
	if err != nil {
		return err
	}
	defer child.stop()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if err := child.waitReady(ctx, js, stream); err != nil {
		return err
	}
	idle, _, _ := procMemory(child.cmd.Process.Pid)
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	_, err = js.PublishMsg(pctx, msg)
	cancel()
	if err != nil {
		return fmt.Errorf("publish the %d-byte snapshot: %w", len(data), err)
	}
	if err := e.waitDone(ctx, big, 50*time.Millisecond); err != nil {
		return fmt.Errorf("%w\n%s", err, child.logs())
	}
	_, hwm, err := procMemory(child.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if err := child.stop(); err != nil {
		return err
	}
	res.BigEventMiB = mib(len(data))
	res.WorkerIdleRSSMiB = mib(idle)
	res.WorkerRSSBigEventMiB = mib(hwm)
	res.RSSRatioLarge = res.WorkerRSSBigEventMiB / res.BigEventMiB
	e.progress("worker RSS: %.1f MiB idle, %.1f MiB peak with one %.1f MiB snapshot (%.1f×)",
		res.WorkerIdleRSSMiB, res.WorkerRSSBigEventMiB, res.BigEventMiB, res.WorkerRSSBigEventMiB/res.BigEventMiB)

	// Scenario 1's workload, through the configured NATS.
	stream, subject = e.stream+"_MEM", "recall.bench."+e.id+".mem"
	e.streams = append(e.streams, stream)
	child, err = e.startChild(ctx, e.cfg.NATSURL, stream, subject)
	if err != nil {
		return err
	}
	defer child.stop()
	if err := child.waitReady(ctx, e.js, stream); err != nil {
		return err
	}
	w := workload{prefix: "mem", users: max(1, e.sz.memConvs/10), convs: e.sz.memConvs, turns: e.sz.memTurns}
	start := time.Now()
	perr := make(chan error, 1)
	go func() { perr <- e.publishAll(ctx, w, subject, e.js) }()
	werr := e.waitDone(ctx, w, 20*time.Millisecond)
	elapsed := time.Since(start)
	if err := errors.Join(<-perr, werr); err != nil {
		return fmt.Errorf("%w\n%s", err, child.logs())
	}
	_, hwm, err = procMemory(child.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if err := child.stop(); err != nil {
		return err
	}
	res.WorkerRSSPipelineMiB = mib(hwm)
	res.MemoryPipelineEventsPerS = float64(w.events()) / elapsed.Seconds()
	res.WorkerRSSMiB = max(res.WorkerRSSBigEventMiB, res.WorkerRSSPipelineMiB)
	e.progress("worker RSS: %.1f MiB peak over scenario 1's workload (%d events at %.0f events/s)",
		res.WorkerRSSPipelineMiB, w.events(), res.MemoryPipelineEventsPerS)
	return nil
}

func mib(bytes int) float64 { return float64(bytes) / (1 << 20) }

// child is a `recall worker` or `recall api` process.
type child struct {
	cmd    *exec.Cmd
	stderr *tailBuffer
	done   chan struct{}
	once   sync.Once
	err    error
}

func (e *env) startChild(ctx context.Context, natsURL, stream, subject string) (*child, error) {
	return e.spawn("worker",
		"NATS_URL="+natsURL,
		"RECALL_STREAM="+stream,
		"RECALL_SUBJECT="+subject,
		"RECALL_CONCURRENCY="+strconv.Itoa(e.cfg.Concurrency),
		"RECALL_MAX_EVENT_BYTES="+strconv.Itoa(max(16<<20, 2*e.sz.bigEvent)),
	)
}

// spawn starts `recall <command>` on the run's database, with env added to
// the environment.
func (e *env) spawn(command string, env ...string) (*child, error) {
	cmd := exec.Command(e.cfg.Executable, command)
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+e.dbURL,
		"RECALL_NO_MIGRATE=1",
		"RECALL_LOG_FORMAT=json",
		"RECALL_LOG_LEVEL=warn",
		"RECALL_SHUTDOWN_TIMEOUT=10s",
	)
	cmd.Env = append(cmd.Env, env...)
	c := &child{cmd: cmd, stderr: &tailBuffer{max: 16 << 10}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.stderr, c.stderr
	// The child dies with the benchmark, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", e.cfg.Executable, command, err)
	}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c, nil
}

// waitReady waits until the child's durable consumer exists on stream.
func (c *child) waitReady(ctx context.Context, js jetstream.JetStream, stream string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := js.Consumer(ctx, stream, "recall-worker"); err == nil {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("the child worker exited: %v\n%s", c.err, c.logs())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the child worker did not start consuming within 30s\n%s", c.logs())
		}
	}
}

// stop sends SIGTERM and waits for the drain; SIGKILL after 20s.
func (c *child) stop() error {
	var err error
	c.once.Do(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
			if c.err != nil {
				err = fmt.Errorf("the child %s: %v\n%s", c.cmd.Args[1], c.err, c.logs())
			}
		case <-time.After(20 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
			err = fmt.Errorf("the child %s did not drain within 20s\n%s", c.cmd.Args[1], c.logs())
		}
	})
	return err
}

func (c *child) logs() string { return c.stderr.String() }

// procMemory reads VmRSS and VmHWM (peak RSS) of pid, in bytes.
func procMemory(pid int) (rss, hwm int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read the child's memory: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(value), " kB"))
		if err != nil {
			return 0, 0, fmt.Errorf("parse %s %q: %w", name, value, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if hwm == 0 {
		return 0, 0, errors.New("no VmHWM in /proc status")
	}
	return rss, hwm, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
