package faults

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// TestDeployNATSClusterConfig reads deploy/nats-cluster.conf as nats-server
// does for each node of docker-compose.cluster.yml: it keeps the single
// server's settings (users, sync_interval always, payload limit) and adds
// the node's name and the routes of the three-node cluster.
func TestDeployNATSClusterConfig(t *testing.T) {
	t.Setenv("NATS_PUBLISHER_PASSWORD", "pub-pass-0d1e")
	t.Setenv("NATS_RECALL_PASSWORD", "recall-pass-9c8b")
	t.Setenv("NATS_SERVER_NAME", "nats-2")
	opts, err := server.ProcessConfigFile("../deploy/nats-cluster.conf")
	if err != nil {
		t.Fatalf("deploy/nats-cluster.conf: %v", err)
	}
	switch {
	case opts.ServerName != "nats-2":
		t.Errorf("server_name %q, want the node's NATS_SERVER_NAME", opts.ServerName)
	case opts.Cluster.Name != "recall" || opts.Cluster.Port != 6222:
		t.Errorf("cluster %q on port %d, want recall on 6222", opts.Cluster.Name, opts.Cluster.Port)
	case len(opts.Routes) != 3:
		t.Errorf("%d routes, want the three nodes", len(opts.Routes))
	case !opts.JetStream || !opts.SyncAlways || opts.StoreDir != "/data":
		t.Errorf("JetStream %v, sync always %v, store %q: want the single server's settings", opts.JetStream, opts.SyncAlways, opts.StoreDir)
	case len(opts.Users) != 2:
		t.Errorf("%d users, want publisher and recall", len(opts.Users))
	case opts.MaxPayload < 16<<20:
		t.Errorf("max_payload %d, want the single server's 17 MB", opts.MaxPayload)
	}
}
