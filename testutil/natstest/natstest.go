// Package natstest runs an in-process NATS server with JetStream for tests,
// as nats.go and nats-server's own tests do. Its data lives in a temporary
// folder, so a test can stop and restart the server with its streams kept.
package natstest

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server is an in-process NATS server.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
}

// Start starts a JetStream server on a free loopback port; it is shut down
// when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, opts: server.Options{
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		NoLog:      true,
		NoSigs:     true,
		MaxPayload: 32 << 20,
	}}
	s.start()
	// Restarts keep the port, so clients reconnect to the same URL.
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	s.startAsync()
	s.waitReady()
}

// startAsync starts the server without waiting for it: the servers of a
// cluster wait for each other.
func (s *Server) startAsync() {
	s.t.Helper()
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		s.t.Fatalf("natstest: new server: %v", err)
	}
	go srv.Start()
	s.srv = srv
}

func (s *Server) waitReady() {
	s.t.Helper()
	if !s.srv.ReadyForConnections(30 * time.Second) {
		s.t.Fatalf("natstest: server not ready")
	}
}

// URL returns the client URL.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	if s.srv != nil && s.srv.Running() {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
	}
}

// Restart stops the server and starts it again on the same port and store.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Connect connects a client to url with opts, closed when the test ends,
// and returns it with its JetStream context.
func Connect(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("natstest: connect to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}
