package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/recallhq/recall/internal/devpg"
)

// PrivateCluster returns a PostgreSQL cluster of the test's own (the
// binaries `recall dev` finds), not initialised or started yet, with the
// server settings given; it is stopped and removed when the test ends. A
// test uses one when it needs what the shared server cannot give: every
// commit and WAL byte to itself, or replication connections.
func PrivateCluster(t testing.TB, settings ...string) *devpg.Cluster {
	t.Helper()
	bin, err := devpg.Find()
	if err != nil {
		t.Fatalf("a private Postgres cluster needs the PostgreSQL server binaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "recall-test-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c, err := devpg.New(bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	c.Settings = settings
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.Remove(ctx)
		_ = os.RemoveAll(dir)
	})
	return c
}
