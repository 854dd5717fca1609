package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/store"
)

func init() {
	register("state", "print a conversation's evidence from the database", runState)
}

func runState(ctx context.Context, env *Env, args []string) error {
	var cfg config
	fs := newFlags(env, "state", "USER_ID CONVERSATION_ID")
	cfg.bind(fs, env, flagsDB)
	format := fs.String("format", "json", "output: json (the read API's response) or table")
	maxTokens := fs.Int("max-tokens", 0, "render the evidence message within this many estimated tokens (0: no limit)")
	positional, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(positional) != 2 {
		fmt.Fprintf(env.Stderr, "recall state: want USER_ID and CONVERSATION_ID, got %d arguments\n", len(positional))
		fs.Usage()
		return errUsage
	}
	userID, convID := positional[0], positional[1]
	for _, k := range []struct{ name, v string }{{"USER_ID", userID}, {"CONVERSATION_ID", convID}} {
		if err := checkpoint.ValidateKey(k.name, k.v); err != nil {
			return err
		}
	}
	if *format != "json" && *format != "table" {
		return fmt.Errorf("-format must be json or table, not %q", *format)
	}
	st, closeStore, err := openStore(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer closeStore()
	rec, err := st.Evidence(ctx, userID, convID)
	if err != nil {
		return err
	}
	var doc []byte
	if *maxTokens > 0 {
		if doc, err = rec.AppendJSONWithin(nil, *maxTokens, false); err != nil {
			return err
		}
	} else {
		doc = rec.AppendJSON(nil, false)
	}
	if *format == "json" {
		return writeIndented(env.Stdout, doc)
	}
	s, err := rec.State()
	if err != nil {
		return err
	}
	return printStateTable(env.Stdout, &rec, &s)
}

func printStateTable(w io.Writer, rec *evidence.Record, s *evidence.State) error {
	fmt.Fprintf(w, "%s / %s  version %d  cursor %d of %d messages  omitted %d\n",
		rec.UserID, rec.ConversationID, rec.Version, rec.Cursor, rec.MessageCount, s.OmittedEntries)
	if !rec.UpdatedAt.IsZero() {
		fmt.Fprintf(w, "updated %s\n", rec.UpdatedAt.Format("2006-01-02 15:04:05Z07:00"))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nBUCKET\tINDEX\tROLE\tMESSAGE\tEXCERPT")
	for _, b := range []evidence.Bucket{evidence.Constraints, evidence.Decisions, evidence.OpenWork, evidence.RecentContext} {
		for _, e := range *s.Buckets.Get(b) {
			ex := strings.Join(strings.Fields(e.Excerpt), " ")
			if r := []rune(ex); len(r) > 80 {
				ex = string(r[:79]) + "…"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", b, e.Index, e.Role, e.MessageID, ex)
		}
	}
	return tw.Flush()
}

// openStore connects a command that reads the database to it, and returns
// the store and the function that closes its pool.
func openStore(ctx context.Context, dbURL string) (*store.Store, func(), error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	st, err := store.New(pool, nil)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return st, pool.Close, nil
}
