package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/jobs"
)

// Result holds a run's figures. Rates and latencies are medians over the
// run's trials or rounds; each ratio is the median of the ratios of trials
// run side by side with their baseline.
type Result struct {
	Machine     Machine `json:"machine"`
	Quick       bool    `json:"quick"`
	Tiny        bool    `json:"tiny,omitempty"`
	Concurrency int     `json:"concurrency"`
	Trials      int     `json:"trials"`
	DurationS   float64 `json:"duration_s"`

	// Scenario 1.
	PipelineConversations int     `json:"pipeline_conversations"`
	PipelineTurns         int     `json:"pipeline_turns"`
	PipelineEvents        int     `json:"pipeline_events"`
	PipelineEventsPerS    float64 `json:"pipeline_events_per_s"`
	// RiverNoopJobsPerS is River working no-op jobs inserted as recall
	// inserts its jobs, with recall's fetch settings.
	RiverNoopJobsPerS float64 `json:"river_noop_jobs_per_s"`
	// RiverBestJobsPerS is River at its best on the machine: no-op jobs
	// inserted in batches, worked with the best of riverSettings
	// (RiverBestSetting, the one that won most trials).
	RiverBestJobsPerS float64 `json:"river_best_jobs_per_s"`
	RiverBestSetting  string  `json:"river_best_setting,omitempty"`
	riverBestSetting  riverSetting
	// CommitLimitPerS is how many single-row insert transactions per second
	// Concurrency goroutines commit; CommitRatio is PipelineEventsPerS
	// over it.
	CommitLimitPerS float64 `json:"commit_limit_per_s"`
	CommitRatio     float64 `json:"commit_ratio"`
	// PipelineRatio is PipelineEventsPerS over RiverBestJobsPerS.
	PipelineRatio               float64 `json:"pipeline_ratio"`
	PipelineExtractionsPerEvent float64 `json:"pipeline_extractions_per_event"`
	CoalesceBurst               int     `json:"coalesce_burst"`
	CoalesceExtractionsPer100   float64 `json:"coalesce_extractions_per_100"`
	CoalesceAppliedPer100       float64 `json:"coalesce_applied_per_100"`

	// Failed lists the scenarios that failed; the others ran.
	Failed []ScenarioFailure `json:"failed,omitempty"`

	// Scenario 2, paced load (fields in pacedResult).
	pacedResult

	// Scenario 2, lag at half of scenario 1's maximum.
	LagRateEventsPerS float64 `json:"lag_rate_events_per_s"`
	// LagRateGiven is set when the rate was given (Config.LagRate) rather
	// than half of scenario 1's maximum.
	LagRateGiven bool    `json:"lag_rate_given,omitempty"`
	LagSamples   int     `json:"lag_samples"`
	LagTimeouts  int     `json:"lag_timeouts"`
	LagP50Ms     float64 `json:"lag_p50_ms"`
	LagP99Ms     float64 `json:"lag_p99_ms"`
	LagP999Ms    float64 `json:"lag_p999_ms"`
	LagMaxMs     float64 `json:"lag_max_ms"`
	// Where the lag goes: the worker's handling of an event, the wait of
	// extraction jobs in River's queue, the extraction, and publication to
	// committed state (recall_state_lag_seconds). p99s from the metrics'
	// histograms are interpolated within their buckets.
	LagExtractionsPerEvent float64 `json:"lag_extractions_per_event"`
	LagIngestMeanMs        float64 `json:"lag_ingest_mean_ms"`
	LagIngestP99Ms         float64 `json:"lag_ingest_p99_ms"`
	LagJobWaitP50Ms        float64 `json:"lag_job_wait_p50_ms"`
	LagJobWaitP99Ms        float64 `json:"lag_job_wait_p99_ms"`
	LagExtractionMeanMs    float64 `json:"lag_extraction_mean_ms"`
	LagExtractionP99Ms     float64 `json:"lag_extraction_p99_ms"`
	LagCommittedMeanMs     float64 `json:"lag_committed_mean_ms"`
	LagCommittedP99Ms      float64 `json:"lag_committed_p99_ms"`
	// The lag of events published together, four at a time, with pauses.
	LagBurstSamples int     `json:"lag_burst_samples"`
	LagBurstP50Ms   float64 `json:"lag_burst_p50_ms"`
	LagBurstP99Ms   float64 `json:"lag_burst_p99_ms"`
	LagBurstMaxMs   float64 `json:"lag_burst_max_ms"`

	// Scenario 3.
	CostPath string    `json:"cost_path,omitempty"`
	Cost     []CostRow `json:"cost,omitempty"`
	// AppendCostRatio10kVs10 is the time of an append turn at the longest
	// length over that at the shortest (10,000 and 10 messages, but for
	// Tiny runs).
	AppendCostRatio10kVs10 float64 `json:"append_cost_ratio_10k_vs_10"`
	// CostArchiveEntries is the archive size of the longest append
	// conversation: its history repeats a few texts, so restatements keep
	// it small at every length (the search scenario measures a turn at a
	// large archive).
	CostArchiveEntries int `json:"cost_archive_entries"`
	// FullSnapshotMBPerS is the event bytes per second of full snapshots at
	// the longest length.
	FullSnapshotMBPerS float64 `json:"full_snapshot_mb_per_s"`
	// DigestRatios are, per kind of content, plain SHA-256's time over the
	// messages' canonical bytes divided by their digests' and chain's;
	// DigestRatio is the worst of them, DigestWorstKind its kind.
	DigestRatios    map[string]float64 `json:"digest_ratios,omitempty"`
	DigestRatio     float64            `json:"digest_ratio"`
	DigestWorstKind string             `json:"digest_worst_kind,omitempty"`

	// Scenario 4.
	ReadClients              int     `json:"read_clients"`
	ReadRequestsPerS         float64 `json:"read_requests_per_s"`
	ReadBaselineRequestsPerS float64 `json:"read_baseline_requests_per_s"`
	ReadRatio                float64 `json:"read_ratio"`
	ReadP99Ms                float64 `json:"read_p99_ms"`
	ReadBaselineP99Ms        float64 `json:"read_baseline_p99_ms"`

	// Scenario 6: search.
	SearchPath string `json:"search_path,omitempty"`
	// SearchArchiveEntries is the archive size of the searched conversation
	// (archive_count), SearchMessages its length.
	SearchArchiveEntries int `json:"search_archive_entries"`
	SearchMessages       int `json:"search_messages"`
	// Append20kArchiveMs and Append10MessagesMs are the median times of an
	// append turn (parse, ingest, extraction) on that conversation and on
	// one of 10 messages, alternating; AppendCostRatio20kArchive the first
	// over the second.
	Append20kArchiveMs        float64 `json:"append_20k_archive_ms"`
	Append10MessagesMs        float64 `json:"append_10_messages_ms"`
	AppendCostRatio20kArchive float64 `json:"append_cost_ratio_20k_archive"`
	// POST …/evidence/search of the conversation from SearchClients
	// loopback clients, percentiles over every request of every round,
	// beside GET …/evidence of it by the same clients in alternating
	// rounds.
	SearchClients                 int     `json:"search_clients"`
	SearchRequests                int     `json:"search_requests"`
	SearchP50Ms                   float64 `json:"search_p50_ms"`
	SearchP99Ms                   float64 `json:"search_p99_ms"`
	SearchRequestsPerS            float64 `json:"search_requests_per_s"`
	SearchBaselineGetP50Ms        float64 `json:"search_baseline_get_p50_ms"`
	SearchBaselineGetP99Ms        float64 `json:"search_baseline_get_p99_ms"`
	SearchBaselineGetRequestsPerS float64 `json:"search_baseline_get_requests_per_s"`
	// SearchPacedRate is half of SearchRequestsPerS; SearchPacedP50Ms and
	// SearchPacedP99Ms the latencies of searches sent at that rate by the
	// same clients, each from its scheduled time.
	SearchPacedRate  float64 `json:"search_paced_rate"`
	SearchPacedP50Ms float64 `json:"search_paced_p50_ms"`
	SearchPacedP99Ms float64 `json:"search_paced_p99_ms"`
	// SearchPlan is the gist of EXPLAIN ANALYZE of the statement that reads
	// a search's candidates, on that conversation.
	SearchPlan []string `json:"search_plan,omitempty"`

	// Scenario 7: context assembly.
	ContextBodyBytes            int     `json:"context_body_bytes"`
	ContextBuildP50Ms           float64 `json:"context_build_p50_ms"`
	ContextBuildP99Ms           float64 `json:"context_build_p99_ms"`
	ContextClients              int     `json:"context_clients"`
	ContextRequestsPerS         float64 `json:"context_requests_per_s"`
	ContextBaselineRequestsPerS float64 `json:"context_baseline_requests_per_s"`
	ContextRatio                float64 `json:"context_ratio"`
	ContextP99Ms                float64 `json:"context_p99_ms"`
	ContextBaselineP99Ms        float64 `json:"context_baseline_p99_ms"`

	// Scenario 5.
	MemoryMethod         string  `json:"memory_method,omitempty"`
	WorkerRSSMiB         float64 `json:"worker_rss_mib"`
	WorkerIdleRSSMiB     float64 `json:"worker_idle_rss_mib"`
	BigEventMiB          float64 `json:"big_event_mib"`
	WorkerRSSBigEventMiB float64 `json:"worker_rss_big_event_mib"`
	// RSSRatioLarge is WorkerRSSBigEventMiB over BigEventMiB.
	RSSRatioLarge            float64 `json:"rss_ratio_large"`
	WorkerRSSPipelineMiB     float64 `json:"worker_rss_pipeline_mib"`
	MemoryPipelineEventsPerS float64 `json:"memory_pipeline_events_per_s"`

	// Scenario 8: users. One user's UsersConversations conversations,
	// holding UsersArchiveEntries archive entries in all.
	UsersConversations  int `json:"users_conversations"`
	UsersArchiveEntries int `json:"users_archive_entries"`
	// GET /v1/users/{user_id}/export of that user from a child `recall
	// api`: ExportBytes of NDJSON, at ExportMBPerS (median of the rounds),
	// and the child's largest RSS growth while streaming, measured as
	// ExportMemoryMethod says.
	ExportBytes        int     `json:"export_bytes"`
	ExportMBPerS       float64 `json:"export_mb_per_s"`
	ExportRSSGrowthMiB float64 `json:"export_rss_growth_mib"`
	ExportMemoryMethod string  `json:"export_memory_method,omitempty"`
	// DeleteUserSeconds is the duration of DELETE /v1/users/{user_id} of
	// that user, through the same child.
	DeleteUserSeconds float64 `json:"delete_user_seconds"`
	// GET …/evidence of the user's conversations from JWKSClients loopback
	// clients through the API in process, with an RS256 token verified
	// with the key of a JWKS served in process (JWKSRequestsPerS) beside
	// an HS256 token (JWKSHS256RequestsPerS); JWKSReadRatio is the median
	// of the first over the second.
	JWKSClients           int     `json:"jwks_clients"`
	JWKSRequestsPerS      float64 `json:"jwks_requests_per_s"`
	JWKSHS256RequestsPerS float64 `json:"jwks_hs256_requests_per_s"`
	JWKSReadRatio         float64 `json:"jwks_read_ratio"`

	// SQL is the client-side time of the statements of each scenario, with
	// Config.SQLStats.
	SQL []SQLStat `json:"sql,omitempty"`
}

// Machine describes where a run happened.
type Machine struct {
	CPUs     int    `json:"cpus"`
	Go       string `json:"go"`
	Postgres string `json:"postgres"`
	NATS     string `json:"nats"`
}

// CostRow is scenario 3 at one conversation length: the median time of a
// turn (ingest and extraction).
type CostRow struct {
	Messages       int     `json:"messages"`
	AppendMs       float64 `json:"append_ms"`
	FullMs         float64 `json:"full_ms"`
	FullEventBytes int     `json:"full_event_bytes"`
	FullMBPerS     float64 `json:"full_mb_per_s"`
}

// Targets of the figures on the reference machine.
const (
	TargetPipelineRatio      = 0.5
	TargetCommitRatio        = 0.25
	TargetFullSnapshotMBPerS = 50
	TargetDigestRatio        = 0.5
	TargetLagP99Ms           = 100
	TargetAppendRatio        = 1.5
	TargetReadRatio          = 0.8
	TargetRSSPerEvent        = 4
	TargetPipelineRSSMiB     = 200
	TargetCoalescePer100     = 25
	TargetSearchP99Ms        = 25
	TargetContextBuildMs     = 5
	TargetContextRatio       = 0.5
	TargetExportMBPerS       = 20
	TargetExportRSSGrowthMiB = 32
	TargetDeleteUserSeconds  = 5
	TargetJWKSReadRatio      = 0.9
	targetMet, targetMiss    = "met", "MISSED"
)

func verdict(ok bool) string {
	if ok {
		return targetMet
	}
	return targetMiss
}

// WriteTable writes r as a table: each scenario beside its baseline.
func (r *Result) WriteTable(w io.Writer) error {
	kind := "full run"
	switch {
	case r.Tiny:
		kind = "tiny run (smoke test; figures mean nothing)"
	case r.Quick:
		kind = "quick run (fewer trials, smaller sizes)"
	}
	fmt.Fprintf(w, "recall bench: %s, concurrency %d, %.0fs\n", kind, r.Concurrency, r.DurationS)
	fmt.Fprintf(w, "machine: %d CPUs, Postgres %s, NATS %s, %s\n\n", r.Machine.CPUs, r.Machine.Postgres, r.Machine.NATS, r.Machine.Go)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\trecall\tbaseline (same run)\tratio\ttarget\t")
	if r.PipelineEvents > 0 {
		fmt.Fprintf(tw, "1 pipeline: %d conv × %d turns, median of %d\t%.0f events/s\t%.0f jobs/s River at its best\t%.2f\t≥ %.2f %s\t\n",
			r.PipelineConversations, r.PipelineTurns, r.Trials, r.PipelineEventsPerS, r.RiverBestJobsPerS, r.PipelineRatio,
			TargetPipelineRatio, verdict(r.PipelineRatio >= TargetPipelineRatio))
		fmt.Fprintf(tw, "  against the commit limit\t\t%.0f single-row commits/s, %d clients\t%.2f\t≥ %.2f %s\t\n",
			r.CommitLimitPerS, r.Concurrency, r.CommitRatio, TargetCommitRatio, verdict(r.CommitRatio >= TargetCommitRatio))
		fmt.Fprintf(tw, "  River with recall's settings\t\t%.0f jobs/s (%d workers, FetchCooldown %v)\t\t\t\n",
			r.RiverNoopJobsPerS, r.Concurrency, jobs.FetchCooldown)
		fmt.Fprintf(tw, "  coalescing: burst of %d snapshots, 1 conv\t%.0f extractions per 100 (%.0f changed state)\t\t\t< %d %s\t\n",
			r.CoalesceBurst, r.CoalesceExtractionsPer100, r.CoalesceAppliedPer100, TargetCoalescePer100,
			verdict(r.CoalesceExtractionsPer100 < TargetCoalescePer100))
	}
	r.writePaced(tw)
	if r.LagSamples > 0 {
		at := "½ max"
		if r.LagRateGiven {
			at = "rate given"
		}
		fmt.Fprintf(tw, "2 lag publish→API at %.0f events/s (%s)\tp50 %.1f  p99 %.1f  p999 %.1f ms\t\t\tp99 < %d ms %s\t\n",
			r.LagRateEventsPerS, at, r.LagP50Ms, r.LagP99Ms, r.LagP999Ms, TargetLagP99Ms, verdict(r.LagP99Ms < TargetLagP99Ms))
		fmt.Fprintf(tw, "  where it goes (means; p99 ≈ from histograms)\thandling %.1f (%.0f), job wait p50 %.1f (p99 %.0f), extraction %.1f (%.0f) ms\t\t\t\t\n",
			r.LagIngestMeanMs, r.LagIngestP99Ms, r.LagJobWaitP50Ms, r.LagJobWaitP99Ms, r.LagExtractionMeanMs, r.LagExtractionP99Ms)
		if r.PipelineExtractionsPerEvent > 0 {
			fmt.Fprintf(tw, "  extractions per event\t%.2f paced, %.2f at scenario 1's maximum\t\t\t\t\n", r.LagExtractionsPerEvent, r.PipelineExtractionsPerEvent)
		}
		if r.LagBurstSamples > 0 {
			fmt.Fprintf(tw, "  lag of events 4 at once, then a pause\tp50 %.1f  p99 %.1f  max %.1f ms\t\t\t\t\n",
				r.LagBurstP50Ms, r.LagBurstP99Ms, r.LagBurstMaxMs)
		}
	}
	if len(r.Cost) > 0 {
		first, last := r.Cost[0], r.Cost[len(r.Cost)-1]
		fmt.Fprintf(tw, "3 cost per turn (ingest+extraction), append\t%.2f ms at %d → %.2f ms at %d msgs\t\t%.2f\t≤ %.1f %s\t\n",
			first.AppendMs, first.Messages, last.AppendMs, last.Messages, r.AppendCostRatio10kVs10,
			TargetAppendRatio, verdict(r.AppendCostRatio10kVs10 <= TargetAppendRatio))
		fmt.Fprintf(tw, "  full snapshots at %d msgs\t%.1f MB/s of event bytes\t\t\t≥ %d MB/s %s\t\n", last.Messages, r.FullSnapshotMBPerS,
			TargetFullSnapshotMBPerS, verdict(r.FullSnapshotMBPerS >= TargetFullSnapshotMBPerS))
		if len(r.DigestRatios) > 0 {
			kinds := slices.Sorted(maps.Keys(r.DigestRatios))
			var parts []string
			for _, k := range kinds {
				parts = append(parts, fmt.Sprintf("%s %.2f", k, r.DigestRatios[k]))
			}
			fmt.Fprintf(tw, "  message digests ÷ plain SHA-256, same bytes\t%s\t\t%.2f\t≥ %.1f %s\t\n", strings.Join(parts, ", "), r.DigestRatio,
				TargetDigestRatio, verdict(r.DigestRatio >= TargetDigestRatio))
		}
	}
	if r.ReadClients > 0 {
		fmt.Fprintf(tw, "4 read API GET …/evidence, %d clients\t%.0f req/s, p99 %.2f ms\t%.0f req/s, p99 %.2f ms bare select\t%.2f\t≥ %.2f %s\t\n",
			r.ReadClients, r.ReadRequestsPerS, r.ReadP99Ms, r.ReadBaselineRequestsPerS, r.ReadBaselineP99Ms, r.ReadRatio,
			TargetReadRatio, verdict(r.ReadRatio >= TargetReadRatio))
	}
	if r.SearchClients > 0 {
		fmt.Fprintf(tw, "6 append turn, archive of %d entries\t%.2f ms\t%.2f ms at 10 msgs\t%.2f\t≤ %.1f %s\t\n",
			r.SearchArchiveEntries, r.Append20kArchiveMs, r.Append10MessagesMs, r.AppendCostRatio20kArchive,
			TargetAppendRatio, verdict(r.AppendCostRatio20kArchive <= TargetAppendRatio))
		fmt.Fprintf(tw, "  POST …/evidence/search, %d clients\t%.0f req/s, p50 %.2f  p99 %.2f ms\t%.0f req/s, p99 %.2f ms GET …/evidence\t\tp99 < %d ms %s\t\n",
			r.SearchClients, r.SearchRequestsPerS, r.SearchP50Ms, r.SearchP99Ms, r.SearchBaselineGetRequestsPerS, r.SearchBaselineGetP99Ms,
			TargetSearchP99Ms, verdict(r.SearchP99Ms < TargetSearchP99Ms))
		fmt.Fprintf(tw, "  the same clients paced at half that rate\t%.0f req/s, p50 %.2f  p99 %.2f ms\t\t\tp99 < %d ms %s\t\n",
			r.SearchPacedRate, r.SearchPacedP50Ms, r.SearchPacedP99Ms, TargetSearchP99Ms, verdict(r.SearchPacedP99Ms < TargetSearchP99Ms))
	}
	if r.WorkerRSSMiB > 0 {
		perEvent := r.WorkerRSSBigEventMiB / r.BigEventMiB
		fmt.Fprintf(tw, "5 worker peak RSS, one %.1f MiB snapshot\t%.1f MiB (%.1f× the event; idle %.1f)\t\t\t< %d× %s\t\n",
			r.BigEventMiB, r.WorkerRSSBigEventMiB, perEvent, r.WorkerIdleRSSMiB, TargetRSSPerEvent, verdict(perEvent <= TargetRSSPerEvent))
		fmt.Fprintf(tw, "  during scenario 1's workload\t%.1f MiB (%.0f events/s)\t\t\t< %d MiB %s\t\n",
			r.WorkerRSSPipelineMiB, r.MemoryPipelineEventsPerS, TargetPipelineRSSMiB, verdict(r.WorkerRSSPipelineMiB < TargetPipelineRSSMiB))
	}
	if r.ContextBodyBytes > 0 {
		fmt.Fprintf(tw, "7 context assembly in process, %.1f MB body\tBuild p50 %.2f  p99 %.2f ms\t\t\tp99 < %d ms %s\t\n",
			float64(r.ContextBodyBytes)/1e6, r.ContextBuildP50Ms, r.ContextBuildP99Ms, TargetContextBuildMs, verdict(r.ContextBuildP99Ms < TargetContextBuildMs))
	}
	if r.ContextClients > 0 {
		fmt.Fprintf(tw, "  POST …/context, %d clients\t%.1f req/s, p99 %.0f ms\t%.1f req/s, p99 %.0f ms decode and echo\t%.2f\t≥ %.2f %s\t\n",
			r.ContextClients, r.ContextRequestsPerS, r.ContextP99Ms, r.ContextBaselineRequestsPerS, r.ContextBaselineP99Ms, r.ContextRatio,
			TargetContextRatio, verdict(r.ContextRatio >= TargetContextRatio))
	}
	if r.JWKSClients > 0 {
		fmt.Fprintf(tw, "8 GET …/evidence with RS256 tokens through a JWKS, %d clients\t%.0f req/s\t%.0f req/s with HS256 tokens\t%.2f\t≥ %.1f %s\t\n",
			r.JWKSClients, r.JWKSRequestsPerS, r.JWKSHS256RequestsPerS, r.JWKSReadRatio, TargetJWKSReadRatio, verdict(r.JWKSReadRatio >= TargetJWKSReadRatio))
	}
	if r.ExportBytes > 0 {
		fmt.Fprintf(tw, "  GET …/export, %d conv, %d entries, %.1f MB\t%.1f MB/s\t\t\t≥ %d MB/s %s\t\n",
			r.UsersConversations, r.UsersArchiveEntries, float64(r.ExportBytes)/1e6, r.ExportMBPerS,
			TargetExportMBPerS, verdict(r.ExportMBPerS >= TargetExportMBPerS))
		fmt.Fprintf(tw, "  the API's RSS growth while streaming\t%.1f MiB\t\t\t< %d MiB %s\t\n",
			r.ExportRSSGrowthMiB, TargetExportRSSGrowthMiB, verdict(r.ExportRSSGrowthMiB < TargetExportRSSGrowthMiB))
		fmt.Fprintf(tw, "  DELETE /v1/users/{user_id} of that user\t%.2f s\t\t\t< %d s %s\t\n",
			r.DeleteUserSeconds, TargetDeleteUserSeconds, verdict(r.DeleteUserSeconds < TargetDeleteUserSeconds))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Cost) > 0 {
		fmt.Fprintf(w, "\nscenario 3 per length (%s):\n", r.CostPath)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "messages\tappend ms\tfull ms\tfull event bytes\tfull MB/s\t")
		for _, c := range r.Cost {
			fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t%d\t%.1f\t\n", c.Messages, c.AppendMs, c.FullMs, c.FullEventBytes, c.FullMBPerS)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.SearchPlan) > 0 {
		fmt.Fprintf(w, "\nscenario 6, the statement that reads a search's candidates at %d entries (EXPLAIN ANALYZE):\n", r.SearchArchiveEntries)
		for _, l := range r.SearchPlan {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if len(r.SQL) > 0 {
		fmt.Fprintf(w, "\nSQL statements by client-side time (round trip, lock waits, commit flush):\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "scenario\tcalls\ttotal ms\tmean ms\tmax ms\tstatement\t")
		for _, s := range r.SQL {
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f\t%.1f\t%s\t\n", s.Scenario, s.Calls, s.TotalMs, s.MeanMs, s.MaxMs, s.Statement)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	var notes []string
	for _, f := range r.Failed {
		notes = append(notes, fmt.Sprintf("scenario %s FAILED: %s", f.Scenario, f.Error))
	}
	if r.PacedMethod != "" {
		notes = append(notes, fmt.Sprintf("paced: %s; a conversation takes a turn every %.0fs (every %dth a full snapshot, the others append events); "+
			"capacity is the highest rate whose backlog (events not acknowledged by the worker and extraction jobs not finished) stayed within "+
			"one second of arrivals in the second half of a %.0fs window; the cost window has no readers, so its commits are the pipeline's",
			r.PacedMethod, r.PacedPeriodS, snapshotEvery, r.PacedWindowS))
	}
	if r.LagTimeouts > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d lag samples took over 15s", r.LagTimeouts, r.LagSamples))
	}
	if r.PipelineEvents > 0 {
		notes = append(notes, fmt.Sprintf("River with recall's settings is capped near %d jobs/s: one fetch of at most %d jobs (the concurrency) per %v FetchCooldown",
			int(float64(r.Concurrency)/jobs.FetchCooldown.Seconds()), r.Concurrency, jobs.FetchCooldown),
			"after scenario 1 the baseline's jobs are deleted and the database vacuumed")
	}
	if len(r.Cost) > 0 {
		notes = append(notes, fmt.Sprintf("scenario 3's history repeats %d texts, so its archive holds %d entries at %d messages: its ratio is the turn's cost "+
			"against the history's length, scenario 6's against the archive's size", len(texts), r.CostArchiveEntries, r.Cost[len(r.Cost)-1].Messages))
	}
	if r.SearchClients > 0 {
		notes = append(notes, fmt.Sprintf("search: conversations written through the store (%s), the archive analyzed as autovacuum would; "+
			"a turn at %d entries reads the same bounded candidates as a search (up to %d rows: the newest %d, the oldest and newest %d and heaviest of %d tiers, "+
			"the newest %d sharing a term with the request, or %d a term for a question, and %d with its window) where one at 10 messages reads a handful",
			r.SearchPath, r.SearchArchiveEntries,
			evidence.CandidateLimit*(1+int(evidence.TierContext))+evidence.RelevantLimit+evidence.WindowLimit, evidence.CandidateLimit,
			evidence.CandidateLimit/4, int(evidence.TierContext), evidence.StatementLimit, evidence.TermLimit, evidence.WindowLimit),
			fmt.Sprintf("a search is one round trip, a repeatable-read batch of the conversation's row and the keys of the entries its query picks "+
				"(the candidates no query picks are kept in memory per conversation, stamped with the row they were read at, and entries by key; "+
				"a search that finds the row changed reads everything, one that lacks entries reads them), and the view's choice and rendering in Go, against one primary-key read for GET; it is CPU-bound: %d closed-loop clients "+
				"on %d CPUs wait about clients ÷ throughput = %.0f ms each (p50 %.0f ms)",
				r.SearchClients, r.Machine.CPUs, 1000*float64(r.SearchClients)/r.SearchRequestsPerS, r.SearchP50Ms))
	}
	if r.MemoryMethod != "" {
		notes = append(notes, "memory: "+r.MemoryMethod+"; the snapshot goes through an in-process NATS server with max_payload raised")
	}
	if r.JWKSClients > 0 {
		notes = append(notes, "users: the user's conversations are written through the store, as search's are; GET …/evidence runs in process, "+
			"and the API's token cache serves either kind of token after its first verification, so the JWKS ratio is of the whole request path")
	}
	if r.ExportMemoryMethod != "" {
		notes = append(notes, "users: export and deletion from a "+r.ExportMemoryMethod)
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nnotes: %s\n", strings.Join(notes, "; "))
	}
	return nil
}
