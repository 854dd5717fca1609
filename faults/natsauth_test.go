package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/partition"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/wake"
)

// TestDeployNATSUsers runs deploy/nats.conf (users and permissions) with a
// `recall run` on it: recall, with its user, creates the stream, consumes
// and sends the wake-ups of long-polls; the publisher user publishes and is
// refused anything else, the wake-ups included; a connection without a user
// is refused.
func TestDeployNATSUsers(t *testing.T) {
	// t.Setenv: the configuration reads the passwords from the environment.
	t.Setenv("NATS_PUBLISHER_PASSWORD", "pub-pass-0d1e")
	t.Setenv("NATS_RECALL_PASSWORD", "recall-pass-9c8b")
	opts, err := server.ProcessConfigFile("../deploy/nats.conf")
	if err != nil {
		t.Fatalf("deploy/nats.conf: %v", err)
	}
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.StoreDir, opts.NoLog, opts.NoSigs = t.TempDir(), true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server with deploy/nats.conf did not start")
	}
	t.Cleanup(ns.Shutdown)
	addr := strings.TrimPrefix(ns.ClientURL(), "nats://")

	if nc, err := nats.Connect(ns.ClientURL()); err == nil {
		nc.Close()
		t.Error("a connection without a user was accepted")
	}

	dbURL := suiteCluster(t).NewDatabase(t)
	pool := pgtest.MigratedPool(t, dbURL, store.Migrate)
	run := startChild(t, "run", []string{"DATABASE_URL=" + dbURL, "NATS_URL=nats://recall:recall-pass-9c8b@" + addr,
		"RECALL_JWT_SECRET=" + jwtSecret, "RECALL_HTTP_ADDR=127.0.0.1:0", "RECALL_LOG_FORMAT=json", "RECALL_NO_MIGRATE=1"}, "run")
	run.waitLog(t, "worker consuming", 60*time.Second)

	// recall's user hears the wake-ups its worker sends.
	rc, err := nats.Connect("nats://recall:recall-pass-9c8b@" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	wakeups, err := rc.SubscribeSync(wake.SubjectFor(stream) + ".*")
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Must(t, rc.Flush(), "flush the wake-up subscription")

	var mu sync.Mutex
	var violations []string
	pub, err := nats.Connect("nats://publisher:pub-pass-0d1e@"+addr, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		violations = append(violations, err.Error())
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	js, err := jetstream.New(pub)
	if err != nil {
		t.Fatal(err)
	}
	cv := &conversation{User: "u", Conv: "c", History: []json.RawMessage{
		raw(map[string]any{"id": "m0", "role": "user", "content": "We must ship by Friday."}),
		raw(map[string]any{"id": "m1", "role": "assistant", "content": "Agreed."}),
		raw(map[string]any{"id": "m2", "role": "user", "content": "Next?"}),
	}, Snapshots: []int{3}}
	cv.Oracle = cv.oracle(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: snapshotEvent("e0", "u", "c", cv.History),
		Header: nats.Header{"Nats-Msg-Id": []string{"e0"}}}); err != nil {
		t.Fatalf("the publisher user cannot publish a checkpoint: %v", err)
	}
	v, _ := waitConverged(t, pool, []*conversation{cv}, time.Minute)
	requireOracle(t, v)
	if msg, err := wakeups.NextMsg(10 * time.Second); err != nil {
		t.Errorf("recall's user heard no wake-up of the extraction: %v", err)
	} else if want, cursor := wake.SubjectFor(stream)+"."+partition.Token("u", "c"), strconv.Itoa(cv.Oracle.Cursor); msg.Subject != want || string(msg.Data) != cursor {
		t.Errorf("wake-up %s %q, want %s %q", msg.Subject, msg.Data, want, cursor)
	}

	// Everything else is refused to the publisher.
	refused := []struct {
		name string
		try  func(ctx context.Context) error
	}{
		{"read the stream's info", func(ctx context.Context) error { _, err := js.Stream(ctx, stream); return err }},
		{"create a consumer", func(ctx context.Context) error {
			_, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "thief"})
			return err
		}},
		{"fetch from recall's consumer", func(ctx context.Context) error {
			_, err := pub.RequestWithContext(ctx, "$JS.API.CONSUMER.MSG.NEXT."+stream+"."+durable, []byte(`{"batch":1}`))
			return err
		}},
		{"delete the stream", func(ctx context.Context) error { return js.DeleteStream(ctx, stream) }},
		{"subscribe to the subject", func(ctx context.Context) error {
			sub, err := pub.SubscribeSync(subject)
			if err != nil {
				return err
			}
			defer sub.Unsubscribe()
			_, err = sub.NextMsgWithContext(ctx)
			return err
		}},
		{"hear the wake-ups", func(ctx context.Context) error {
			sub, err := pub.SubscribeSync(wake.SubjectPrefix + ".>")
			if err != nil {
				return err
			}
			defer sub.Unsubscribe()
			_, err = sub.NextMsgWithContext(ctx)
			return err
		}},
	}
	for _, tt := range refused {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		err := tt.try(ctx)
		cancel()
		if err == nil {
			t.Errorf("the publisher user may %s", tt.name)
		}
	}
	mu.Lock()
	n := len(violations)
	mu.Unlock()
	if n == 0 {
		t.Error("the server reported no permission violation for the publisher's attempts")
	}
	t.Logf("publisher refused %d times: %s", n, fmt.Sprint(violations[:min(n, 3)]))
}
