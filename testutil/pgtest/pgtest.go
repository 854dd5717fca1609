// Package pgtest gives tests their own Postgres database on the server named
// by TEST_DATABASE_URL (default: the machine's, postgres@127.0.0.1:5432).
// A missing server fails the test with a message that says so; it is never
// skipped.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallhq/recall/internal/redact"
)

// DefaultURL is the server tests use when TEST_DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL returns the URL of the test server's maintenance database.
func ServerURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// CreateDatabase creates an empty database with a unique name and returns
// its URL and a function that drops it. It is for a TestMain, which has no
// test to clean up after; tests call NewDatabase.
func CreateDatabase(ctx context.Context) (dbURL string, drop func() error, err error) {
	name, dbURL, err := newName()
	if err != nil {
		return "", nil, err
	}
	admin, err := connect(ctx)
	if err != nil {
		return "", nil, err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("pgtest: create database: %w", err)
	}
	return dbURL, func() error { return dropDatabase(name) }, nil
}

// NewDatabase creates an empty database with a unique name, drops it when
// the test ends, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dbURL, drop, err := CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Log(err)
		}
	})
	return dbURL
}

// UncreatedDatabase returns the URL of a database with a unique name that
// does not exist yet, for the code under test to create (recall dev, or
// migrations), and drops it when the test ends. It fails the test when
// the server is not reachable.
func UncreatedDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	name, dbURL, err := newName()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dropDatabase(name); err != nil {
			t.Error(err)
		}
	})
	return dbURL
}

// NewPool creates a database with NewDatabase and returns a pool on it,
// closed when the test ends.
func NewPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	dbURL := NewDatabase(t)
	return Pool(t, dbURL), dbURL
}

// Migrate migrates a database to recall's schema: store.Migrate, which
// pgtest cannot import, since package store's own tests use pgtest.
type Migrate func(ctx context.Context, databaseURL string, logger *slog.Logger) error

// NewMigratedPool creates a database with NewDatabase, migrates it and
// returns a pool on it, closed when the test ends, and its URL.
func NewMigratedPool(t testing.TB, migrate Migrate) (*pgxpool.Pool, string) {
	t.Helper()
	dbURL := NewDatabase(t)
	return MigratedPool(t, dbURL, migrate), dbURL
}

// MigratedPool migrates the database at dbURL and returns a pool on it,
// closed when the test ends.
func MigratedPool(t testing.TB, dbURL string, migrate Migrate) *pgxpool.Pool {
	t.Helper()
	if err := migrate(context.Background(), dbURL, nil); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return Pool(t, dbURL)
}

// Pool returns a pool on the database at dbURL, closed when the test ends.
func Pool(t testing.TB, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Must fails the test on err.
func Must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, fmt.Sprint(err))
	}
}

// newName returns a unique database name and its URL on the test server.
func newName() (name, dbURL string, err error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = "recall_test_" + hex.EncodeToString(b[:])
	u, err := url.Parse(ServerURL())
	if err != nil {
		return "", "", fmt.Errorf("pgtest: parse TEST_DATABASE_URL: %w", err)
	}
	u.Path = "/" + name
	return name, u.String(), nil
}

// dropDatabase drops the database name, if it exists.
func dropDatabase(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		return fmt.Errorf("pgtest: drop %s: %w", name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: drop %s: %w", name, err)
	}
	return nil
}

// connect connects to the test server's maintenance database.
func connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return nil, fmt.Errorf("pgtest: Postgres is not reachable at %s (start it, or set TEST_DATABASE_URL): %w", redact.ConnString(ServerURL()), err)
	}
	return conn, nil
}
