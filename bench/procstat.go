package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The cost of an event, from the processes' own counters: the kernel's CPU
// time of recall's process and of the Postgres processes that serve the
// run's database, and Postgres's statistics of that database.

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on every
// Linux the benchmark runs on).
const clockTick = 10 * time.Millisecond

// procCPU returns the user and system CPU time pid has used, from
// /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command, which may hold spaces, in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * clockTick, nil
}

// selfCPU returns the CPU time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pgCounters are Postgres's cumulative figures for the run's database.
type pgCounters struct {
	// cpu is the CPU time of every backend connected to the database
	// (autovacuum's on it included), by process id. The cluster's
	// background processes (WAL writer, checkpointer) are left out: on a
	// shared server they work for every database.
	cpu     map[int]time.Duration
	commits int64 // pg_stat_database.xact_commit
	rows    int64 // rows inserted, updated and deleted
}

// capturePG reads the run database's counters. Backends report their
// statistics when they go idle, at most once a second, so over a window of
// steady load the lag at its start and at its end cancel out.
func (e *env) capturePG(ctx context.Context) (pgCounters, error) {
	k := pgCounters{cpu: make(map[int]time.Duration)}
	rows, err := e.pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return k, fmt.Errorf("read Postgres's processes: %w", err)
	}
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			rows.Close()
			return k, err
		}
		pids = append(pids, pid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return k, fmt.Errorf("read Postgres's processes: %w", err)
	}
	for _, pid := range pids {
		if d, err := procCPU(pid); err == nil {
			k.cpu[pid] = d
		}
	}
	err = e.pool.QueryRow(ctx, `
SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
       (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables)`).Scan(&k.commits, &k.rows)
	if err != nil {
		return k, fmt.Errorf("read Postgres's statistics: %w", err)
	}
	return k, nil
}

// pgDelta is what Postgres spent between two captures.
type pgDelta struct {
	cpu     time.Duration
	commits int64
	rows    int64
}

// since returns the counters' growth since before: a process that started
// in between counts whole, one that ended in between is lost (the pools
// keep their connections for an hour, so none do in a window).
func (k pgCounters) since(before pgCounters) pgDelta {
	d := pgDelta{commits: k.commits - before.commits, rows: k.rows - before.rows}
	for pid, c := range k.cpu {
		d.cpu += c - before.cpu[pid]
	}
	return d
}

// cpuMeter measures the CPU time of a set of processes, and of Postgres on
// the run's database, over a window.
type cpuMeter struct {
	e      *env
	pids   []int // 0 is this process
	procs  []time.Duration
	pg     pgCounters
	start  time.Time
	jobID0 int64
}

func (e *env) startMeter(ctx context.Context, pids ...int) (*cpuMeter, error) {
	m := &cpuMeter{e: e, pids: pids}
	var err error
	if m.pg, err = e.capturePG(ctx); err != nil {
		return nil, err
	}
	if err := e.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM river_job`).Scan(&m.jobID0); err != nil {
		return nil, fmt.Errorf("read River's last job: %w", err)
	}
	for _, pid := range pids {
		m.procs = append(m.procs, cpuOf(pid))
	}
	m.start = time.Now()
	return m, nil
}

func cpuOf(pid int) time.Duration {
	if pid == 0 {
		return selfCPU()
	}
	d, _ := procCPU(pid)
	return d
}

// cost is what a window cost: the CPU time of each process of the meter, in
// order, Postgres's, and the River jobs of kind inserted in it.
type cost struct {
	procs   []time.Duration
	pg      pgDelta
	jobs    int64
	elapsed time.Duration
}

func (m *cpuMeter) stop(ctx context.Context, kind string) (cost, error) {
	c := cost{elapsed: time.Since(m.start)}
	for i, pid := range m.pids {
		c.procs = append(c.procs, cpuOf(pid)-m.procs[i])
	}
	pg, err := m.e.capturePG(ctx)
	if err != nil {
		return c, err
	}
	c.pg = pg.since(m.pg)
	if err := m.e.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE id > $1 AND kind = $2`, m.jobID0, kind).Scan(&c.jobs); err != nil {
		return c, fmt.Errorf("count River's jobs: %w", err)
	}
	return c, nil
}

// perEvent is d in milliseconds per n.
func perEvent(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1000 / float64(n)
}

// ProcessCPU returns the user and system CPU time the process pid has used
// (Linux's /proc), for measurements outside the bench such as the model
// lane's cost test.
func ProcessCPU(pid int) (time.Duration, error) { return procCPU(pid) }
