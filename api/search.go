package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// MaxQueryBytes bounds a search query's UTF-8 bytes.
const MaxQueryBytes = 64 << 10

// maxSearchBody bounds a search request's body: room for the longest query
// with every character escaped.
const maxSearchBody = 8 * MaxQueryBytes

// searchRequest is the body of POST …/evidence/search.
type searchRequest struct {
	Query     *string `json:"query"`
	MaxTokens *int    `json:"max_tokens"`
}

// searchEvidence answers POST …/evidence/search: the evidence response with
// the focus view chosen for the body's query instead of the current request.
// The query is never logged or quoted back.
func (h *Handler) searchEvidence(w http.ResponseWriter, r *http.Request) error {
	userID, conversationID, err := h.conversation(r)
	if err != nil {
		return err
	}
	minVersion, err := parseMinVersion(r.URL.Query())
	if err != nil {
		return err
	}
	req, err := decodeSearch(http.MaxBytesReader(w, r.Body, maxSearchBody))
	if err != nil {
		return err
	}
	maxTokens := 0
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	rec, err := h.waiters.searchAtLeast(r.Context(), userID, conversationID, *req.Query, minVersion)
	if err != nil {
		return err
	}
	return writeRecord(w, rec, userID, conversationID, maxTokens, false)
}

// decodeSearch reads and checks a search body.
func decodeSearch(body io.Reader) (searchRequest, error) {
	var req searchRequest
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.More() {
		err = errors.New("data after the object")
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return req, errQueryTooLong
	case err != nil:
		return req, newError(http.StatusBadRequest, CodeInvalidBody, `the body must be a JSON object {"query": "…", "max_tokens": N} (max_tokens optional)`)
	case req.Query == nil:
		return req, errEmptyQuery
	}
	if err := checkQuery(*req.Query); err != nil {
		return req, err
	}
	if req.MaxTokens != nil && *req.MaxTokens <= 0 {
		return req, errInvalidMaxTokens
	}
	return req, nil
}

// The search query's errors.
var (
	errEmptyQuery   = newError(http.StatusBadRequest, CodeEmptyQuery, "query must be a non-empty string")
	errQueryTooLong = newError(http.StatusBadRequest, CodeQueryTooLong, "query may be at most 65536 bytes")
)

// checkQuery answers 400 for an empty query or one over MaxQueryBytes.
func checkQuery(query string) error {
	switch {
	case query == "":
		return errEmptyQuery
	case len(query) > MaxQueryBytes:
		return errQueryTooLong
	}
	return nil
}
