package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/apiclient"
)

func init() {
	register("token", "print a signed bearer token for a user of the HTTP API", runToken)
}

func runToken(ctx context.Context, env *Env, args []string) error {
	var cfg config
	fs := newFlags(env, "token", "USER_ID")
	service := fs.Bool("service", false, "add the "+apiclient.ServiceScope+" scope: the token acts for any user (keep it on your backend)")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid, a Go duration such as `2m`")
	cfg.bindJWTSecret(fs, env, true)
	dataDir := fs.String("data-dir", cmp.Or(env.Getenv("RECALL_DEV_DIR"), ".recall-dev"), "recall dev's data folder, whose secret signs when neither RECALL_JWT_SECRET nor -jwt-secret-file is set (env RECALL_DEV_DIR)")
	positional, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		fmt.Fprintf(env.Stderr, "recall token: want one USER_ID, got %d arguments\n", len(positional))
		fs.Usage()
		return errUsage
	}
	user := positional[0]
	if err := checkpoint.ValidateKey("USER_ID", user); err != nil {
		return err
	}
	if *ttl <= 0 {
		return errors.New("--ttl must be positive")
	}
	// The API's secret (RECALL_JWT_SECRET or -jwt-secret-file), else the
	// one recall dev keeps; a token signed with a short secret would betray
	// it, so the API's rules apply here too.
	if cfg.JWTSecret == "" && cfg.JWTSecretFile == "" {
		if cfg.JWTSecret, err = readDevSecret(*dataDir); err != nil {
			return fmt.Errorf("no secret to sign with: set RECALL_JWT_SECRET (the API's) or -jwt-secret-file, or run recall dev, which keeps one in %s (%v)", *dataDir, err)
		}
	}
	if err := cfg.loadJWTSecret(); err != nil {
		return err
	}
	s, err := apiclient.Sign([]byte(cfg.JWTSecret), user, *ttl, &apiclient.TokenOptions{Service: *service})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.Stdout, s)
	return err
}
