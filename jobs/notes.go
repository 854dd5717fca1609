package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/metrics"
	"github.com/recallhq/recall/modelnote"
	"github.com/recallhq/recall/store"
)

// The model lane (RECALL_EXTRACTOR=model) adds model-written notes beside
// the profile's verbatim entries. Extraction never waits for it: each
// extraction enqueues a notes job for its conversation in its own
// transaction (store.Notes), and NotesWorker, on a queue of its own, reads
// the range the lane has not had yet, calls the model outside any lock and
// transaction, and writes the notes and completes the job in one
// transaction, only if the conversation is unchanged in what matters
// (store.WriteNotesTx).

// NoteModel answers the model lane's prompts: an OpenAI-compatible
// endpoint (modelclient.Client).
type NoteModel interface {
	Complete(ctx context.Context, p modelnote.Prompt, schema json.RawMessage) (modelnote.Completion, error)
}

// callFailure is what NotesWorker reads of a failed call's error
// (modelclient.Error has it): whether to try again, after how long, and a
// metric label. An error without it is taken for a transient failure.
type callFailure interface {
	error
	Transient() bool
	RetryAfter() time.Duration
	Outcome() string
}

// The defaults of ModelLane.
const (
	// DefaultModelConcurrency bounds the calls in flight per process.
	DefaultModelConcurrency = 4
	// DefaultModelTimeout bounds one call.
	DefaultModelTimeout = 60 * time.Second
	// DefaultModelBackoff is the wait before a failed call's first retry.
	DefaultModelBackoff = 2 * time.Second
	// MaxModelSnoozes bounds how often a notes job waits out a 429's
	// Retry-After without counting an attempt; after that a 429 counts as
	// a failed attempt.
	MaxModelSnoozes = 10
	// notesWriteTimeout is what a notes job's timeout allows beyond the
	// call: its reads and its write.
	notesWriteTimeout = 30 * time.Second
	// DefaultModelQuiet is how long a conversation must have been still
	// before its call is made, and DefaultModelMaxQuietWait how long a call
	// waits for that at most: the events of a burst arrive within
	// milliseconds of each other, and one call then covers them all,
	// however many extractions they took.
	DefaultModelQuiet        = 250 * time.Millisecond
	DefaultModelMaxQuietWait = 2 * time.Second
	// maxStaleSnoozes bounds how often a job whose write found the
	// conversation changed reads again at once.
	maxStaleSnoozes = 3
	// notesPollInterval is the notes queue's FetchPollInterval.
	notesPollInterval = time.Second
)

// ModelLane configures the model lane's jobs.
type ModelLane struct {
	// Model answers the prompts. Required.
	Model NoteModel
	// ContextTurns is how many user turns before a call's new messages
	// ride along as context (RECALL_MODEL_CONTEXT_TURNS), at most
	// modelnote.MaxContextTurns. Defaults to modelnote.DefaultContextTurns
	// (2); negative sends none.
	ContextTurns int
	// CaptureAssistant lets assistant messages into the transcript, as
	// context and as sources (RECALL_MODEL_CAPTURE_ASSISTANT). Defaults to
	// false: user messages only.
	CaptureAssistant bool
	// Timeout bounds one call (RECALL_MODEL_TIMEOUT); give Model the same.
	// A notes job may run for it and notesWriteTimeout more. Defaults to
	// DefaultModelTimeout (60s).
	Timeout time.Duration
	// Concurrency bounds the calls in flight in this process
	// (RECALL_MODEL_CONCURRENCY): the workers of the notes queue. Defaults
	// to DefaultModelConcurrency (4).
	Concurrency int
	// MaxTranscriptBytes bounds a call's transcript (modelnote.Config's
	// MaxBytes). Defaults to modelnote.DefaultMaxBytes (16 KiB).
	MaxTranscriptBytes int
	// Backoff is the wait before a failed call's first retry; each retry
	// waits twice the one before, at most a minute. Defaults to
	// DefaultModelBackoff (2s).
	Backoff time.Duration
	// Quiet is how long a conversation must have been still (no event,
	// no extraction pending) before its call is made, so that a burst of
	// events makes one call; MaxQuietWait bounds that wait, for a
	// conversation that never goes still. Default to DefaultModelQuiet
	// (250ms) and DefaultModelMaxQuietWait (2s).
	Quiet, MaxQuietWait time.Duration
}

// withDefaults returns a copy of l with every zero field set to its
// default.
func (l *ModelLane) withDefaults() ModelLane {
	out := *l
	out.ContextTurns = cmp.Or(out.ContextTurns, modelnote.DefaultContextTurns)
	out.Timeout = cmp.Or(out.Timeout, DefaultModelTimeout)
	out.Concurrency = cmp.Or(out.Concurrency, DefaultModelConcurrency)
	out.MaxTranscriptBytes = cmp.Or(out.MaxTranscriptBytes, modelnote.DefaultMaxBytes)
	out.Backoff = cmp.Or(out.Backoff, DefaultModelBackoff)
	out.Quiet = cmp.Or(out.Quiet, DefaultModelQuiet)
	out.MaxQuietWait = cmp.Or(out.MaxQuietWait, DefaultModelMaxQuietWait)
	return out
}

// validate reports the first field of a defaulted ModelLane that cannot
// work, saying how to fix it.
func (l *ModelLane) validate() error {
	switch {
	case l.Model == nil:
		return errors.New("jobs: ModelLane.Model is required: give it the endpoint's client (modelclient.New)")
	case l.ContextTurns > modelnote.MaxContextTurns:
		return fmt.Errorf("jobs: ModelLane.ContextTurns is %d: it must be at most %d", l.ContextTurns, modelnote.MaxContextTurns)
	case l.Timeout < 0:
		return fmt.Errorf("jobs: ModelLane.Timeout is %s: it must be positive, or 0 for the default %s", l.Timeout, DefaultModelTimeout)
	case l.Concurrency < 0:
		return fmt.Errorf("jobs: ModelLane.Concurrency is %d: it must be positive, or 0 for the default %d", l.Concurrency, DefaultModelConcurrency)
	case l.Backoff < 0:
		return fmt.Errorf("jobs: ModelLane.Backoff is %s: it must be positive, or 0 for the default %s", l.Backoff, DefaultModelBackoff)
	case l.Quiet < 0:
		return fmt.Errorf("jobs: ModelLane.Quiet is %s: it must be positive, or 0 for the default %s", l.Quiet, DefaultModelQuiet)
	case l.MaxQuietWait < 0:
		return fmt.Errorf("jobs: ModelLane.MaxQuietWait is %s: it must be positive, or 0 for the default %s", l.MaxQuietWait, DefaultModelMaxQuietWait)
	case l.MaxTranscriptBytes < 0:
		return fmt.Errorf("jobs: ModelLane.MaxTranscriptBytes is %d: it must be positive, or 0 for the default %d", l.MaxTranscriptBytes, modelnote.DefaultMaxBytes)
	}
	return nil
}

// noteConfig returns what the lane's calls send.
func (l *ModelLane) noteConfig() modelnote.Config {
	return modelnote.Config{ContextTurns: max(l.ContextTurns, 0), CaptureAssistant: l.CaptureAssistant, MaxBytes: l.MaxTranscriptBytes}
}

// SpanModelNotes names a notes job's span: its call's outcome, notes and
// tokens; never text.
const SpanModelNotes = "recall.model_notes"

// NotesWorker runs the model lane's notes jobs.
type NotesWorker struct {
	river.WorkerDefaults[store.NotesArgs]
	pool    *pgxpool.Pool
	store   *store.Store
	model   NoteModel
	cfg     modelnote.Config
	timeout time.Duration
	backoff time.Duration
	quiet   time.Duration // ModelLane.Quiet
	maxWait time.Duration // ModelLane.MaxQuietWait
	metrics *metrics.Metrics
	logger  *slog.Logger
	tracer  trace.Tracer
}

// Timeout implements river.Worker: the call's timeout and the job's reads
// and write.
func (w *NotesWorker) Timeout(*river.Job[store.NotesArgs]) time.Duration {
	return w.timeout + notesWriteTimeout
}

// NextRetry implements river.Worker: the lane's back-off, doubling from
// its first wait up to a minute.
func (w *NotesWorker) NextRetry(job *river.Job[store.NotesArgs]) time.Time {
	d := w.backoff << min(max(job.Attempt-1, 0), 16)
	return time.Now().Add(min(d, time.Minute))
}

// errStale rolls back a write that found the conversation changed.
var errStale = errors.New("the conversation changed during the call")

// Work takes notes of the range of the conversation the lane has not had
// yet: it reads the range, calls the model with no lock or transaction
// held, and writes the notes and completes the job in one transaction if
// the conversation is unchanged in what matters (not deleted, the lane
// still where the call began); otherwise it reads again. A call that fails
// is tried again with back-off (after a 429's Retry-After); at the last
// attempt, or for a failure that would repeat, the range is given up: the
// conversation keeps the profile's evidence and its lane goes on.
func (w *NotesWorker) Work(ctx context.Context, job *river.Job[store.NotesArgs]) error {
	ctx, span := w.tracer.Start(ctx, SpanModelNotes)
	defer span.End()
	key := job.Args
	r, err := w.readQuiet(ctx, key, job.CreatedAt)
	if err != nil {
		span.SetStatus(codes.Error, "read failed")
		return err
	}
	if r.Deleted {
		span.SetAttributes(attribute.String("recall.outcome", checkpoint.Deleted.String()))
		return nil
	}
	call := modelnote.Plan(r.Messages, r.Lo, r.Hi, &w.cfg)
	write := &store.NotesWrite{UserID: key.UserID, ConversationID: key.ConversationID, Lo: r.Lo, End: call.End,
		HoldFrom: modelnote.WindowStart(r.Messages, call.End, w.cfg.ContextTurns)}
	if call.End > r.Lo {
		write.Chain = r.Chain(call.End)
	}
	if len(call.New) > 0 {
		rec, notes, retry := w.call(ctx, job, &r, &call)
		span.SetAttributes(attribute.String("recall.model_outcome", rec.Outcome), attribute.Int("recall.notes", rec.Notes),
			attribute.Int("recall.tokens_in", rec.TokensIn), attribute.Int("recall.tokens_out", rec.TokensOut))
		if retry != nil {
			return retry
		}
		write.Notes, write.Call = notes, rec
	}
	var res store.NotesResult
	err = pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var err error
		if res, err = w.store.WriteNotesTx(ctx, tx, write); err != nil {
			return err
		}
		if res.Outcome == checkpoint.Stale {
			return errStale
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if errors.Is(err, errStale) {
		span.SetAttributes(attribute.String("recall.outcome", checkpoint.Stale.String()))
		if snoozes(job) < maxStaleSnoozes {
			return river.JobSnooze(0) // read again, without counting an attempt
		}
		return err // changing under every call: an attempt, and back-off
	}
	if err != nil {
		span.SetStatus(codes.Error, "write failed")
		w.logger.WarnContext(ctx, "writing model notes failed; River retries the job", slog.Int64("job_id", job.ID), slog.Int("attempt", job.Attempt), slog.String("error", err.Error()))
		return err
	}
	span.SetAttributes(attribute.String("recall.outcome", res.Outcome.String()))
	if w.metrics != nil && res.Outcome == checkpoint.Applied {
		w.metrics.ModelNotes.WithLabelValues("written").Add(float64(len(write.Notes)))
	}
	return nil
}

// readQuiet reads the range of the conversation's next call once the
// conversation has been still for w.quiet (or w.maxWait has passed), so
// that a burst of events makes one call. A job enqueued (by the
// extraction that changed the conversation last, as a rule) less than
// w.quiet ago waits for the rest of it before it reads at all.
func (w *NotesWorker) readQuiet(ctx context.Context, key store.NotesArgs, enqueued time.Time) (store.NotesRange, error) {
	deadline := time.Now().Add(w.maxWait)
	// (A little more: the conversation's row was written at the same
	// moment, and should read as still by then.)
	if wait := w.quiet + 20*time.Millisecond - time.Since(enqueued); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return store.NotesRange{}, ctx.Err()
		}
	}
	for {
		r, err := w.store.ReadNotesRange(ctx, key.UserID, key.ConversationID, 4*w.cfg.MaxBytes)
		if err != nil || r.Deleted || (!r.Pending && r.Quiet >= w.quiet) || time.Now().After(deadline) {
			return r, err
		}
		wait := max(w.quiet-r.Quiet, 20*time.Millisecond)
		select {
		case <-time.After(min(wait, time.Until(deadline))):
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
}

// call makes the model call of c and returns its record and notes; retry
// is set when the job must try again later (nothing is written then).
func (w *NotesWorker) call(ctx context.Context, job *river.Job[store.NotesArgs], r *store.NotesRange, c *modelnote.Call) (rec *store.ModelCall, notes []evidence.Note, retry error) {
	rec = &store.ModelCall{Lo: r.Lo, Hi: c.End, Attempt: job.Attempt}
	start := time.Now()
	comp, err := w.model.Complete(ctx, c.Prompt(&w.cfg), c.Schema())
	rec.Seconds = time.Since(start).Seconds()
	if w.metrics != nil {
		w.metrics.ModelCallSeconds.Observe(rec.Seconds)
	}
	if err != nil {
		if ctx.Err() != nil {
			// Shutdown (or the job's own timeout): the job runs again as
			// soon as a client starts, without counting an attempt.
			rec.Outcome = "cancelled"
			if snoozes(job) < maxStaleSnoozes {
				return rec, nil, river.JobSnooze(0)
			}
			return rec, nil, fmt.Errorf("model call: %w", ctx.Err())
		}
		transient, after := true, time.Duration(0)
		rec.Outcome = "transport_error"
		var f callFailure
		if errors.As(err, &f) {
			transient, after, rec.Outcome = f.Transient(), f.RetryAfter(), f.Outcome()
		}
		w.count(rec)
		if transient && job.Attempt < job.MaxAttempts {
			if rerr := w.store.RecordModelCall(ctx, job.Args.UserID, job.Args.ConversationID, rec); rerr != nil {
				w.logger.WarnContext(ctx, "recording a failed model call failed", slog.Int64("job_id", job.ID), slog.String("error", rerr.Error()))
			}
			if after > 0 && snoozes(job) < MaxModelSnoozes {
				return rec, nil, river.JobSnooze(after)
			}
			return rec, nil, fmt.Errorf("model call: %w", err)
		}
		w.logger.WarnContext(ctx, "model call failed for good; the messages keep the profile's evidence",
			slog.Int64("job_id", job.ID), slog.Int("attempt", job.Attempt), slog.String("outcome", rec.Outcome), slog.String("error", err.Error()))
		return rec, nil, nil
	}
	rec.TokensIn, rec.TokensOut = comp.TokensIn, comp.TokensOut
	if w.metrics != nil {
		w.metrics.ModelTokens.WithLabelValues("in").Add(float64(comp.TokensIn))
		w.metrics.ModelTokens.WithLabelValues("out").Add(float64(comp.TokensOut))
	}
	a, err := modelnote.ParseAnswer(comp.Content, c, &w.cfg)
	if err != nil {
		// Not JSON notes: a failed call, given up (a model that answered so
		// would answer so again).
		rec.Outcome = "invalid_answer"
		w.count(rec)
		w.logger.WarnContext(ctx, "the model's answer is not JSON notes; the messages keep the profile's evidence",
			slog.Int64("job_id", job.ID), slog.Int("attempt", job.Attempt))
		return rec, nil, nil
	}
	rec.Outcome, rec.Notes, rec.Dropped = store.CallOK, len(a.Notes), a.Dropped()
	w.count(rec)
	if w.metrics != nil && a.Dropped() > 0 {
		w.metrics.ModelNotes.WithLabelValues("dropped").Add(float64(a.Dropped()))
	}
	return rec, a.Notes, nil
}

// count counts a call by its outcome.
func (w *NotesWorker) count(rec *store.ModelCall) {
	if w.metrics != nil {
		w.metrics.ModelCalls.WithLabelValues(rec.Outcome).Inc()
	}
}

// snoozes returns how often River snoozed the job.
func snoozes(job *river.Job[store.NotesArgs]) int {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(job.Metadata, &m)
	return m.Snoozes
}
