package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/evidence"
)

// postContext answers POST …/context: it assembles the bounded prompt of
// the next model call from the checkpoint in the body and the
// conversation's evidence (waiting for min_cursor as GET …/evidence does).
// It changes nothing that is stored.
func (h *Handler) postContext(w http.ResponseWriter, r *http.Request) error {
	userID, conversationID, err := h.conversation(r)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, assemble.MaxRequestBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return newError(http.StatusBadRequest, CodeTooLarge,
				"the body is over "+strconv.Itoa(assemble.MaxRequestBytes>>20)+" MiB")
		}
		if r.Context().Err() != nil {
			return r.Context().Err() // the client went
		}
		return newError(http.StatusBadRequest, CodeInvalidBody, "cannot read the request body")
	}
	body, err := assemble.DecodeBody(data)
	if err != nil {
		h.countContext(r, "invalid", nil, false)
		return err
	}
	req := &body.Request
	if body.FetchEvidence {
		q := evidenceQuery{minCursor: body.MinCursor}
		if body.Wait != "" {
			if q.wait, err = h.parseWait(body.Wait); err != nil {
				return err
			}
		}
		rec, err := h.read(r.Context(), userID, conversationID, q)
		if err != nil {
			return err
		}
		msg, err := rec.Message()
		if err != nil {
			return err
		}
		req.Evidence = &assemble.Evidence{Message: msg, Version: rec.Version, Cursor: rec.Cursor, Lagging: rec.Cursor < q.minCursor}
		if cs, ok := h.src.(complementSource); ok && rec.View != nil {
			ctx := r.Context()
			req.Complement = func(request string, before, maxTokens int) (*evidence.EvidenceMessage, error) {
				rec, err := cs.SearchBefore(ctx, userID, conversationID, request, before)
				if err != nil {
					return nil, err
				}
				st, err := rec.State()
				if err != nil {
					return nil, err
				}
				return evidence.RenderWithin(&st, maxTokens), nil
			}
		}
	}
	res, err := assemble.Build(req)
	if err != nil {
		outcome := "invalid"
		if e, ok := errors.AsType[*assemble.Error](err); ok && e.Unprocessable() {
			outcome = e.Code
		}
		h.countContext(r, outcome, nil, false)
		return err
	}
	h.countContext(r, "assembled", res, req.Evidence != nil && req.Evidence.Message != nil)

	bp := bufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			bufPool.Put(bp)
		}
	}()
	b := res.AppendJSON((*bp)[:0])
	*bp = b
	writeJSON(w, http.StatusOK, b)
	return nil
}

// complementSource is a Source that chooses a view among the entries of
// older messages only (store.Store.SearchBefore): the context endpoint's
// evidence then complements the history it keeps instead of repeating it.
type complementSource interface {
	SearchBefore(ctx context.Context, userID, conversationID, query string, before int) (evidence.Record, error)
}

// countContext counts and logs one assembly: its outcome, estimates,
// dropped turns and compactions, and whether the evidence message there was
// (hadEvidence) went in; never ids or message text.
func (h *Handler) countContext(r *http.Request, outcome string, res *assemble.Result, hadEvidence bool) {
	h.metrics.ContextRequests.WithLabelValues(outcome).Inc()
	if res == nil {
		h.logger.InfoContext(r.Context(), "api: context not assembled", slog.String("outcome", outcome))
		return
	}
	t := &res.Tokens
	for _, p := range []struct {
		part   string
		tokens int
	}{{"system", t.System}, {"tools", t.Tools}, {"evidence", t.Evidence}, {"history", t.History}, {"current", t.Current}, {"total", t.Total}} {
		h.metrics.ContextTokens.WithLabelValues(p.part).Observe(float64(p.tokens))
	}
	h.metrics.ContextDroppedTurns.Add(float64(res.DroppedTurns))
	h.metrics.ContextCompactedToolResults.Add(float64(res.CompactedToolResults))
	evidence := "none"
	switch {
	case res.Evidence.Included:
		evidence = "included"
	case hadEvidence:
		evidence = "left_out"
	}
	h.metrics.ContextEvidence.WithLabelValues(evidence).Inc()
	h.logger.InfoContext(r.Context(), "api: context assembled",
		slog.Int("tokens_system", t.System), slog.Int("tokens_tools", t.Tools), slog.Int("tokens_evidence", t.Evidence),
		slog.Int("tokens_history", t.History), slog.Int("tokens_current", t.Current), slog.Int("tokens_total", t.Total),
		slog.Int("limit", res.Limit), slog.Int("messages", len(res.Messages)), slog.Int("dropped_turns", res.DroppedTurns),
		slog.Int("compacted_tool_results", res.CompactedToolResults), slog.String("evidence", evidence))
}
