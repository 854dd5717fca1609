package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallhq/recall/internal/devpg"
)

// pgCluster is a private PostgreSQL cluster the test owns (internal/devpg,
// as `recall dev` uses): its own data folder, port and socket folder, so
// that it can be stopped and started without touching the machine's
// server. As root, the server runs as the postgres OS user.
type pgCluster struct {
	*devpg.Cluster
}

// newPGCluster initialises a cluster in a fresh folder and starts it on a
// free loopback port with the settings given (name=value).
func newPGCluster(settings ...string) (*pgCluster, error) {
	bin, err := devpg.Find()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "recall-faults-pg-")
	if err != nil {
		return nil, err
	}
	c, err := devpg.New(bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.Settings = settings
	p := &pgCluster{c}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Init(ctx); err != nil {
		p.Remove()
		return nil, err
	}
	if err := p.Start(); err != nil {
		p.Remove()
		return nil, err
	}
	return p, nil
}

// Start starts the server (again, on the same port when it is free) and
// waits until it accepts connections.
func (p *pgCluster) Start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return p.Cluster.Start(ctx)
}

// Stop stops the server: mode "fast" (clean) or "immediate" (like a crash).
func (p *pgCluster) Stop(mode string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return p.StopMode(ctx, mode)
}

// Remove stops the server if it runs and deletes its folder.
func (p *pgCluster) Remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = p.Cluster.Remove(ctx)
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
		suitePG, suitePGErr = newPGCluster("max_connections=400", "shared_buffers=256MB", "fsync=off", "full_page_writes=off")
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
		bin, err := devpg.Find()
		if err != nil {
			return
		}
		if c, err := devpg.New(bin, d); err == nil {
			(&pgCluster{c}).Remove()
		}
	}
}

func removeSuiteCluster() {
	if suitePG != nil {
		suitePG.Remove()
	}
}
