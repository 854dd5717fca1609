package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/recallhq/recall/internal/devpg"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/internal/redact"
)

func init() {
	register("dev", "everything on one machine with no set-up: in-process NATS, Postgres found or started, worker and API", runDev)
}

func runDev(ctx context.Context, env *Env, args []string) error {
	var cfg config
	fs := flag.NewFlagSet("recall dev", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	cfg.bind(fs, env)
	dataDir := fs.String("data-dir", or(env.Getenv("RECALL_DEV_DIR"), ".recall-dev"), "folder for the dev NATS store, the private Postgres cluster and the JWT secret (env RECALL_DEV_DIR)")
	natsPort := fs.Int("nats-port", 4222, "port of the in-process NATS server; a free one is used when it is taken")
	if err := fs.Parse(args); err != nil {
		return err
	}
	httpSet, natsSet := env.Getenv("RECALL_HTTP_ADDR") != "", false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "http-addr":
			httpSet = true
		case "nats-port":
			natsSet = true
		}
	})
	logger, err := cfg.logger(env.Stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return fmt.Errorf("create the data folder: %w", err)
	}

	// Postgres: DATABASE_URL when it answers, else a private cluster.
	var cluster *devpg.Cluster
	if err := pingPostgres(ctx, cfg.DatabaseURL); err != nil {
		if !unreachable(err) {
			return fmt.Errorf("Postgres at %s answered with an error: %w", redact.ConnString(cfg.DatabaseURL), err)
		}
		bin, ferr := devpg.Find()
		if ferr != nil {
			return fmt.Errorf("no Postgres answers at %s, and recall cannot start one: %w", redact.ConnString(cfg.DatabaseURL), ferr)
		}
		cluster, err = devpg.New(bin, filepath.Join(*dataDir, "postgres"))
		if err != nil {
			return err
		}
		logger.InfoContext(ctx, "no Postgres answers; starting a private cluster", slog.String("dir", cluster.Dir))
		if err := cluster.Init(ctx); err != nil {
			return fmt.Errorf("initialise the private Postgres cluster: %w", err)
		}
		if err := cluster.Start(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("start the private Postgres cluster: %w", err)
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cluster.Stop(stopCtx); err != nil {
				logger.Warn("stop the private Postgres cluster", slog.String("error", err.Error()))
			} else {
				logger.Info("private Postgres cluster stopped")
			}
		}()
		cfg.DatabaseURL = cluster.URL("recall")
	}

	// NATS JetStream, in process, with its store in the data folder.
	port := *natsPort
	if !natsSet && !portFree("127.0.0.1", port) {
		port = -1
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "recall-dev",
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   filepath.Join(*dataDir, "nats"),
		MaxPayload: 32 << 20,
		SyncAlways: true,
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		return fmt.Errorf("start NATS: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("start NATS: the in-process server did not become ready")
	}
	defer func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	}()
	cfg.NATSURL = ns.ClientURL()

	if cfg.JWTSecret == "" && cfg.JWTSecretFile == "" {
		if cfg.JWTSecret, err = devSecret(*dataDir); err != nil {
			return err
		}
	}
	if err := cfg.loadJWTSecret(); err != nil {
		return err
	}
	if !httpSet && !portFree("127.0.0.1", 8080) {
		cfg.HTTPAddr = "127.0.0.1:0"
	}

	app, err := start(ctx, &cfg, roles{worker: true, api: true}, true, logger, metrics.New())
	if err != nil {
		return err
	}
	token, err := serviceToken(cfg.JWTSecret, 30*24*time.Hour)
	if err != nil {
		_ = app.stop(logger)
		return err
	}
	printDevBanner(env, app.Addr, cfg.NATSURL, cfg.DatabaseURL, *dataDir, token)
	<-ctx.Done()
	return app.stop(logger)
}

func printDevBanner(env *Env, addr, natsURL, dbURL, dataDir, token string) {
	apiURL := "http://" + addr
	w := env.Stdout
	fmt.Fprintf(w, "\nrecall dev is running. Ctrl-C drains and stops it.\n\n")
	fmt.Fprintf(w, "  API       %s\n", apiURL)
	fmt.Fprintf(w, "  NATS      %s\n", natsURL)
	fmt.Fprintf(w, "  Postgres  %s\n", redact.ConnString(dbURL))
	fmt.Fprintf(w, "  Data      %s\n\n", dataDir)
	fmt.Fprintf(w, "A service token (acts for any user; valid 30 days):\n\n")
	fmt.Fprintf(w, "export RECALL_API_URL=%s\n", apiURL)
	fmt.Fprintf(w, "export NATS_URL=%s\n", natsURL)
	fmt.Fprintf(w, "export RECALL_TOKEN=%s\n\n", token)
	fmt.Fprintf(w, "Publish a sample conversation turn by turn and read its evidence:\n\n")
	fmt.Fprintf(w, "recall publish --example planning --turns --wait\n")
	fmt.Fprintf(w, "curl -s -H \"Authorization: Bearer $RECALL_TOKEN\" \"$RECALL_API_URL/v1/users/demo-user/conversations/planning/evidence\"\n\n")
}

// devSecret returns the dev JWT secret kept in the data folder, making one
// the first time.
func devSecret(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "jwt-secret")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the dev JWT secret: %w", err)
	}
	return secret, nil
}

// serviceToken signs an HS256 token whose scope acts for any user.
func serviceToken(secret string, ttl time.Duration) (string, error) {
	now := time.Now()
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub":   "recall-dev",
		"scope": "recall:service",
		"iat":   now.Unix(),
		"exp":   now.Add(ttl).Unix(),
	})
	return t.SignedString([]byte(secret))
}

func pingPostgres(ctx context.Context, dbURL string) error {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	// The database may not exist yet: ask the server's own.
	cfg.Database = "postgres"
	cfg.ConnectTimeout = 3 * time.Second
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// unreachable reports whether a connection error means that no server
// answered (as opposed to one that refused us).
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false
	}
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &netErr) || errors.As(err, &opErr) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host")
}

func portFree(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
