// Package metrics defines recall's Prometheus collectors in one place, so
// that every adapter counts the same way and no label ever carries message
// text or conversation ids.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds every collector recall exports. Labels are bounded sets:
// routes, status codes, outcomes and rejection reasons.
type Metrics struct {
	Registry *prometheus.Registry

	// Events counts checkpoint events by outcome (accepted, duplicate,
	// stale, deleted, rejected, retried) and reason (a rejection reason, or
	// "" for the other outcomes).
	Events *prometheus.CounterVec
	// IngestSeconds is the time from receiving an event to acknowledging it.
	IngestSeconds prometheus.Histogram
	// Extractions counts extraction jobs by outcome (applied, nothing, deleted, error).
	Extractions *prometheus.CounterVec
	// ExtractionSeconds is the duration of extraction jobs.
	ExtractionSeconds prometheus.Histogram
	// SummarisedMessages counts messages folded into evidence.
	SummarisedMessages prometheus.Counter
	// StateLagSeconds is the time from an event's publication to the state
	// that includes it being committed.
	StateLagSeconds prometheus.Histogram
	// HTTPRequests counts read API requests by route and status code.
	HTTPRequests *prometheus.CounterVec
	// HTTPSeconds is the read API's latency by route.
	HTTPSeconds *prometheus.HistogramVec
	// Waiters is the number of long-poll requests waiting for a cursor.
	Waiters prometheus.Gauge
	// MaxWaiters is the most requests that may wait at once
	// (RECALL_MAX_WAITERS); more are answered 429. Alerts compare Waiters
	// with it.
	MaxWaiters prometheus.Gauge
	// ContextRequests counts context assemblies by outcome (assembled,
	// budget_too_small, cannot_compact, invalid).
	ContextRequests *prometheus.CounterVec
	// ContextTokens is the estimated tokens of assembled prompts by part
	// (system, tools, evidence, history, current, total).
	ContextTokens *prometheus.HistogramVec
	// ContextDroppedTurns counts history turns left out of assembled prompts.
	ContextDroppedTurns prometheus.Counter
	// ContextCompactedToolResults counts tool results compacted in assembled
	// prompts.
	ContextCompactedToolResults prometheus.Counter
	// ContextEvidence counts assembled prompts by whether the evidence
	// message was included (included, left_out, none).
	ContextEvidence *prometheus.CounterVec
	// ExtractionJobs is River's extraction jobs by state (available,
	// scheduled, running, retryable, discarded), as the API process last
	// counted them (jobs.WatchQueue): the queue's depth, and the jobs River
	// gave up on.
	ExtractionJobs *prometheus.GaugeVec
	// ModelCalls counts the model lane's calls by outcome (ok,
	// invalid_answer, timeout, transport_error, rate_limited, server_error,
	// client_error, bad_response).
	ModelCalls *prometheus.CounterVec
	// ModelTokens counts the tokens of the model lane's calls, as the
	// endpoint's usage reports them, by direction (in, out).
	ModelTokens *prometheus.CounterVec
	// ModelCallSeconds is the latency of the model lane's calls.
	ModelCallSeconds prometheus.Histogram
	// ModelNotes counts the notes of the model lane's answers by result
	// (written, dropped).
	ModelNotes *prometheus.CounterVec
}

// JobStates are the states of River's jobs that ExtractionJobs counts.
var JobStates = []string{"available", "scheduled", "running", "retryable", "discarded"}

// New builds the collectors on a fresh registry with the Go and process
// collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	latency := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		Registry: reg,
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "recall_events_total", Help: "Checkpoint events by outcome and rejection reason.",
		}, []string{"outcome", "reason"}),
		IngestSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "recall_ingest_duration_seconds", Help: "Time from receiving an event to acknowledging it.", Buckets: latency,
		}),
		Extractions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "recall_extractions_total", Help: "Extraction jobs by outcome.",
		}, []string{"outcome"}),
		ExtractionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "recall_extraction_duration_seconds", Help: "Duration of extraction jobs.", Buckets: latency,
		}),
		SummarisedMessages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "recall_summarised_messages_total", Help: "Messages folded into evidence.",
		}),
		StateLagSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "recall_state_lag_seconds", Help: "Time from an event's publication to the committed state that includes it.", Buckets: latency,
		}),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "recall_http_requests_total", Help: "Read API requests by route and status code.",
		}, []string{"route", "code"}),
		HTTPSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "recall_http_request_duration_seconds", Help: "Read API latency by route.", Buckets: latency,
		}, []string{"route"}),
		Waiters: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "recall_http_waiters", Help: "Long-poll requests waiting for a cursor.",
		}),
		MaxWaiters: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "recall_http_max_waiters", Help: "Long-poll requests that may wait at once (RECALL_MAX_WAITERS); more are answered 429.",
		}),
		ContextRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "recall_context_requests_total", Help: "Context assemblies by outcome.",
		}, []string{"outcome"}),
		ContextTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "recall_context_estimated_tokens", Help: "Estimated tokens of assembled prompts by part.",
			Buckets: prometheus.ExponentialBuckets(64, 2, 15),
		}, []string{"part"}),
		ContextDroppedTurns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "recall_context_dropped_turns_total", Help: "History turns left out of assembled prompts.",
		}),
		ContextCompactedToolResults: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "recall_context_compacted_tool_results_total", Help: "Tool results compacted in assembled prompts.",
		}),
		ContextEvidence: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "recall_context_evidence_total", Help: "Assembled prompts by whether the evidence message was included.",
		}, []string{"evidence"}),
	}
	m.ExtractionJobs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "recall_extraction_jobs", Help: "River's extraction jobs by state, as last counted.",
	}, []string{"state"})
	for _, st := range JobStates {
		m.ExtractionJobs.WithLabelValues(st)
	}
	m.ModelCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "recall_model_calls_total", Help: "Calls of the model lane by outcome.",
	}, []string{"outcome"})
	m.ModelTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "recall_model_tokens_total", Help: "Tokens of the model lane's calls, as the endpoint reports them, by direction (in, out).",
	}, []string{"direction"})
	m.ModelCallSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "recall_model_call_duration_seconds", Help: "Latency of the model lane's calls.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120},
	})
	m.ModelNotes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "recall_model_notes_total", Help: "Notes of the model lane's answers by result (written, dropped).",
	}, []string{"result"})
	reg.MustRegister(m.Events, m.IngestSeconds, m.Extractions, m.ExtractionSeconds, m.SummarisedMessages,
		m.StateLagSeconds, m.HTTPRequests, m.HTTPSeconds, m.Waiters, m.MaxWaiters,
		m.ContextRequests, m.ContextTokens, m.ContextDroppedTurns, m.ContextCompactedToolResults, m.ContextEvidence,
		m.ExtractionJobs, m.ModelCalls, m.ModelTokens, m.ModelCallSeconds, m.ModelNotes)
	return m
}
