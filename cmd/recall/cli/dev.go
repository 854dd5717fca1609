package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/internal/devpg"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/internal/redact"
)

func init() {
	register("dev", "everything on one machine with no set-up: in-process NATS, Postgres found or started, worker and API", runDev)
}

// devGroups are the shared flags of recall dev: everything but -nats-url
// (dev runs its own NATS).
const devGroups = flagsDB | flagsStream | flagsAPI | flagsLog | flagsWorker | flagsLimits | flagsShutdown | flagsProfile | flagsModel

func runDev(ctx context.Context, env *Env, args []string) error {
	var cfg config
	fs := newFlags(env, "dev", "")
	cfg.bind(fs, env, devGroups)
	dataDir := fs.String("data-dir", cmp.Or(env.Getenv("RECALL_DEV_DIR"), ".recall-dev"), "folder for the dev NATS store, the private Postgres cluster, the JWT secret and the NATS port (env RECALL_DEV_DIR)")
	natsPort := fs.Int("nats-port", 4222, "port of the in-process NATS server; by default the port of the last run (kept in the data folder), else 4222, else a free one")
	pgMode := fs.String("postgres", cmp.Or(env.Getenv("RECALL_DEV_POSTGRES"), "auto"),
		"auto: DATABASE_URL when set (it must answer), else the default URL when it answers, else a private cluster in the data folder; private: always the private cluster (env RECALL_DEV_POSTGRES)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *pgMode != "auto" && *pgMode != "private" {
		return fmt.Errorf("-postgres must be auto or private, not %q", *pgMode)
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
	// The banner comes first: routine logs of the start (migrations, the
	// worker, the wake-ups) wait for it. Warnings and errors do not.
	var hold logHold
	logger = hold.logger(logger.Handler())
	defer hold.release(ctx)
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return fmt.Errorf("create the data folder: %w", err)
	}

	// Postgres: DATABASE_URL when it answers, else a private cluster.
	var cluster *devpg.Cluster
	usePrivate := *pgMode == "private"
	if !usePrivate {
		if err := pingPostgres(ctx, cfg.DatabaseURL); err != nil {
			switch {
			case !unreachable(err):
				//lint:ignore ST1005 begins with a proper noun (Postgres), which ST1005 allows but cannot tell from a capitalized word
				return fmt.Errorf("Postgres at %s answered with an error: %w", redact.ConnString(cfg.DatabaseURL), err)
			case cfg.DatabaseURLSet:
				// A URL the user chose is not silently replaced.
				return fmt.Errorf("no Postgres answers at %s, the DATABASE_URL you set: %w "+
					"(start that server, fix the URL, or unset DATABASE_URL to let recall dev use a private cluster)", redact.ConnString(cfg.DatabaseURL), err)
			}
			usePrivate = true
		}
	}
	if usePrivate {
		bin, ferr := devpg.Find()
		if ferr != nil {
			if *pgMode == "private" {
				return fmt.Errorf("cannot start a private Postgres: %w", ferr)
			}
			return fmt.Errorf("no Postgres answers at %s, and recall dev cannot start one: %w", redact.ConnString(cfg.DatabaseURL), ferr)
		}
		cluster, err = devpg.New(bin, filepath.Join(*dataDir, "postgres"))
		if err != nil {
			return err
		}
		logger.InfoContext(ctx, "starting a private Postgres cluster", slog.String("dir", cluster.Dir))
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
	if !natsSet {
		port = devNATSPort(*dataDir)
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
	if !natsSet {
		// The next run takes the same port, so that pasted exports stay
		// good across restarts.
		if err := os.WriteFile(filepath.Join(*dataDir, natsPortFile), []byte(strconv.Itoa(ns.Addr().(*net.TCPAddr).Port)+"\n"), 0o644); err != nil {
			logger.WarnContext(ctx, "cannot remember the NATS port", slog.String("error", err.Error()))
		}
	}

	if cfg.JWTSecret == "" && cfg.JWTSecretFile == "" {
		if cfg.JWTSecret, err = devSecret(*dataDir); err != nil {
			return err
		}
	}
	if err := cfg.loadAPIAuth(); err != nil {
		return err
	}
	if !httpSet && !portFree("127.0.0.1", 8080) {
		cfg.HTTPAddr = "127.0.0.1:0"
	}

	app, err := start(ctx, &cfg, roles{worker: true, api: true}, true, logger, metrics.New())
	if err != nil {
		return err
	}
	token, err := serviceToken(cfg.JWTSecret, devTokenTTL)
	if err != nil {
		_ = app.stop(logger)
		return err
	}
	// The MCP snippet's token acts for the sample conversations' user, so
	// that the tools need no user_id.
	demoToken, err := apiclient.Sign([]byte(cfg.JWTSecret), devUser, devTokenTTL, nil)
	if err != nil {
		_ = app.stop(logger)
		return err
	}
	printDevBanner(env, app.Addr, cfg.NATSURL, cfg.DatabaseURL, *dataDir, token)
	printMCPSnippet(env.Stdout, "http://"+app.Addr, demoToken, recallCommand())
	hold.release(ctx)
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
	fmt.Fprintf(w, "curl -s -H \"Authorization: Bearer $RECALL_TOKEN\" \"$RECALL_API_URL/v1/users/%s/conversations/planning/evidence\"\n\n", devUser)
	fmt.Fprintf(w, "A token for one user (what to give a user's own client): recall token USER --ttl 1h\n\n")
	fmt.Fprintf(w, "See what recall holds of a conversation and why, in the evidence inspector (the token rides in the\n")
	fmt.Fprintf(w, "URL's fragment, which the browser keeps to itself):\n\n")
	fmt.Fprintf(w, "%s\n\n", inspectorURL(apiURL, devUser, token))
}

// devUser is the user of the sample conversations (examples/conversations).
const devUser = "demo-user"

// devTokenTTL is how long the tokens recall dev prints are valid.
const devTokenTTL = 30 * 24 * time.Hour

// printMCPSnippet prints what adds recall to an MCP client's configuration:
// the mcpServers entry that starts `recall mcp` over stdio, acting with
// token, and the address of the API's own /mcp.
func printMCPSnippet(w io.Writer, apiURL, token, command string) {
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	b, _ := json.Marshal(map[string]map[string]server{"mcpServers": {"recall": {
		Command: command,
		Args:    []string{"mcp"},
		Env:     map[string]string{"RECALL_API_URL": apiURL, "RECALL_TOKEN": token},
	}}})
	fmt.Fprintf(w, "Give an MCP client (a desktop assistant, an agent) recall's tools: add this to its configuration\n")
	fmt.Fprintf(w, "(the token acts for %s; `recall token USER` prints one for another user):\n\n", devUser)
	fmt.Fprintf(w, "%s\n\n", b)
	fmt.Fprintf(w, "or point a streamable-HTTP client at %s/mcp with the header \"Authorization: Bearer <token>\".\n\n", apiURL)
}

// recallCommand is the path of the running recall binary for the MCP
// snippet, or "recall" when it is a temporary build of `go run`.
func recallCommand() string {
	exe, err := os.Executable()
	if err != nil || strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "recall"
	}
	return exe
}

// inspectorURL is the evidence inspector's address on apiURL, opening
// userID's conversations, with token in the fragment: the page moves it to
// the tab's session storage and never sends it in a URL.
func inspectorURL(apiURL, userID, token string) string {
	return apiURL + "/inspect/#" + url.Values{"user": {userID}, "token": {token}}.Encode()
}

// devSecret returns the dev JWT secret kept in the data folder, making one
// the first time.
func devSecret(dataDir string) (string, error) {
	path := filepath.Join(dataDir, devSecretFile)
	if secret, err := readDevSecret(dataDir); err == nil {
		return secret, nil
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

// devSecretFile, in the data folder, holds the dev JWT secret.
const devSecretFile = "jwt-secret"

// readDevSecret returns the JWT secret recall dev keeps in dataDir.
func readDevSecret(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, devSecretFile))
	if err != nil {
		return "", err
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("%s is empty", filepath.Join(dataDir, devSecretFile))
	}
	return secret, nil
}

// serviceToken signs an HS256 token whose scope acts for any user.
func serviceToken(secret string, ttl time.Duration) (string, error) {
	return apiclient.Sign([]byte(secret), "recall-dev", ttl, &apiclient.TokenOptions{Service: true})
}

// natsPortFile, in the data folder, holds the port of the last run's NATS.
const natsPortFile = "nats-port"

// devNATSPort chooses the in-process NATS server's port: the last run's
// when it is free, else 4222 when it is free, else any free port (-1).
func devNATSPort(dataDir string) int {
	candidates := []int{4222}
	if b, err := os.ReadFile(filepath.Join(dataDir, natsPortFile)); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p < 65536 {
			candidates = []int{p, 4222}
		}
	}
	for _, p := range candidates {
		if portFree("127.0.0.1", p) {
			return p
		}
	}
	return -1
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
