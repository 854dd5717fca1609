package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/examples"
	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/publisher"
)

func init() {
	register("publish", "publish a checkpoint event from a JSON file or stdin", runPublish)
}

const defaultAPIURL = "http://127.0.0.1:8080"

// publishFlags are the flags of recall publish.
type publishFlags struct {
	natsURL   string
	subject   string
	apiURL    string
	token     string
	jwtSecret string
	// jwtSecretFile holds the secret; a secret is never a flag value.
	jwtSecretFile string
	user          string
	conversation  string
	eventID       string
	example       string
	offset        int
	turns         bool
	wait          bool
	waitTimeout   time.Duration
	timeout       time.Duration
}

const publishUsage = `Usage: recall publish [flags] [FILE]

Publish a checkpoint event from a JSON file or stdin.

Publishes to NATS JetStream and prints where the stream stored it. FILE (or
standard input when FILE is absent or "-") holds either
  - a full event: {"schema":"recall.checkpoint.v1","event_id",...}, or
  - a conversation: {"user_id","conversation_id","messages":[...]}, published
    as a snapshot of the whole history (examples/conversations has two), or
  - a bare list of messages, with --user and --conversation.
The event id is the event's own, --event-id, or a random one; it is also the
Nats-Msg-Id header. The command waits for the JetStream ack and exits non-zero
when none comes.

Examples:
  recall publish conversation.json
  recall publish --offset 4 conversation.json     # an append of messages [4:]
  recall publish --turns --wait planning.json      # replay turn by turn
  recall publish --example planning --turns --wait # a built-in sample
  recall publish --user u-42 --conversation c-7 --wait < history.json

Flags:
`

func (f *publishFlags) bind(fs *flag.FlagSet, env *Env) {
	str := func(p *string, name, envName, def, usage string) {
		v := env.Getenv(envName)
		if v == "" {
			v = def
		}
		fs.StringVar(p, name, v, usage+" (env "+envName+")")
	}
	f.natsURL = cmp.Or(env.Getenv("NATS_URL"), defaultNATSURL)
	fs.Var(redactedFlag{p: &f.natsURL, redact: redact.ConnString}, "nats-url", "NATS server URL (env NATS_URL)")
	str(&f.subject, "subject", "RECALL_SUBJECT", publisher.DefaultSubject, "NATS subject of checkpoint events")
	str(&f.apiURL, "api-url", "RECALL_API_URL", defaultAPIURL, "base URL of recall's read API, for --wait")
	// Secrets are read from the environment after parsing, so that -h
	// never prints them as defaults.
	fs.StringVar(&f.token, "token", "", "bearer token of the read API, for --wait (env RECALL_TOKEN)")
	fs.StringVar(&f.jwtSecretFile, "jwt-secret-file", "", "without a token, --wait signs a short-lived one for the user with the secret in this file (or env RECALL_JWT_SECRET)")
	fs.Var(refusedSecretFlag{}, "jwt-secret", "not accepted: a secret on the command line shows in ps; use RECALL_JWT_SECRET or -jwt-secret-file")
	fs.StringVar(&f.user, "user", "", "user_id, overriding the input's")
	fs.StringVar(&f.conversation, "conversation", "", "conversation_id, overriding the input's")
	fs.StringVar(&f.eventID, "event-id", "", "event_id, overriding the input's (default: the input's, else a random one)")
	fs.StringVar(&f.example, "example", "", "publish a sample conversation built into recall instead of FILE: "+strings.Join(examples.Names(), ", "))
	fs.IntVar(&f.offset, "offset", 0, "publish an append event at offset `K`: the input is the full history, the event carries messages [K:] and the prefix digest of [0, K)")
	fs.BoolVar(&f.turns, "turns", false, "publish every prefix of the history that ends in a user message as a growing snapshot, one event per turn")
	fs.BoolVar(&f.wait, "wait", false, "after publishing, wait until the read API's cursor reaches the newest user message, then print the evidence")
	fs.DurationVar(&f.waitTimeout, "wait-timeout", 60*time.Second, "how long --wait waits (per turn with --turns)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "how long to wait for NATS to connect and for each JetStream ack")
}

func runPublish(ctx context.Context, env *Env, args []string) error {
	var f publishFlags
	fs := newFlags(env, "publish", "[FILE]")
	fs.Usage = func() {
		fmt.Fprint(env.Stderr, publishUsage)
		fs.PrintDefaults()
	}
	f.bind(fs, env)
	positional, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	f.token = cmp.Or(f.token, env.Getenv("RECALL_TOKEN"))
	f.jwtSecret = env.Getenv("RECALL_JWT_SECRET")
	if f.jwtSecretFile != "" {
		var err error
		if f.jwtSecret, err = readSecretFile(f.jwtSecretFile); err != nil {
			return err
		}
	}
	usageErr := func(format string, args ...any) error {
		fmt.Fprintf(env.Stderr, "recall publish: "+format+"\n", args...)
		fmt.Fprintln(env.Stderr, `Run "recall publish -h" for usage.`)
		return errUsage
	}
	if len(positional) > 1 {
		return usageErr("at most one FILE, got %d arguments", len(positional))
	}
	file := ""
	if len(positional) == 1 {
		file = positional[0]
	}
	switch {
	case f.example != "" && file != "":
		return usageErr("--example publishes a built-in conversation; drop FILE")
	case f.offset < 0:
		return usageErr("--offset must not be negative")
	case f.turns && f.offset > 0:
		return usageErr("--turns publishes snapshots; it cannot be combined with --offset")
	case f.turns && f.eventID != "":
		return usageErr("--turns publishes one event per turn, each with its own id; drop --event-id")
	case f.wait && f.waitTimeout <= 0:
		return usageErr("--wait-timeout must be positive")
	case f.timeout <= 0:
		return usageErr("--timeout must be positive")
	}

	var data []byte
	if f.example != "" {
		data, err = exampleInput(f.example)
	} else {
		data, err = readPublishInput(env, file)
	}
	if err != nil {
		return err
	}
	in, err := parsePublishInput(data, &f)
	if err != nil {
		return err
	}
	events, err := in.events(&f)
	if err != nil {
		return err
	}

	nc, err := nats.Connect(f.natsURL, nats.Name("recall publish"), nats.Timeout(f.timeout))
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", redact.ConnString(f.natsURL), err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	pub, err := publisher.New(js, publisher.WithSubject(f.subject))
	if err != nil {
		return err
	}

	// With --wait the evidence is the output; publish lines go to stderr.
	out := env.Stdout
	if f.wait {
		out = env.Stderr
	}
	var token string
	if f.wait {
		if token, err = f.bearer(in.userID, len(events)); err != nil {
			return err
		}
	}
	var evidenceJSON []byte
	for i, pe := range events {
		pctx, cancel := context.WithTimeout(ctx, f.timeout)
		ack, err := pub.PublishEvent(pctx, pe.event)
		cancel()
		if err != nil {
			switch {
			case errors.Is(err, jetstream.ErrNoStreamResponse):
				return fmt.Errorf("%w (no JetStream stream takes subject %s: start a recall worker, which creates it, or check RECALL_SUBJECT)", err, f.subject)
			case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
				return fmt.Errorf("no JetStream ack within %s (--timeout): %w", f.timeout, err)
			}
			return err
		}
		fmt.Fprintf(out, "seq=%d stream=%s event_id=%s kind=%s offset=%d messages=%d", ack.Sequence, ack.Stream, ack.EventID, ack.Kind, ack.Offset, ack.Sent)
		if ack.Duplicate {
			fmt.Fprint(out, " duplicate=true")
		}
		fmt.Fprintln(out)
		if f.wait && pe.event.Kind != checkpoint.KindDelete {
			evidenceJSON, err = (&apiclient.Client{BaseURL: f.apiURL, Token: token}).WaitForEvidence(ctx, in.userID, in.conversationID, pe.newestUser, ack.EventID, f.waitTimeout)
			if err != nil {
				return fmt.Errorf("after event %d of %d: %w", i+1, len(events), err)
			}
		}
	}
	if evidenceJSON != nil {
		var buf bytes.Buffer
		if json.Indent(&buf, evidenceJSON, "", "  ") != nil {
			buf.Reset()
			buf.Write(evidenceJSON)
		}
		buf.WriteByte('\n')
		_, err := env.Stdout.Write(buf.Bytes())
		return err
	}
	return nil
}

// exampleInput returns the built-in sample conversation name.
func exampleInput(name string) ([]byte, error) {
	data, err := examples.Conversation(name)
	if err != nil {
		return nil, fmt.Errorf("no example %q: the examples are %s", name, strings.Join(examples.Names(), ", "))
	}
	return data, nil
}

func readPublishInput(env *Env, name string) ([]byte, error) {
	var r io.Reader = env.Stdin
	if name != "" && name != "-" {
		file, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer file.Close()
		r = file
	}
	// A little more than the largest event recall accepts by default, so
	// that an oversized one is reported as such below.
	data, err := io.ReadAll(io.LimitReader(r, checkpoint.DefaultMaxEventBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	if len(data) > checkpoint.DefaultMaxEventBytes {
		return nil, fmt.Errorf("input is larger than %d bytes, the largest event recall accepts by default", checkpoint.DefaultMaxEventBytes)
	}
	return data, nil
}

// publishInput is the input of recall publish, decoded.
type publishInput struct {
	kind           string
	eventID        string
	userID         string
	conversationID string
	// offset and prefix are an input event's own; with offset 0, messages
	// is the full history.
	offset   int
	prefix   *checkpoint.Digest
	messages []json.RawMessage
}

// parsePublishInput decodes a full event, a conversation or a bare list of
// messages, and applies --user, --conversation and --event-id. Errors name
// fields and positions, never message text.
func parsePublishInput(data []byte, f *publishFlags) (*publishInput, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("input is empty: give a JSON event, a conversation or a list of messages")
	}
	if err := jsonSyntax(data); err != nil {
		return nil, err
	}
	in := &publishInput{kind: checkpoint.KindSnapshot}
	switch data[0] {
	case '[':
		if err := json.Unmarshal(data, &in.messages); err != nil {
			return nil, errors.New("input must be a JSON object or a list of messages")
		}
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil, errors.New("input must be a JSON object or a list of messages")
		}
		if _, isEvent := obj["schema"]; isEvent {
			return parsePublishEvent(obj, f)
		}
		for _, field := range []struct {
			name string
			dst  *string
		}{{"user_id", &in.userID}, {"conversation_id", &in.conversationID}} {
			if raw, ok := obj[field.name]; ok && string(raw) != "null" {
				if json.Unmarshal(raw, field.dst) != nil {
					return nil, fmt.Errorf("field %q must be a string", field.name)
				}
			}
		}
		raw, ok := obj["messages"]
		if !ok || json.Unmarshal(raw, &in.messages) != nil || in.messages == nil {
			return nil, errors.New(`field "messages" must be a list: give a conversation {"user_id","conversation_id","messages":[...]} or a full event with "schema"`)
		}
	default:
		return nil, errors.New("input must be a JSON object or a list of messages")
	}
	in.userID = cmp.Or(f.user, in.userID)
	in.conversationID = cmp.Or(f.conversation, in.conversationID)
	in.eventID = f.eventID
	if in.userID == "" || in.conversationID == "" {
		return nil, errors.New("the input names no user_id or conversation_id: set --user and --conversation")
	}
	return in, nil
}

// parsePublishEvent reads a full event after applying the flags' overrides,
// validating it exactly as recall's workers will.
func parsePublishEvent(obj map[string]json.RawMessage, f *publishFlags) (*publishInput, error) {
	set := func(field, v string) {
		if v != "" {
			b, _ := json.Marshal(v)
			obj[field] = b
		}
	}
	set("user_id", f.user)
	set("conversation_id", f.conversation)
	set("event_id", f.eventID)
	if raw, ok := obj["event_id"]; !ok || string(raw) == "null" {
		set("event_id", publisher.RandomEventID())
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	ev, err := checkpoint.ParseEvent(data, checkpoint.Limits{})
	if err != nil {
		return nil, fmt.Errorf("recall would reject this event: %w", err)
	}
	in := &publishInput{
		kind:           ev.Kind,
		eventID:        ev.EventID,
		userID:         ev.UserID,
		conversationID: ev.ConversationID,
		offset:         ev.Offset,
	}
	if ev.Kind == checkpoint.KindDelete {
		return in, nil
	}
	if ev.Offset > 0 {
		d := ev.PrefixDigest
		in.prefix = &d
	}
	if err := json.Unmarshal(obj["messages"], &in.messages); err != nil {
		return nil, fmt.Errorf("field \"messages\": %w", err)
	}
	return in, nil
}

// jsonSyntax checks that data is JSON, reporting where it is not without
// quoting it.
func jsonSyntax(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return fmt.Errorf("input is not valid JSON (at byte %d)", se.Offset)
	}
	return errors.New("input is not valid JSON")
}

// publishEvent is one event to publish and the index of the newest user
// message of the history it leaves (-1 when unknown or none).
type publishEvent struct {
	event      *publisher.Event
	newestUser int
}

// events builds the events the flags ask for.
func (in *publishInput) events(f *publishFlags) ([]publishEvent, error) {
	if in.kind == checkpoint.KindDelete {
		if f.offset > 0 || f.turns {
			return nil, errors.New("a delete event carries no messages: --offset and --turns do not apply")
		}
		ev, err := publisher.NewDelete(in.userID, in.conversationID)
		if err != nil {
			return nil, err
		}
		ev.EventID = in.eventID
		return []publishEvent{{event: ev, newestUser: -1}}, nil
	}
	users, err := userMessages(in.messages, in.offset)
	if err != nil {
		return nil, err
	}
	newest := -1
	if len(users) > 0 {
		newest = users[len(users)-1]
	}
	switch {
	case in.offset > 0:
		// An append event given as it is.
		if f.offset > 0 || f.turns {
			return nil, fmt.Errorf("the input is already an append event at offset %d: --offset and --turns need the full history", in.offset)
		}
		return []publishEvent{{event: &publisher.Event{
			Kind:           checkpoint.KindSnapshot,
			EventID:        in.eventID,
			UserID:         in.userID,
			ConversationID: in.conversationID,
			Offset:         in.offset,
			PrefixDigest:   in.prefix,
			Messages:       in.messages,
		}, newestUser: newest}}, nil
	case f.turns:
		if len(users) == 0 {
			return nil, errors.New("--turns: the history has no user message")
		}
		out := make([]publishEvent, 0, len(users))
		for _, u := range users {
			ev, err := publisher.NewSnapshot(in.userID, in.conversationID, in.messages[:u+1])
			if err != nil {
				return nil, err
			}
			out = append(out, publishEvent{event: ev, newestUser: u})
		}
		return out, nil
	case f.offset > 0:
		if f.offset > len(in.messages) {
			return nil, fmt.Errorf("--offset %d is past the end of the history of %d messages", f.offset, len(in.messages))
		}
		ev, err := publisher.NewAppend(in.userID, in.conversationID, in.messages, f.offset)
		if err != nil {
			return nil, err
		}
		ev.EventID = in.eventID
		return []publishEvent{{event: ev, newestUser: newest}}, nil
	}
	ev, err := publisher.NewSnapshot(in.userID, in.conversationID, in.messages)
	if err != nil {
		return nil, err
	}
	ev.EventID = in.eventID
	return []publishEvent{{event: ev, newestUser: newest}}, nil
}

// userMessages returns the history indexes of the user messages among
// msgs, which start at history index offset.
func userMessages(msgs []json.RawMessage, offset int) ([]int, error) {
	var out []int
	for i, raw := range msgs {
		m, err := checkpoint.DecodeMessage(raw)
		if err != nil {
			var de *checkpoint.DecodeError
			if errors.As(err, &de) {
				cp := *de
				cp.Index = offset + i
				return nil, &cp
			}
			return nil, err
		}
		if m.IsRequest() {
			out = append(out, offset+i)
		}
	}
	return out, nil
}

// bearer returns the read API token: --token, else one signed with
// the JWT secret for the user, valid while events are published and waited
// for.
func (f *publishFlags) bearer(userID string, events int) (string, error) {
	if f.token != "" || f.jwtSecret == "" {
		return f.token, nil
	}
	ttl := time.Duration(events)*(f.waitTimeout+f.timeout) + time.Minute
	s, err := apiclient.Sign([]byte(f.jwtSecret), userID, ttl, nil)
	if err != nil {
		return "", fmt.Errorf("sign a read API token: %w", err)
	}
	return s, nil
}
