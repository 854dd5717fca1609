package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/evidence"
)

// CostPath says how scenario 3 delivers events: straight to the worker's
// handler, so that snapshots larger than NATS's max_payload fit, and so that
// the figure is recall's own processing without the broker.
const CostPath = "worker.Handle called directly (no NATS); extraction by River's worker, timed by recall_extraction_duration_seconds"

var directSeq atomic.Uint64

// costScenario is scenario 3: the processing time of one turn (ingest and
// extraction) of a conversation of each length, for append events and for
// full snapshots.
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
	res.CostPath = CostPath
	for _, n := range e.sz.costLengths {
		row := CostRow{Messages: n}
		for _, full := range []bool{false, true} {
			times, size, err := e.costRun(ctx, p, n, full, hist, ch)
			if err != nil {
				return err
			}
			if full {
				row.FullMs, row.FullEventBytes = ms(medianDuration(times)), size
				row.FullMBPerS = float64(size) / 1e6 / medianDuration(times).Seconds()
			} else {
				row.AppendMs = ms(medianDuration(times))
			}
		}
		e.progress("cost at %d messages: append %.2f ms; full snapshot %.2f ms (%d bytes, %.1f MB/s)",
			n, row.AppendMs, row.FullMs, row.FullEventBytes, row.FullMBPerS)
		res.Cost = append(res.Cost, row)
	}
	first, last := res.Cost[0], res.Cost[len(res.Cost)-1]
	res.AppendCostRatio10kVs10 = last.AppendMs / first.AppendMs
	res.FullSnapshotMBPerS = last.FullMBPerS
	return nil
}

// costRun builds a conversation of n-1 messages (ending with a request),
// then times turns that each add a reply and a request, sent as full
// snapshots or as append events. It returns the time of each timed turn
// and the size of the last event.
func (e *env) costRun(ctx context.Context, p *pipeline, n int, full bool, hist []json.RawMessage, ch []evidence.Digest) ([]time.Duration, int, error) {
	mode := "append"
	if full {
		mode = "full"
	}
	userID, conversationID := fmt.Sprintf("cost-%s-%d", mode, n), "c"
	turn := func(offset, end int) (time.Duration, int, error) {
		var prefix *evidence.Digest
		if offset > 0 {
			prefix = &ch[offset]
		}
		id := e.ids.next()
		data := encodeEvent(id, userID, conversationID, offset, prefix, hist[offset:end])
		count0, sum0 := histogramValue(p.metrics.ExtractionSeconds)
		msg := &directMsg{data: data, meta: jetstream.MsgMetadata{
			Stream: "recall-bench-direct", Sequence: jetstream.SequencePair{Stream: directSeq.Add(1)},
			NumDelivered: 1, Timestamp: time.Now(),
		}}
		start := time.Now()
		p.worker.Handle(ctx, msg)
		ingest := time.Since(start)
		if msg.end != "ack" {
			return 0, 0, fmt.Errorf("%s event at %d messages: the worker ended it with %s, not ack", mode, end, msg.end)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			count, sum := histogramValue(p.metrics.ExtractionSeconds)
			if count > count0 {
				return ingest + time.Duration((sum-sum0)*float64(time.Second)), len(data), nil
			}
			if time.Now().After(deadline) {
				return 0, 0, fmt.Errorf("%s event at %d messages: no extraction within a minute", mode, end)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	length := n - 1
	if _, _, err := turn(0, length); err != nil {
		return nil, 0, err
	}
	var times []time.Duration
	size := 0
	for k := range e.sz.costWarm + e.sz.costTurns {
		offset := length
		if full {
			offset = 0
		}
		d, sz, err := turn(offset, length+2)
		if err != nil {
			return nil, 0, err
		}
		length += 2
		if k >= e.sz.costWarm {
			times, size = append(times, d), sz
		}
	}
	rec, err := p.store.Evidence(ctx, userID, conversationID)
	if err != nil {
		return nil, 0, err
	}
	if rec.Cursor != length-1 || rec.MessageCount != length {
		return nil, 0, fmt.Errorf("%s at %d messages: cursor %d of %d messages, want %d of %d", mode, n, rec.Cursor, rec.MessageCount, length-1, length)
	}
	return times, size, nil
}

func medianDuration(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}
