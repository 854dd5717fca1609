package bench

import (
	"fmt"
	"io"
)

// ScenarioFailure is a scenario that failed, and why.
type ScenarioFailure struct {
	Scenario string `json:"scenario"`
	Error    string `json:"error"`
}

// pacedResult holds the paced scenario's figures, in Result.
type pacedResult struct {
	PacedMethod  string      `json:"paced_method,omitempty"`
	PacedPeriodS float64     `json:"paced_period_s,omitempty"`
	PacedWindowS float64     `json:"paced_window_s,omitempty"`
	PacedSteps   []PacedStep `json:"paced_steps,omitempty"`
	// CapacityEventsPerS is the highest rate tried whose backlog stayed
	// bounded; CapacityUpperEventsPerS the lowest that did not (0: none).
	CapacityEventsPerS      float64 `json:"capacity_events_per_s"`
	CapacityUpperEventsPerS float64 `json:"capacity_upper_events_per_s"`
	// Publish→readable through GET …/evidence?min_cursor, at half and at
	// 80% of capacity.
	LagP50MsAt50   float64 `json:"lag_p50_ms_at_50"`
	LagP99MsAt50   float64 `json:"lag_p99_ms_at_50"`
	LagP999MsAt50  float64 `json:"lag_p999_ms_at_50"`
	LagSamplesAt50 int     `json:"lag_samples_at_50"`
	LagP50MsAt80   float64 `json:"lag_p50_ms_at_80"`
	LagP99MsAt80   float64 `json:"lag_p99_ms_at_80"`
	LagP999MsAt80  float64 `json:"lag_p999_ms_at_80"`
	LagSamplesAt80 int     `json:"lag_samples_at_80"`
	// The cost of an event at half of capacity, in a window without
	// readers: CPU of recall's worker and of Postgres (the run database's
	// backends and the cluster's background processes), commits, rows
	// written and extraction jobs per event.
	CostRateEventsPerS    float64 `json:"cost_rate_events_per_s"`
	CostEvents            int     `json:"cost_events"`
	CPUMsPerEventRecall   float64 `json:"cpu_ms_per_event_recall"`
	CPUMsPerEventPostgres float64 `json:"cpu_ms_per_event_postgres"`
	CommitsPerEvent       float64 `json:"commits_per_event"`
	RowsPerEvent          float64 `json:"rows_per_event"`
	JobsPerEvent          float64 `json:"jobs_per_event"`
	// RoundTripsPerEvent counts the in-process pipeline's statements and
	// batches per event in that window, with Config.SQLStats.
	RoundTripsPerEvent float64 `json:"round_trips_per_event,omitempty"`
	// CPUMsPerReadAPI is the API's CPU per long-poll answered at half of
	// capacity.
	CPUMsPerReadAPI float64 `json:"cpu_ms_per_read_api"`
	// River's no-op job at the same rate and schedule.
	RiverPacedRate           float64 `json:"river_paced_rate"`
	RiverCPUMsPerJob         float64 `json:"river_cpu_ms_per_job"`
	RiverPostgresCPUMsPerJob float64 `json:"river_postgres_cpu_ms_per_job"`
	RiverCommitsPerJob       float64 `json:"river_commits_per_job"`
	RiverPacedLagP50Ms       float64 `json:"river_paced_lag_p50_ms"`
	RiverPacedLagP99Ms       float64 `json:"river_paced_lag_p99_ms"`
}

// Targets of the paced scenario.
const (
	TargetPacedLagP99At50  = 100
	TargetPacedLagP999At50 = 250
	TargetPacedLagP99At80  = 250
)

// writePaced writes the paced scenario's rows of the table.
func (r *Result) writePaced(tw io.Writer) {
	if r.CapacityEventsPerS == 0 {
		return
	}
	upper := "none tried was unbounded"
	if r.CapacityUpperEventsPerS > 0 {
		upper = fmt.Sprintf("unbounded at %.0f", r.CapacityUpperEventsPerS)
	}
	fmt.Fprintf(tw, "2 paced capacity: turns every %.0fs, %.0fs windows\t%.0f events/s (%s)\t%.0f events/s burst (scenario 1)\t\t\t\n",
		r.PacedPeriodS, r.PacedWindowS, r.CapacityEventsPerS, upper, r.PipelineEventsPerS)
	fmt.Fprintf(tw, "  lag publish→API at 50%% of capacity\tp50 %.1f  p99 %.1f  p999 %.1f ms\t\t\tp99 < %d, p999 < %d ms %s\t\n",
		r.LagP50MsAt50, r.LagP99MsAt50, r.LagP999MsAt50, TargetPacedLagP99At50, TargetPacedLagP999At50,
		verdict(r.LagP99MsAt50 < TargetPacedLagP99At50 && r.LagP999MsAt50 < TargetPacedLagP999At50))
	fmt.Fprintf(tw, "  lag publish→API at 80%% of capacity\tp50 %.1f  p99 %.1f  p999 %.1f ms\t\t\tp99 < %d ms %s\t\n",
		r.LagP50MsAt80, r.LagP99MsAt80, r.LagP999MsAt80, TargetPacedLagP99At80, verdict(r.LagP99MsAt80 < TargetPacedLagP99At80))
	if r.RiverPacedRate > 0 {
		fmt.Fprintf(tw, "  River's no-op job at %.0f jobs/s, scheduled→done\t\tp50 %.1f  p99 %.1f ms\t\t\t\n",
			r.RiverPacedRate, r.RiverPacedLagP50Ms, r.RiverPacedLagP99Ms)
	}
	fmt.Fprintf(tw, "  CPU ms per event at %.0f events/s: recall, Postgres\t%.3f, %.3f\t%.3f, %.3f River's no-op job\t%.1f\t\t\n",
		r.CostRateEventsPerS, r.CPUMsPerEventRecall, r.CPUMsPerEventPostgres, r.RiverCPUMsPerJob, r.RiverPostgresCPUMsPerJob,
		ratio(r.CPUMsPerEventRecall+r.CPUMsPerEventPostgres, r.RiverCPUMsPerJob+r.RiverPostgresCPUMsPerJob))
	fmt.Fprintf(tw, "  commits, rows, extraction jobs per event\t%.2f, %.1f, %.2f\t%.2f commits per job\t\t\t\n",
		r.CommitsPerEvent, r.RowsPerEvent, r.JobsPerEvent, r.RiverCommitsPerJob)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
