package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/store"
)

func init() {
	register("rejections", "list recorded rejections from the database, newest first", runRejections)
}

func runRejections(ctx context.Context, env *Env, args []string) error {
	var cfg config
	fs := newFlags(env, "rejections", "")
	cfg.bind(fs, env, flagsDB)
	since := fs.String("since", "", "only rejections received since this: a duration back from now (`24h`) or an RFC 3339 time")
	reason := fs.String("reason", "", "only this reason: "+reasonList())
	user := fs.String("user", "", "only this user_id")
	conversation := fs.String("conversation", "", "only this conversation_id (with --user)")
	eventID := fs.String("event-id", "", "only this event_id")
	limit := fs.Int("limit", store.DefaultRejectionLimit, "at most this many rows")
	asJSON := fs.Bool("json", false, `print a JSON array of {"id","reason","detail","event_id","user_id","conversation_id","received_at"}`)
	payloads := fs.Bool("payloads", false, "add each event's payload as received, its first 64 KiB (base64 in JSON; none for deleted conversations): it may hold message text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f := store.RejectionFilter{Reason: checkpoint.Reason(*reason), UserID: *user, ConversationID: *conversation,
		EventID: *eventID, Limit: *limit, Payloads: *payloads}
	var err error
	if f.Since, err = parseSince(*since, time.Now()); err != nil {
		return err
	}
	if *reason != "" && !slices.Contains(checkpoint.Reasons, f.Reason) {
		return fmt.Errorf("--reason %q is not a rejection reason: %s", *reason, reasonList())
	}
	if *limit <= 0 {
		return fmt.Errorf("--limit must be positive")
	}
	st, closeStore, err := openStore(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer closeStore()
	rows, err := st.Rejections(ctx, f)
	if err != nil {
		return fmt.Errorf("%w (at %s)", err, redact.ConnString(cfg.DatabaseURL))
	}
	if *asJSON {
		if rows == nil {
			rows = []store.RecordedRejection{}
		}
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(env.Stdout, "%s\n", b)
		return err
	}
	if len(rows) == 0 {
		fmt.Fprintln(env.Stderr, "no rejections")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRECEIVED\tREASON\tEVENT\tUSER\tCONVERSATION\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.ReceivedAt.Local().Format(time.DateTime), r.Reason,
			r.EventID, r.UserID, r.ConversationID, oneLine(r.Detail))
		if *payloads && r.Payload != nil {
			fmt.Fprintf(tw, "\tpayload\t%s\n", oneLine(string(r.Payload)))
		}
	}
	return tw.Flush()
}

func reasonList() string {
	names := make([]string, len(checkpoint.Reasons))
	for i, r := range checkpoint.Reasons {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// parseSince reads --since: a duration back from now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: give a duration such as 24h or an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
