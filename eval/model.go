package eval

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/modelnote"
)

// NoteSource writes the model lane's notes of messages [lo, hi) of a
// history, as the lane's calls would.
type NoteSource interface {
	Notes(history []checkpoint.Message, lo, hi int) ([]evidence.Note, error)
}

// Model answers the model lane's prompts (modelclient.Client).
type Model interface {
	Complete(ctx context.Context, p modelnote.Prompt, schema json.RawMessage) (modelnote.Completion, error)
}

// ModelNotes is the NoteSource of `recall eval --extractor model`: it asks
// a real model, as the service's notes jobs do (the same transcripts, pair
// window, bound and validation), one call after the other, and counts the
// calls. A call that fails is tried again up to MaxAttempts times (after a
// 429's Retry-After, at most a minute), then its messages get no note, as
// in the service.
type ModelNotes struct {
	// Ctx bounds the calls (Run takes no context).
	Ctx    context.Context
	Model  Model
	Config modelnote.Config
	// MaxAttempts bounds the attempts of a call. Defaults to 3.
	MaxAttempts int
	// Stats counts the calls.
	Stats ModelStats
}

// ModelStats counts what ModelNotes's calls did.
type ModelStats struct {
	Calls     int `json:"calls"`
	Failed    int `json:"failed"`
	Invalid   int `json:"invalid_answers"`
	Notes     int `json:"notes"`
	Dropped   int `json:"dropped_notes"`
	TokensIn  int `json:"tokens_in"`
	TokensOut int `json:"tokens_out"`
}

// retryable is what ModelNotes reads of a failed call's error
// (modelclient.Error has it).
type retryable interface {
	Transient() bool
	RetryAfter() time.Duration
}

// Notes implements NoteSource.
func (m *ModelNotes) Notes(history []checkpoint.Message, lo, hi int) ([]evidence.Note, error) {
	held := modelnote.FromHistory(history[:hi], 0)
	var out []evidence.Note
	for lo < hi {
		call := modelnote.Plan(held, lo, hi, &m.Config)
		lo = call.End
		if len(call.New) == 0 {
			continue
		}
		comp, err := m.complete(&call)
		if err != nil {
			if m.Ctx.Err() != nil {
				return nil, err
			}
			m.Stats.Failed++
			continue
		}
		m.Stats.TokensIn += comp.TokensIn
		m.Stats.TokensOut += comp.TokensOut
		a, err := modelnote.ParseAnswer(comp.Content, &call, &m.Config)
		if err != nil {
			m.Stats.Invalid++
			continue
		}
		m.Stats.Notes += len(a.Notes)
		m.Stats.Dropped += a.Dropped()
		out = append(out, a.Notes...)
	}
	return out, nil
}

// complete makes one call, tried again while it fails transiently.
func (m *ModelNotes) complete(call *modelnote.Call) (modelnote.Completion, error) {
	attempts := max(m.MaxAttempts, 1)
	if m.MaxAttempts == 0 {
		attempts = 3
	}
	wait := time.Second
	for attempt := 1; ; attempt++ {
		m.Stats.Calls++
		comp, err := m.Model.Complete(m.Ctx, call.Prompt(&m.Config), call.Schema())
		var r retryable
		if err == nil || attempt >= attempts || !errors.As(err, &r) || !r.Transient() {
			return comp, err
		}
		d := wait
		if after := r.RetryAfter(); after > 0 {
			d = min(after, time.Minute)
		}
		select {
		case <-time.After(d):
		case <-m.Ctx.Done():
			return comp, m.Ctx.Err()
		}
		wait *= 2
	}
}
