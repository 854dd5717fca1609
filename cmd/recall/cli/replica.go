package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallhq/recall/api"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/store"
)

// readSource returns what the read API reads through: the primary's store,
// or, when RECALL_READ_DATABASE_URL names a read replica, a ReplicaReader
// over the replica and the primary (docs/scaling.md), whose counts go to
// recall_read_replica_reads_total.
func (a *app) readSource(ctx context.Context, primary *store.Store, fold *evidence.Config, m *metrics.Metrics) (api.Source, error) {
	if a.cfg.ReadDatabaseURL == "" {
		return primary, nil
	}
	var err error
	if a.readPool, err = newPool(ctx, a.cfg.ReadDatabaseURL, "recall_api_replica", int32(max(a.cfg.APIMaxConns, 1)), 0, a.tp); err != nil {
		return nil, fmt.Errorf("read replica (RECALL_READ_DATABASE_URL): %w", err)
	}
	replica, err := store.New(a.readPool, &store.Config{Logger: a.logger, Fold: fold})
	if err != nil {
		return nil, err
	}
	if a.replica, err = store.NewReplicaReader(primary, replica, a.logger); err != nil {
		return nil, err
	}
	for _, source := range []string{"replica", "primary"} {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "recall_read_replica_reads_total",
			Help: "Evidence reads of the read API with a read replica configured, by who answered: the replica, " +
				"or the primary (the replica was behind what the request had seen, or failed).",
			ConstLabels: prometheus.Labels{"source": source},
		}, func() float64 {
			r, p := a.replica.ReadCounts()
			if source == "replica" {
				return float64(r)
			}
			return float64(p)
		}))
	}
	a.logger.InfoContext(ctx, "the API reads evidence from a read replica", slog.String("replica", redact.ConnString(a.cfg.ReadDatabaseURL)))
	return a.replica, nil
}
