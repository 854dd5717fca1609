package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/client"
	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/mcp"
)

func init() {
	register("mcp", "a Model Context Protocol server on stdio: a client of the HTTP API at RECALL_API_URL, acting with the token RECALL_TOKEN", runMCP)
}

func runMCP(ctx context.Context, env *Env, args []string) error {
	var cfg config
	fs := newFlags(env, "mcp", "")
	cfg.bind(fs, env, flagsLog)
	apiURL := fs.String("api-url", cmp.Or(env.Getenv("RECALL_API_URL"), defaultAPIURL), "base URL of recall's HTTP API (env RECALL_API_URL)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// Stdout carries the protocol: logs go to stderr.
	logger, err := cfg.logger(env.Stderr)
	if err != nil {
		return err
	}
	// The token is read from the environment only: an argument shows in ps.
	token := env.Getenv("RECALL_TOKEN")
	if token == "" {
		return errors.New("set RECALL_TOKEN to a bearer token of the API: `recall token USER` prints one for a user, `recall dev` a service token")
	}
	c, err := client.New(*apiURL, token, client.WithUserAgent("recall-mcp"))
	if err != nil {
		return fmt.Errorf("RECALL_API_URL: %w", err)
	}
	var caller api.Caller
	if claims, err := apiclient.ReadClaims(token); err != nil {
		logger.WarnContext(ctx, "RECALL_TOKEN is not a JWT: every call must name its user_id", slog.String("error", err.Error()))
	} else {
		caller = api.Caller{Subject: claims.Subject, Service: claims.Service}
	}
	s, err := mcp.New(mcp.NewClientBackend(c), &mcp.Config{Caller: caller, Logger: logger})
	if err != nil {
		return err
	}
	logger.DebugContext(ctx, "serving MCP on stdio", slog.String("api_url", redact.ConnString(*apiURL)), slog.Bool("service", caller.Service))
	return s.Serve(ctx, env.Stdin, env.Stdout)
}

// mcpHandler builds the API's /mcp: the MCP server over the API's own
// reads, for each request's verified caller.
func mcpHandler(logger *slog.Logger) func(*api.Reads) (http.Handler, error) {
	return func(r *api.Reads) (http.Handler, error) {
		s, err := mcp.New(mcp.NewReadsBackend(r), &mcp.Config{Logger: logger})
		if err != nil {
			return nil, err
		}
		return s.HTTPHandler(), nil
	}
}
