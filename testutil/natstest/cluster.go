package natstest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a JetStream cluster of in-process servers with routes on
// loopback. Every server writes with sync_interval always (SyncAlways): each
// acknowledged write is on disk, the setting a cluster that must not lose
// acknowledged events runs with.
type Cluster struct {
	t       testing.TB
	Servers []*Server
}

// StartCluster starts n clustered JetStream servers, each with a store of
// its own, and waits until the cluster has a meta leader. They are shut down
// when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	routes := make([]*url.URL, n)
	for i := range n {
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[n+i])}
	}
	c := &Cluster{t: t}
	for i := range n {
		var others []*url.URL
		for j, r := range routes {
			if j != i {
				others = append(others, r)
			}
		}
		s := &Server{t: t, opts: server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       ports[i],
			JetStream:  true,
			StoreDir:   t.TempDir(),
			SyncAlways: true,
			NoLog:      true,
			NoSigs:     true,
			MaxPayload: 32 << 20,
			Cluster:    server.ClusterOpts{Name: "recall", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:     others,
		}}
		c.Servers = append(c.Servers, s)
	}
	// Start them together: each waits for a quorum of routes before
	// JetStream is ready.
	for _, s := range c.Servers {
		s.startAsync()
	}
	for _, s := range c.Servers {
		s.waitReady()
		t.Cleanup(s.Stop)
	}
	c.WaitMetaLeader(30 * time.Second)
	return c
}

// freePorts returns n loopback ports free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: free port: %v", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// URLs returns the client URLs of every server, comma-separated, as
// NATS_URL takes them: a client moves to another server when its own goes.
func (c *Cluster) URLs() string {
	var us []string
	for _, s := range c.Servers {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port))
	}
	return strings.Join(us, ",")
}

// WaitMetaLeader waits until a running server is the JetStream meta leader
// and every running server is current with it.
func (c *Cluster) WaitMetaLeader(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		leader, current := false, true
		for _, s := range c.Servers {
			if !s.Running() {
				continue
			}
			leader = leader || s.srv.JetStreamIsLeader()
			current = current && s.srv.JetStreamIsCurrent()
		}
		if leader && current {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: no JetStream meta leader after %s", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StreamLeader returns the index of the server leading the stream of the
// global account, or -1 when none does.
func (c *Cluster) StreamLeader(stream string) int {
	for i, s := range c.Servers {
		if s.Running() && s.srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}

// WaitStreamLeader waits until a server leads the stream and returns its
// index.
func (c *Cluster) WaitStreamLeader(stream string, timeout time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if i := c.StreamLeader(stream); i >= 0 {
			return i
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: no leader for stream %s after %s", stream, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Running reports whether the server runs.
func (s *Server) Running() bool { return s.srv != nil && s.srv.Running() }

// Start starts a stopped server again on the same ports and store.
func (s *Server) Start() {
	s.t.Helper()
	s.start()
}

// RestartWiped stops the server, removes everything in its store and
// starts it again: a node replaced with an empty disk, which must catch up
// from its peers.
func (s *Server) RestartWiped() {
	s.t.Helper()
	s.Stop()
	if err := os.RemoveAll(s.opts.StoreDir); err != nil {
		s.t.Fatalf("natstest: wipe store: %v", err)
	}
	if err := os.MkdirAll(s.opts.StoreDir, 0o755); err != nil {
		s.t.Fatalf("natstest: wipe store: %v", err)
	}
	s.start()
}

// StreamCurrent reports whether the server runs and its copy of the stream
// of the global account is current with the stream's leader.
func (s *Server) StreamCurrent(stream string) bool {
	return s.Running() && s.srv.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, stream)
}

// AddMapping adds a subject mapping to the global account (as a mappings
// block in the server's configuration would), such as one using
// partition(n, …).
func (s *Server) AddMapping(source, destination string) error {
	return s.srv.GlobalAccount().AddMapping(source, destination)
}
