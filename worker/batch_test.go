package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/pipeline"
	"github.com/recallhq/recall/store"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
	"github.com/recallhq/recall/worker"
)

// poisoned is a store that cannot record one event: a batch holding it
// fails, and so does the event alone.
type poisoned struct {
	*store.Store
	bad string

	mu      sync.Mutex
	batches []int // the size of each IngestBatch call
	singles int
}

var errPoisoned = errors.New("this event cannot be recorded")

func (p *poisoned) Ingest(ctx context.Context, ev *checkpoint.Event, meta store.Meta) (store.Result, error) {
	p.mu.Lock()
	p.singles++
	p.mu.Unlock()
	if ev.EventID == p.bad {
		return store.Result{}, errPoisoned
	}
	return p.Store.Ingest(ctx, ev, meta)
}

func (p *poisoned) IngestBatch(ctx context.Context, events []store.BatchEvent) ([]store.Result, error) {
	p.mu.Lock()
	p.batches = append(p.batches, len(events))
	p.mu.Unlock()
	for _, e := range events {
		if e.Event.EventID == p.bad {
			// What a failing statement does: the whole transaction is
			// rolled back, so nothing of the batch is recorded.
			return nil, errPoisoned
		}
	}
	return p.Store.IngestBatch(ctx, events)
}

// handFedWorker builds a worker on b's stream and subject (and cfg's other
// settings) over the store pipeline.New builds, wrapped by ingester when
// it is set, and ensures its stream. No consumer runs: the test hands the
// worker its batches.
func handFedWorker(t *testing.T, b *pt.Bundle, cfg *worker.Config, ingester func(*store.Store) worker.Ingester) (*worker.Worker, jetstream.Stream) {
	t.Helper()
	p, err := pipeline.New(b.Pool, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ing worker.Ingester = p.Store
	if ingester != nil {
		ing = ingester(p.Store)
	}
	nc, err := nats.Connect(b.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c := worker.Config{}
	if cfg != nil {
		c = *cfg
	}
	c.Stream, c.Subject = b.Stream, b.Subject
	w, err := worker.New(nc, ing, &c)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := w.EnsureStream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return w, stream
}

// TestBatchWithOneFailingEvent hands the worker one batch of events of which
// one cannot be recorded: every other event is recorded and acknowledged,
// and only the failing one is nak'd and comes back.
func TestBatchWithOneFailingEvent(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	var ing *poisoned
	w, stream := handFedWorker(t, b, nil, func(st *store.Store) worker.Ingester {
		ing = &poisoned{Store: st, bad: "e3"}
		return ing
	})
	const n = 8
	for i := range n {
		id := fmt.Sprintf("e%d", i)
		b.Publish(id, pt.Event(id, "u", fmt.Sprintf("c%d", i), []json.RawMessage{msg("m0", "user", "keep this")}))
	}
	b.Publish("bad-json", []byte(`{"schema":`))
	cons, err := stream.CreateOrUpdateConsumer(t.Context(), jetstream.ConsumerConfig{Durable: "batch", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	fetched, err := cons.FetchNoWait(n + 1)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for m := range fetched.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != n+1 {
		t.Fatalf("fetched %d messages, want %d", len(msgs), n+1)
	}
	w.HandleBatch(t.Context(), msgs)

	if want := []int{n}; fmt.Sprint(ing.batches) != fmt.Sprint(want) || ing.singles != n {
		t.Errorf("IngestBatch calls %v and %d Ingest calls, want %v and %d (the batch, then each event alone)", ing.batches, ing.singles, want, n)
	}
	for i := range n {
		rec, err := ing.Store.Evidence(t.Context(), "u", fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := rec.MessageCount, 1; i == 3 && got != 0 || i != 3 && got != want {
			t.Errorf("conversation c%d holds %d messages", i, got)
		}
	}
	if got := b.Rejections(); strings.Join(got, ",") != string(checkpoint.ReasonMalformed) {
		t.Errorf("rejections %v, want the undecodable event's only", got)
	}
	// Only the failing event is redelivered.
	again, err := cons.Fetch(n+1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for m := range again.Messages() {
		uid, cid, eid := checkpoint.ProbeKey(m.Data())
		ids = append(ids, uid+"/"+cid+"/"+eid)
		_ = m.Term()
	}
	if strings.Join(ids, " ") != "u/c3/e3" {
		t.Errorf("redelivered %v, want only u/c3/e3", ids)
	}
}

// TestConfigMaxBatch checks MaxBatch's default and validation.
func TestConfigMaxBatch(t *testing.T) {
	t.Parallel()
	if got := (*worker.Config)(nil).WithDefaults().MaxBatch; got != worker.DefaultMaxBatch {
		t.Errorf("default MaxBatch %d, want %d", got, worker.DefaultMaxBatch)
	}
	b := pt.New(t)
	nc, err := nats.Connect(b.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	_, err = worker.New(nc, b.Store, &worker.Config{MaxBatch: -1})
	if err == nil || !strings.Contains(err.Error(), "MaxBatch") {
		t.Errorf("MaxBatch -1: got %v, want an error naming MaxBatch", err)
	}
}
