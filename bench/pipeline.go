package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/jobs"
	recallpipe "github.com/recallhq/recall/pipeline"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/worker"
)

// pipeline is recall's worker as `recall run` wires it, in process: the
// store, River's client working extraction jobs and the JetStream worker.
type pipeline struct {
	metrics *metrics.Metrics
	store   *store.Store
	river   *river.Client[pgx.Tx]
	worker  *worker.Worker
	pipe    *recallpipe.Pipeline
}

func (e *env) startPipeline(ctx context.Context) (*pipeline, error) {
	if e.pipe != nil {
		return e.pipe, nil
	}
	p := &pipeline{metrics: metrics.New()}
	rp, err := recallpipe.New(e.pool, e.nc, &recallpipe.Config{
		Jobs: &jobs.Config{Workers: e.cfg.Concurrency},
		Worker: &worker.Config{Stream: e.stream, Subject: e.subject,
			Durable: "recall-bench-" + e.id, Concurrency: e.cfg.Concurrency},
		Metrics: p.metrics, Logger: e.logger,
	})
	if err != nil {
		return nil, err
	}
	p.store, p.river, p.worker, p.pipe = rp.Store, rp.River, rp.Worker, rp
	e.streams = append(e.streams, e.stream)
	if err := rp.Start(ctx); err != nil {
		return nil, err
	}
	e.pipe = p
	return p, nil
}

func (p *pipeline) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.pipe.Stop(ctx)
}

// discardJobs is the job inserter of a store that measures without
// extraction: it inserts nothing.
type discardJobs struct{}

func (discardJobs) InsertTx(context.Context, pgx.Tx, river.JobArgs, *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return &rivertype.JobInsertResult{}, nil
}

func (discardJobs) InsertManyTx(_ context.Context, _ pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	res := make([]*rivertype.JobInsertResult, len(params))
	for i := range res {
		res[i] = &rivertype.JobInsertResult{}
	}
	return res, nil
}

func (e *env) stopPipeline() error {
	if e.pipe == nil {
		return nil
	}
	err := e.pipe.stop()
	e.pipe = nil
	return err
}

// workload is a set of conversations published turn by turn, each turn a
// snapshot of the growing history.
type workload struct {
	prefix       string
	users, convs int
	turns        int
}

func (w workload) key(i int) (userID, conversationID string) {
	return fmt.Sprintf("%s-u%d", w.prefix, i%w.users), fmt.Sprintf("c%d", i/w.users)
}

func (w workload) events() int { return w.convs * w.turns }

func (w workload) userIDs() []string {
	ids := make([]string, w.users)
	for i := range ids {
		ids[i], _ = w.key(i)
	}
	return ids
}

// publishAll publishes every turn of every conversation, turn by turn, as
// fast as JetStream acknowledges them.
func (e *env) publishAll(ctx context.Context, w workload, subject string, js jetstream.JetStream) error {
	hist := history(turnLength(w.turns))
	pub := &asyncPublisher{js: js, subject: subject}
	for t := 1; t <= w.turns; t++ {
		for i := range w.convs {
			u, c := w.key(i)
			id := e.ids.next()
			if err := pub.publishStall(id, encodeEvent(id, u, c, 0, nil, hist[:turnLength(t)])); err != nil {
				return err
			}
		}
	}
	return pub.wait(ctx)
}

// publishStall publishes, waiting while JetStream has too many events to
// acknowledge.
func (p *asyncPublisher) publishStall(eventID string, data []byte) error {
	msg := &nats.Msg{Subject: p.subject, Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, eventID)
	f, err := p.js.PublishMsgAsync(msg, jetstream.WithStallWait(time.Minute))
	if err != nil {
		return fmt.Errorf("publish %s: %w", eventID, err)
	}
	p.futures = append(p.futures, f)
	return nil
}

// waitDone waits until every conversation of w has its final cursor. It
// fails when nothing moves for a minute.
func (e *env) waitDone(ctx context.Context, w workload, every time.Duration) error {
	users, want := w.userIDs(), finalCursor(w.turns)
	last, lastMove := int64(-1), time.Now()
	for {
		// Progress is any cursor moving: on a loaded machine no
		// conversation may finish within a minute of the first publish.
		var n int
		var moved int64
		err := e.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE "cursor" >= $2), coalesce(sum("cursor"), 0) FROM recall_conversation
WHERE user_id = ANY($1)`, users, want).Scan(&n, &moved)
		if err != nil {
			return fmt.Errorf("read progress: %w", err)
		}
		if n >= w.convs {
			return nil
		}
		if moved != last {
			last, lastMove = moved, time.Now()
		} else if time.Since(lastMove) > time.Minute {
			return fmt.Errorf("stuck: %d of %d conversations done after a minute without progress", n, w.convs)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// pipelineScenario is scenario 1: throughput from publish to committed
// state, beside River working as many no-op jobs inserted the same way,
// alternating trials; then the coalescing of a burst.
func (e *env) pipelineScenario(ctx context.Context, res *Result) error {
	p, err := e.startPipeline(ctx)
	if err != nil {
		return err
	}
	noop, err := e.startNoop(ctx)
	if err != nil {
		return err
	}
	defer noop.stop()

	var rates, baseRates, ratios, extractions []float64
	var bestRates, commitRates, commitRatios []float64
	settings := make(map[riverSetting]int)
	for trial := range e.sz.trials {
		w := workload{prefix: fmt.Sprintf("p%d", trial), users: e.sz.users, convs: e.sz.convs, turns: e.sz.turns}
		e.traceAs(fmt.Sprintf("pipeline %d", trial+1))
		rate, ex, err := e.pipelineTrial(ctx, p, w)
		if err != nil {
			return err
		}
		if trial == 0 {
			for i := range w.convs {
				u, c := w.key(i)
				e.warmKeys = append(e.warmKeys, [2]string{u, c})
			}
		}

		e.traceAs(fmt.Sprintf("baseline %d", trial+1))
		base, err := noop.run(ctx, w.events(), e.cfg.Concurrency)
		if err != nil {
			return err
		}
		e.traceAs(fmt.Sprintf("River at its best %d", trial+1))
		best, setting, err := e.riverBest(ctx, max(w.events(), e.sz.bestJobs))
		if err != nil {
			return err
		}
		e.traceAs(fmt.Sprintf("commit limit %d", trial+1))
		commits, err := e.commitLimit(ctx, e.cfg.Concurrency, e.sz.commitDuration)
		if err != nil {
			return err
		}
		rates, baseRates, ratios = append(rates, rate), append(baseRates, base), append(ratios, rate/best)
		bestRates, commitRates, commitRatios = append(bestRates, best), append(commitRates, commits), append(commitRatios, rate/commits)
		settings[setting]++
		extractions = append(extractions, ex/float64(w.events()))
		e.progress("trial %d/%d: pipeline %.0f events/s (%d events, %.2f extractions/event); River at its best %.0f jobs/s (%v), "+
			"with recall's settings %.0f jobs/s; commit limit %.0f/s; ratios %.2f and %.2f",
			trial+1, e.sz.trials, rate, w.events(), ex/float64(w.events()), best, setting, base, commits, rate/best, rate/commits)
	}
	if n := notAccepted(p.metrics); n > 0 {
		e.progress("warning: %.0f events were retried or rejected", n)
	}
	res.PipelineEvents = e.sz.convs * e.sz.turns
	res.PipelineConversations, res.PipelineTurns = e.sz.convs, e.sz.turns
	res.Trials = e.sz.trials
	res.PipelineEventsPerS = median(rates)
	res.RiverNoopJobsPerS = median(baseRates)
	res.PipelineRatio = median(ratios)
	res.RiverBestJobsPerS = median(bestRates)
	res.CommitLimitPerS = median(commitRates)
	res.CommitRatio = median(commitRatios)
	for s, n := range settings {
		if n > settings[res.riverBestSetting] || res.RiverBestSetting == "" {
			res.riverBestSetting, res.RiverBestSetting = s, s.String()
		}
	}
	res.PipelineExtractionsPerEvent = median(extractions)
	e.pipelineRate = res.PipelineEventsPerS

	e.traceAs(ScenarioPipeline + " burst")
	jobsRun, applied, err := e.burst(ctx, e.sz.burst)
	if err != nil {
		return err
	}
	// The baseline's no-op jobs are the benchmark's, not recall's: delete
	// them, and vacuum as autovacuum would in a steady state, so that the
	// scenarios after this one do not pay for this one's leftovers.
	e.traceAs(ScenarioPipeline + " cleanup")
	if _, err := e.pool.Exec(ctx, `DELETE FROM river_job WHERE kind = $1`, noopArgs{}.Kind()); err != nil {
		return fmt.Errorf("delete the baseline's jobs: %w", err)
	}
	if _, err := e.pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	res.CoalesceBurst = e.sz.burst
	res.CoalesceExtractionsPer100 = float64(jobsRun) * 100 / float64(e.sz.burst)
	res.CoalesceAppliedPer100 = float64(applied) * 100 / float64(e.sz.burst)
	e.progress("coalescing: a burst of %d snapshots of one conversation ran %d extraction jobs (%d changed the state)", e.sz.burst, jobsRun, applied)
	return nil
}

// pipelineTrial publishes w as fast as JetStream takes it and returns the
// events per second from the first publish to the last state committed, and
// the extractions that changed a state.
func (e *env) pipelineTrial(ctx context.Context, p *pipeline, w workload) (rate, extractions float64, err error) {
	applied := counterValue(p.metrics.Extractions.WithLabelValues(checkpoint.Applied.String()))
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- e.publishAll(ctx, w, e.subject, e.js) }()
	werr := e.waitDone(ctx, w, 20*time.Millisecond)
	elapsed := time.Since(start)
	if err := errors.Join(<-done, werr); err != nil {
		return 0, 0, err
	}
	ex := counterValue(p.metrics.Extractions.WithLabelValues(checkpoint.Applied.String())) - applied
	return float64(w.events()) / elapsed.Seconds(), ex, nil
}

// burst publishes n snapshots of one conversation at once and counts the
// extraction jobs that ran for it, and the state versions they made.
func (e *env) burst(ctx context.Context, n int) (jobsRun, applied int, err error) {
	const userID, conversationID = "burst-u", "burst-c"
	hist := history(turnLength(n))
	pub := &asyncPublisher{js: e.js, subject: e.subject}
	for t := 1; t <= n; t++ {
		id := e.ids.next()
		if err := pub.publishStall(id, encodeEvent(id, userID, conversationID, 0, nil, hist[:turnLength(t)])); err != nil {
			return 0, 0, err
		}
	}
	if err := pub.wait(ctx); err != nil {
		return 0, 0, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var cursor int
		var version int64
		var pending int
		err := e.pool.QueryRow(ctx, `
SELECT c."cursor", c.version,
       (SELECT count(*) FROM river_job j WHERE j.kind = 'recall_extract' AND j.state NOT IN ('completed', 'discarded', 'cancelled')
          AND j.args->>'user_id' = $1 AND j.args->>'conversation_id' = $2)
FROM recall_conversation c WHERE c.user_id = $1 AND c.conversation_id = $2`, userID, conversationID).Scan(&cursor, &version, &pending)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, 0, err
		}
		if cursor >= finalCursor(n) && pending == 0 {
			applied = int(version)
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("burst: cursor %d of %d after 2m", cursor, finalCursor(n))
		}
		time.Sleep(20 * time.Millisecond)
	}
	err = e.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'recall_extract'
AND args->>'user_id' = $1 AND args->>'conversation_id' = $2`, userID, conversationID).Scan(&jobsRun)
	return jobsRun, applied, err
}

// notAccepted counts the events the worker retried or rejected.
func notAccepted(m *metrics.Metrics) float64 {
	n := counterValue(m.Events.WithLabelValues("retried", "")) + counterValue(m.Events.WithLabelValues("gap_retried", ""))
	for _, r := range checkpoint.Reasons {
		n += counterValue(m.Events.WithLabelValues("rejected", string(r)))
	}
	return n
}

// counterValue reads a counter.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// histogramValue reads a histogram's sample count and sum.
func histogramValue(h prometheus.Histogram) (uint64, float64) {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return 0, 0
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// histSnapshot is a histogram's cumulative buckets at one moment.
type histSnapshot struct {
	bounds []float64
	counts []uint64
	count  uint64
	sum    float64
}

func snapshotHistogram(h prometheus.Histogram) histSnapshot {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return histSnapshot{}
	}
	s := histSnapshot{count: m.GetHistogram().GetSampleCount(), sum: m.GetHistogram().GetSampleSum()}
	for _, b := range m.GetHistogram().GetBucket() {
		s.bounds = append(s.bounds, b.GetUpperBound())
		s.counts = append(s.counts, b.GetCumulativeCount())
	}
	return s
}

// since returns the mean and the q-quantile (interpolated within buckets,
// as Prometheus's histogram_quantile does) of the observations made after
// before, in milliseconds.
func (s histSnapshot) since(before histSnapshot, q float64) (mean, quantile float64) {
	n := s.count - before.count
	if n == 0 || len(s.bounds) == 0 {
		return 0, 0
	}
	mean = (s.sum - before.sum) / float64(n) * 1000
	rank := q * float64(n)
	lower, prev := 0.0, uint64(0)
	for i, bound := range s.bounds {
		c := s.counts[i]
		if len(before.counts) > i {
			c -= before.counts[i]
		}
		if float64(c) >= rank {
			if c == prev {
				return mean, bound * 1000
			}
			return mean, (lower + (bound-lower)*(rank-float64(prev))/float64(c-prev)) * 1000
		}
		lower, prev = bound, c
	}
	return mean, s.bounds[len(s.bounds)-1] * 1000 // beyond the last bucket
}

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile returns the q-quantile (0 < q ≤ 1) of sorted durations: the
// smallest value that at least q of them do not exceed.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
