package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/recallhq/recall/migrations"
)

// migrateLockID is the advisory lock that serialises concurrent migrations
// of one database ("recall" in ASCII).
const migrateLockID = 0x726563616c6c

// EnsureDatabase creates the database named in databaseURL when it does not
// exist, connecting to the server's "postgres" database to do so. Several
// processes may call it at once.
func EnsureDatabase(ctx context.Context, databaseURL string) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	name := cfg.Database
	admin := cfg.Copy()
	admin.Database = "postgres"
	aconn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect to the postgres database to create %q: %w", name, err)
	}
	defer aconn.Close(ctx)
	_, err = aconn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505") { // duplicate_database, or a concurrent create
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %q: %w", name, err)
	}
	return nil
}

// Migrate creates the database if needed and applies recall's migrations
// and River's, under an advisory lock so that concurrent callers apply them
// once. It is idempotent. It logs each migration it applies at info, and
// nothing above debug when there was none to apply.
func Migrate(ctx context.Context, databaseURL string, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := EnsureDatabase(ctx, databaseURL); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	defer pool.Close()

	lockConn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	defer lockConn.Release()
	if _, err := lockConn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrateLockID)); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	defer func() {
		// A detached context: the unlock must run even when ctx is done.
		_, _ = lockConn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrateLockID))
	}()

	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	// recall's migrations are independent of each other (each adds its own
	// tables and columns), so one that a database lacks is applied even
	// after later ones: a database migrated by a build that carried a later
	// migration but not an earlier one (two branches deployed in turn) is
	// completed rather than refused.
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithTableName("recall_schema_migrations"),
		goose.WithDisableGlobalRegistry(true),
		goose.WithAllowOutofOrder(true))
	if err != nil {
		return fmt.Errorf("load recall migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("apply recall migrations: %w", err)
	}
	// Info for what a start changed, debug for the routine check that
	// found nothing to do.
	for _, r := range results {
		logger.InfoContext(ctx, "applied recall migration", slog.Int64("version", r.Source.Version), slog.Duration("took", r.Duration))
	}
	if len(results) == 0 {
		logger.DebugContext(ctx, "recall migrations up to date")
	}

	// River's migrator logs each migration, and that there was none to
	// apply, at info: at debug here, where recall logs what was applied.
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: slog.New(debugHandler{logger.Handler()})})
	if err != nil {
		return fmt.Errorf("load River migrations: %w", err)
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("apply River migrations: %w", err)
	}
	for _, v := range res.Versions {
		logger.InfoContext(ctx, "applied River migration", slog.Int("version", v.Version), slog.Duration("took", v.Duration))
	}
	if len(res.Versions) == 0 {
		logger.DebugContext(ctx, "River migrations up to date")
	}
	return nil
}

// debugHandler writes a library's info records at debug; warnings and
// errors keep their level.
type debugHandler struct{ slog.Handler }

func (h debugHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.Handler.Enabled(ctx, demote(level))
}

func (h debugHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h debugHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugHandler{h.Handler.WithAttrs(attrs)}
}

func (h debugHandler) WithGroup(name string) slog.Handler {
	return debugHandler{h.Handler.WithGroup(name)}
}

// demote lowers the levels below warn to debug.
func demote(level slog.Level) slog.Level {
	if level < slog.LevelWarn {
		return min(level, slog.LevelDebug)
	}
	return level
}
