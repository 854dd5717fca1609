package worker_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/testutil/natstest"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
	"github.com/recallhq/recall/worker"
)

// TestStreamReplicas: on a three-node JetStream cluster, the stream the
// worker creates has the replica count it is given; a stream that exists
// is used as it is, whatever the count.
func TestStreamReplicas(t *testing.T) {
	t.Parallel()
	c := natstest.StartCluster(t, 3)
	history := []json.RawMessage{msg("m0", "user", "We must ship by Friday."), msg("m1", "assistant", "ok"), msg("m2", "user", "next")}
	tests := []struct {
		name         string
		existing     int // replicas of a stream made before the worker starts; 0 for none
		replicas     int
		wantReplicas int
	}{
		{name: "created with 3", replicas: 3, wantReplicas: 3},
		{name: "created with the default", replicas: 0, wantReplicas: 1},
		{name: "existing with 1 kept", existing: 1, replicas: 3, wantReplicas: 1},
		{name: "existing with 3 kept", existing: 3, replicas: 1, wantReplicas: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := pt.NewSharedNATS(t, c.URLs())
			if tt.existing > 0 {
				_, err := b.JS.CreateStream(t.Context(), jetstream.StreamConfig{Name: b.Stream, Subjects: []string{b.Subject},
					Retention: jetstream.WorkQueuePolicy, Replicas: tt.existing, Storage: jetstream.FileStorage})
				pt.Must(t, err)
			}
			b.Replicas = tt.replicas
			b.CaptureLogs = true
			b.StartWorker(2)
			s, err := b.JS.Stream(t.Context(), b.Stream)
			pt.Must(t, err)
			info, err := s.Info(t.Context())
			pt.Must(t, err)
			if info.Config.Replicas != tt.wantReplicas {
				t.Errorf("stream replicas %d, want %d", info.Config.Replicas, tt.wantReplicas)
			}
			if info.Cluster == nil || len(info.Cluster.Replicas) != tt.wantReplicas-1 {
				t.Errorf("stream cluster info %+v, want a leader and %d followers", info.Cluster, tt.wantReplicas-1)
			}
			if info.Config.Retention != jetstream.WorkQueuePolicy {
				t.Errorf("stream retention %v, want work-queue", info.Config.Retention)
			}
			if tt.existing > 0 && tt.existing != max(tt.replicas, 1) && !strings.Contains(b.Logs(), "using the existing stream as it is") {
				t.Errorf("no note that the existing stream's replica count is kept:\n%s", b.Logs())
			}
			// The stream works: an event is applied.
			b.Publish("s0", pt.Event("s0", "u", "c", history))
			b.WaitCursor("u", "c", 2, 20*time.Second)
		})
	}
}

// TestReplicasRefused: a replica count JetStream cannot have is refused
// before anything is created.
func TestReplicasRefused(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	nc, err := nats.Connect(ns.URL())
	pt.Must(t, err)
	t.Cleanup(nc.Close)
	b := pt.New(t)
	for _, n := range []int{-1, worker.MaxReplicas + 1} {
		_, err := worker.New(nc, b.Store, &worker.Config{Replicas: n})
		if err == nil || !strings.Contains(err.Error(), "it must be from 1 to 5") {
			t.Errorf("Replicas %d: error %v, want one saying 1 to 5", n, err)
		}
	}
}
