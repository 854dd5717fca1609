package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/checkpoint"
)

// CostPath says how scenario 3 delivers events: straight to the worker's
// handler, so that snapshots larger than NATS's max_payload fit, and so that
// the figure is recall's own processing without the broker.
const CostPath = "worker.Handle called directly (no NATS); extraction by River's worker, timed by recall_extraction_duration_seconds"

var directSeq atomic.Uint64

// costScenario is scenario 3: the processing time of one turn (ingest and
// extraction) of a conversation of each length, for append events and for
// full snapshots. Turns go round the conversations, so that a noisy moment
// on a shared machine hits every length alike.
func (e *env) costScenario(ctx context.Context, res *Result) error {
	p, err := e.startPipeline(ctx)
	if err != nil {
		return err
	}
	longest := slices.Max(e.sz.costLengths) + 2*(e.sz.costWarm+e.sz.costTurns) + 1
	hist := history(longest)
	ch, err := chains(hist)
	if err != nil {
		return err
	}
	var runs []*costConv
	for _, n := range e.sz.costLengths {
		for _, full := range []bool{false, true} {
			c := &costConv{e: e, p: p, n: n, full: full, hist: hist, chains: ch}
			if err := c.setup(ctx); err != nil {
				return err
			}
			runs = append(runs, c)
		}
	}
	for k := range e.sz.costWarm + e.sz.costTurns {
		for _, c := range runs {
			if err := c.turn(ctx, k >= e.sz.costWarm); err != nil {
				return err
			}
		}
	}
	res.CostPath = CostPath
	for i := 0; i < len(runs); i += 2 {
		app, full := runs[i], runs[i+1]
		if err := app.check(ctx); err != nil {
			return err
		}
		if err := full.check(ctx); err != nil {
			return err
		}
		fullTime := medianDuration(full.times)
		row := CostRow{Messages: app.n, AppendMs: ms(medianDuration(app.times)),
			FullMs: ms(fullTime), FullEventBytes: full.size, FullMBPerS: float64(full.size) / 1e6 / fullTime.Seconds()}
		e.progress("cost at %d messages: append %.2f ms; full snapshot %.2f ms (%d bytes, %.1f MB/s)",
			row.Messages, row.AppendMs, row.FullMs, row.FullEventBytes, row.FullMBPerS)
		res.Cost = append(res.Cost, row)
	}
	first, last := res.Cost[0], res.Cost[len(res.Cost)-1]
	res.AppendCostRatio10kVs10 = last.AppendMs / first.AppendMs
	userID, conversationID := runs[len(runs)-2].key()
	if err := e.pool.QueryRow(ctx, `SELECT archive_count FROM recall_conversation WHERE user_id = $1 AND conversation_id = $2`,
		userID, conversationID).Scan(&res.CostArchiveEntries); err != nil {
		return fmt.Errorf("read the archive's size: %w", err)
	}
	res.FullSnapshotMBPerS = last.FullMBPerS

	ratios, err := digestRatio(e.sz.digestRounds)
	if err != nil {
		return err
	}
	res.DigestRatios = ratios
	res.DigestRatio = 0
	for kind, r := range ratios {
		if res.DigestRatio == 0 || r < res.DigestRatio {
			res.DigestRatio, res.DigestWorstKind = r, kind
		}
	}
	e.progress("digests against plain SHA-256 over the same bytes: %v", ratios)
	return nil
}

// costConv is one conversation of scenario 3: built with n-1 messages
// (ending with a request), then given turns that each add a reply and a
// request, sent as full snapshots or as append events.
type costConv struct {
	e      *env
	p      *pipeline
	n      int
	full   bool
	hist   []json.RawMessage
	chains []checkpoint.Digest

	length int
	times  []time.Duration
	size   int // of the last event
}

func (c *costConv) key() (userID, conversationID string) {
	mode := "append"
	if c.full {
		mode = "full"
	}
	return fmt.Sprintf("cost-%s-%d", mode, c.n), "c"
}

func (c *costConv) setup(ctx context.Context) error {
	c.length = c.n - 1
	_, _, err := c.send(ctx, 0, c.length)
	return err
}

// turn sends the next turn; timed turns are recorded.
func (c *costConv) turn(ctx context.Context, timed bool) error {
	offset := c.length
	if c.full {
		offset = 0
	}
	d, size, err := c.send(ctx, offset, c.length+2)
	if err != nil {
		return err
	}
	c.length += 2
	if timed {
		c.times, c.size = append(c.times, d), size
	}
	return nil
}

// send hands messages [offset, end) to the worker as one event and waits for
// the extraction it enqueues. It returns the handling time plus the
// extraction's, and the event's size.
func (c *costConv) send(ctx context.Context, offset, end int) (time.Duration, int, error) {
	userID, conversationID := c.key()
	var prefix *checkpoint.Digest
	if offset > 0 {
		prefix = &c.chains[offset]
	}
	id := c.e.ids.next()
	data := encodeEvent(id, userID, conversationID, offset, prefix, c.hist[offset:end])
	count0, sum0 := histogramValue(c.p.metrics.ExtractionSeconds)
	msg := &directMsg{data: data, meta: jetstream.MsgMetadata{
		Stream: "recall-bench-direct", Sequence: jetstream.SequencePair{Stream: directSeq.Add(1)},
		NumDelivered: 1, Timestamp: time.Now(),
	}}
	start := time.Now()
	c.p.worker.Handle(ctx, msg)
	ingest := time.Since(start)
	if msg.end != "ack" {
		return 0, 0, fmt.Errorf("%s/%s at %d messages: the worker ended the event with %s, not ack", userID, conversationID, end, msg.end)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		count, sum := histogramValue(c.p.metrics.ExtractionSeconds)
		if count > count0 {
			return ingest + time.Duration((sum-sum0)*float64(time.Second)), len(data), nil
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("%s/%s at %d messages: no extraction within a minute", userID, conversationID, end)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// check verifies the conversation's state: every turn summarised.
func (c *costConv) check(ctx context.Context) error {
	userID, conversationID := c.key()
	rec, err := c.p.store.Evidence(ctx, userID, conversationID)
	if err != nil {
		return err
	}
	if rec.Cursor != c.length-1 || rec.MessageCount != c.length {
		return fmt.Errorf("%s/%s: cursor %d of %d messages, want %d of %d", userID, conversationID, rec.Cursor, rec.MessageCount, c.length-1, c.length)
	}
	return nil
}

func medianDuration(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}
