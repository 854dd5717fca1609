package publisher_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// runServer starts an in-process NATS server with JetStream for an example,
// which has no *testing.T for testutil/natstest, and creates the stream
// recall's workers would create. stop shuts it down and removes its data.
func runServer() (url string, stop func()) {
	_, url, stop = runJetStream()
	return url, stop
}

// runJetStream is runServer with a client connected to the server, for the
// examples that show what comes after connecting (Example shows the
// connection): stop closes the client too.
func runJetStream() (js jetstream.JetStream, url string, stop func()) {
	dir, err := os.MkdirTemp("", "publisher-example-")
	if err != nil {
		panic(err)
	}
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		panic(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		panic("nats server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	stop = func() {
		if nc != nil {
			nc.Close()
		}
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
	if err != nil {
		stop()
		panic(err)
	}
	js, err = jetstream.New(nc)
	if err != nil {
		stop()
		panic(err)
	}
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "RECALL_CHECKPOINTS", Subjects: []string{"recall.checkpoints"},
	}); err != nil {
		stop()
		panic(fmt.Sprintf("create stream: %v", err))
	}
	return js, srv.ClientURL(), stop
}
