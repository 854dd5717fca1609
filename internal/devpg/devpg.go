// Package devpg runs a private PostgreSQL cluster for `recall dev` and for
// tests that must stop and start a server of their own: it finds the
// server binaries, initialises a data folder once, and starts and stops
// the server on a free loopback port.
//
// Find looks for the binaries on PATH, then in the folders matching
// DefaultBinGlob, or the glob in the environment variable RECALL_PG_BIN_GLOB
// when it is set (for installations elsewhere, and for tests that must see
// no binaries).
//
// PostgreSQL refuses to run as root. When the process is root, the server
// runs as the "postgres" operating-system user, and its folder is made
// reachable by that user.
package devpg

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
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
	"syscall"
	"time"
)

// ErrNoBinaries is returned (wrapped, with where Find looked and what to
// install) by Find when no PostgreSQL server binaries are installed.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries found")

// BinGlobEnv names the environment variable that overrides DefaultBinGlob.
const BinGlobEnv = "RECALL_PG_BIN_GLOB"

// DefaultBinGlob matches the bin folders of Debian and Ubuntu's PostgreSQL
// packages, one per major version.
const DefaultBinGlob = "/usr/lib/postgresql/*/bin"

// Find returns the folder holding initdb, pg_ctl and postgres: the one of
// pg_ctl on PATH, else the newest major version's among the folders that
// match RECALL_PG_BIN_GLOB (default DefaultBinGlob).
func Find() (string, error) {
	glob := cmp.Or(os.Getenv(BinGlobEnv), DefaultBinGlob)
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		dir := filepath.Dir(p)
		if hasServer(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(glob)
	// Newest major first.
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, dir := range dirs {
		if hasServer(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w (initdb, pg_ctl and postgres, on PATH or in %s): "+
		"install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql; Fedora: dnf install postgresql-server; "+
		"macOS: brew install postgresql), set %s to the glob of its bin folder, "+
		"or set DATABASE_URL to a server that answers", ErrNoBinaries, glob, BinGlobEnv)
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// Cluster is a private PostgreSQL cluster.
type Cluster struct {
	// Dir is the cluster's folder: data in Dir/data, socket and log beside.
	Dir  string
	Bin  string
	Port int
	// Settings are extra server settings, "name=value" each (for example
	// "max_connections=400"), given to the server at Start.
	Settings []string
	cred     *syscall.Credential
}

// New returns a cluster in dir, to be run with the binaries in bin.
func New(bin, dir string) (*Cluster, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: abs, Bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, errors.New("running as root: PostgreSQL needs a non-root user to run as, and there is no \"postgres\" user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if !othersCanReach(abs) {
			// The postgres user cannot reach dir (say, under /root): keep
			// the cluster in a folder of its own under the temp folder.
			sum := sha256.Sum256([]byte(abs))
			c.Dir = filepath.Join(os.TempDir(), "recall-postgres-"+hex.EncodeToString(sum[:6]))
		}
	}
	return c, nil
}

// URL returns the URL of database name on the running cluster.
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, name)
}

func (c *Cluster) dataDir() string { return filepath.Join(c.Dir, "data") }

// Init initialises the data folder unless it already holds a cluster.
func (c *Cluster) Init(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dataDir(), "PG_VERSION")); err == nil {
		return nil
	}
	if err := os.MkdirAll(c.dataDir(), 0o700); err != nil {
		return err
	}
	if err := c.own(); err != nil {
		return err
	}
	return c.run(ctx, "initdb", "-D", c.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-instructions")
}

// own gives the cluster's folder to the user the server runs as, and lets
// that user reach it.
func (c *Cluster) own() error {
	if c.cred == nil {
		return nil
	}
	err := filepath.Walk(c.Dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(c.cred.Uid), int(c.cred.Gid))
	})
	if err != nil {
		return fmt.Errorf("give %s to the postgres user: %w", c.Dir, err)
	}
	return nil
}

// othersCanReach reports whether every parent of dir grants search
// permission to other users.
func othersCanReach(dir string) bool {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil && fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == "/" || d == "." {
			return true
		}
	}
}

// Start starts the server on a free loopback port (or the previous one,
// Port, when set and free) and waits until it accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	if c.Port == 0 || !portFree(c.Port) {
		p, err := freePort()
		if err != nil {
			return err
		}
		c.Port = p
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=200", c.Port, c.Dir)
	for _, s := range c.Settings {
		opts += " -c " + s // later settings win
	}
	return c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-o", opts, "-l", filepath.Join(c.Dir, "postgres.log"), "-w", "-t", "60", "start")
}

// Stop stops the server (fast shutdown: sessions are disconnected).
func (c *Cluster) Stop(ctx context.Context) error { return c.StopMode(ctx, "fast") }

// StopMode stops the server in a pg_ctl shutdown mode: "smart", "fast", or
// "immediate" (like a crash: no checkpoint, recovery at the next start).
func (c *Cluster) StopMode(ctx context.Context, mode string) error {
	return c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-m", mode, "-w", "-t", "60", "stop")
}

// Remove stops the server if it runs and deletes the cluster's folder.
func (c *Cluster) Remove(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dataDir(), "postmaster.pid")); err == nil {
		_ = c.StopMode(ctx, "immediate")
	}
	return os.RemoveAll(c.Dir)
}

// Running reports whether the server is running.
func (c *Cluster) Running(ctx context.Context) bool {
	return c.run(ctx, "pg_ctl", "-D", c.dataDir(), "status") == nil
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, name), args...)
	cmd.Dir = c.Dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(out.String()))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// WaitReady waits until the server accepts TCP connections.
func (c *Cluster) WaitReady(ctx context.Context) error {
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.Port), time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
