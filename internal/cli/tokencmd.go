package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/token"
)

func init() {
	register("token", "print a signed bearer token for a user of the HTTP API", runToken)
}

func runToken(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "token", "USER_ID")
	service := fs.Bool("service", false, "add the "+token.ServiceScope+" scope: the token acts for any user (keep it on your backend)")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid, a Go duration such as `2m`")
	fs.String("jwt-secret", "", "HS256 secret to sign with (env RECALL_JWT_SECRET; default: the dev data folder's)")
	dataDir := fs.String("data-dir", or(env.Getenv("RECALL_DEV_DIR"), ".recall-dev"), "recall dev's data folder, whose secret signs when RECALL_JWT_SECRET is not set (env RECALL_DEV_DIR)")
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
	if err := evidence.ValidateKey("USER_ID", user); err != nil {
		return err
	}
	if *ttl <= 0 {
		return errors.New("--ttl must be positive")
	}
	// The secret is read after parsing, so that -h never prints it.
	secret := fs.Lookup("jwt-secret").Value.String()
	if secret == "" {
		secret = env.Getenv("RECALL_JWT_SECRET")
	}
	if secret == "" {
		if secret, err = readDevSecret(*dataDir); err != nil {
			return fmt.Errorf("no secret to sign with: set RECALL_JWT_SECRET (the API's), or run recall dev, which keeps one in %s (%v)", *dataDir, err)
		}
	}
	s, err := token.Sign([]byte(secret), user, *ttl, &token.Options{Service: *service})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.Stdout, s)
	return err
}
