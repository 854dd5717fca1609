package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCluster is a private PostgreSQL cluster the test owns: its own data
// folder, port and socket folder, so that it can be stopped and started
// without touching the machine's server. When the tests run as root the
// server binaries run as the postgres OS user (initdb refuses root).
type pgCluster struct {
	bin  string // folder of initdb, pg_ctl, postgres
	dir  string // temporary folder owned by the server's user
	data string
	port int
	cred *syscall.Credential
}

// pgBinDir returns the newest /usr/lib/postgresql/*/bin with pg_ctl.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)")
}

// newPGCluster runs initdb in a fresh folder and starts the server on a
// free loopback port with the settings given (name=value).
func newPGCluster(settings ...string) (*pgCluster, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	p := &pgCluster{bin: bin}
	dir, err := os.MkdirTemp("", "recall-faults-pg-")
	if err != nil {
		return nil, err
	}
	p.dir, p.data = dir, filepath.Join(dir, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, the server needs the postgres OS user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	if out, err := p.run("initdb", "-D", p.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		p.Remove()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.Remove()
		return nil, err
	}
	p.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", p.port),
		fmt.Sprintf("unix_socket_directories = '%s'", dir),
	}
	for _, s := range settings {
		k, v, _ := strings.Cut(s, "=")
		conf = append(conf, fmt.Sprintf("%s = %s", k, v))
	}
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		p.Remove()
		return nil, err
	}
	_, err = f.WriteString("\n# recall fault suite\n" + strings.Join(conf, "\n") + "\n")
	f.Close()
	if err != nil {
		p.Remove()
		return nil, err
	}
	if err := p.Start(); err != nil {
		p.Remove()
		return nil, err
	}
	return p, nil
}

func (p *pgCluster) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(p.bin, prog), args...)
	cmd.Dir = p.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C.UTF-8"}
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd.CombinedOutput()
}

// Start starts the server and waits until it accepts connections.
func (p *pgCluster) Start() error {
	out, err := p.run("pg_ctl", "start", "-D", p.data, "-l", filepath.Join(p.dir, "server.log"), "-w", "-t", "60")
	if err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, tail(filepath.Join(p.dir, "server.log"), 20))
	}
	return nil
}

// Stop stops the server: mode "fast" (clean) or "immediate" (like a crash).
func (p *pgCluster) Stop(mode string) error {
	out, err := p.run("pg_ctl", "stop", "-D", p.data, "-m", mode, "-w", "-t", "60")
	if err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %w\n%s", mode, err, out)
	}
	return nil
}

// Remove stops the server if it runs and deletes its folder.
func (p *pgCluster) Remove() {
	if _, err := os.Stat(filepath.Join(p.data, "postmaster.pid")); err == nil {
		_ = p.Stop("immediate")
	}
	os.RemoveAll(p.dir)
}

// URL returns the URL of database db.
func (p *pgCluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, db)
}

// NewDatabase creates a database with a unique name and returns its URL.
func (p *pgCluster) NewDatabase(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		t.Fatalf("private Postgres cluster: %v", err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "recall_faults_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return p.URL(name)
}

// The suite's shared private cluster, for the scenarios that need many
// connections: the machine's server allows 100 in all and other packages'
// tests use it at the same time, while three workers with the default
// concurrency of 16 may open 40 each. It is started on first use and
// removed when the tests end.
var (
	suitePGOnce sync.Once
	suitePG     *pgCluster
	suitePGErr  error
)

func suiteCluster(t *testing.T) *pgCluster {
	t.Helper()
	suitePGOnce.Do(func() {
		suitePG, suitePGErr = newPGCluster("max_connections=400", "shared_buffers='256MB'", "fsync=off", "full_page_writes=off")
	})
	if suitePGErr != nil {
		t.Fatalf("private Postgres cluster: %v", suitePGErr)
	}
	return suitePG
}

// sweepStaleClusters stops and removes the private clusters that a test
// process which died (a -timeout panic, a kill) left behind: those whose
// folder is older than the longest run.
func sweepStaleClusters() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "recall-faults-pg-*"))
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || time.Since(fi.ModTime()) < 90*time.Minute {
			continue
		}
		p := &pgCluster{dir: d, data: filepath.Join(d, "data")}
		if bin, err := pgBinDir(); err == nil {
			p.bin = bin
			if os.Geteuid() == 0 {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					p.cred = &syscall.Credential{Uid: st.Uid, Gid: st.Gid}
				}
			}
			p.Remove()
		}
	}
}

func removeSuiteCluster() {
	if suitePG != nil {
		suitePG.Remove()
	}
}
