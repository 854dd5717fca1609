// Package modelclient is the model lane's HTTP adapter: it sends a
// modelnote.Prompt to an OpenAI-compatible /v1/chat/completions endpoint (a
// hosted API, vLLM, llama.cpp's server, Ollama) and returns the answer's
// text and token usage. It knows HTTP and the chat-completions wire format
// and nothing of recall's storage; the jobs package runs its calls and
// modelnote reads the answers.
//
// Structured output is asked for as the endpoint allows: a JSON schema in
// response_format first; where the endpoint rejects that (400 or 422), a
// json_object response_format; where it rejects that too, no
// response_format (the system message asks for JSON anyway). The first form
// an endpoint accepts is remembered for the client's later calls. The
// answer is validated by modelnote.ParseAnswer in every case.
//
// Only the standard library's net/http is used. The API key is sent as a
// bearer token and never appears in an error, a log line or a String;
// errors never quote a prompt or an answer.
package modelclient

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/modelnote"
)

// The defaults of Config.
const (
	// DefaultTimeout bounds one call.
	DefaultTimeout = 60 * time.Second
	// MaxResponseBytes bounds the response body read.
	MaxResponseBytes = 1 << 20
	// MaxRetryAfter bounds the Retry-After honoured.
	MaxRetryAfter = 10 * time.Minute
)

// Config configures a Client.
type Config struct {
	// URL is the endpoint's OpenAI-compatible base URL, such as
	// https://api.openai.com/v1, http://localhost:8000/v1 (vLLM),
	// http://localhost:8080/v1 (llama.cpp's server) or
	// http://localhost:11434/v1 (Ollama); /chat/completions is added (a URL
	// that ends with it already is used as it is). Required.
	URL string
	// Model is the model's name, as the endpoint knows it. Required.
	Model string
	// APIKey, when set, is sent as a bearer token. A secret: never printed.
	// Defaults to none.
	APIKey string
	// Timeout bounds one call, the answer read in full included. Defaults
	// to DefaultTimeout (60s).
	Timeout time.Duration
	// HTTPClient sends the requests. Defaults to a client of its own, which
	// keeps up to 64 connections to the endpoint alive, with no overall
	// timeout (Timeout bounds each call).
	HTTPClient *http.Client
}

// String describes c without its key.
func (c Config) String() string {
	key := "none"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("model %q at %s (API key %s, timeout %s)", c.Model, redact.ConnString(c.URL), key, c.Timeout)
}

// Client calls one endpoint. It is safe for concurrent use.
type Client struct {
	endpoint string // the chat-completions URL
	shown    string // endpoint with its secrets masked, for errors
	model    string
	key      string
	timeout  time.Duration
	http     *http.Client
	// format is the response_format the endpoint last accepted.
	format atomic.Int32
}

// New returns a client for the endpoint cfg names.
func New(cfg *Config) (*Client, error) {
	if cfg == nil || cfg.URL == "" {
		return nil, errors.New("modelclient: the endpoint's URL is required: set RECALL_MODEL_URL to its OpenAI-compatible base URL, such as http://localhost:11434/v1")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("modelclient: the endpoint's URL %s is not an http(s) URL: set RECALL_MODEL_URL to the endpoint's OpenAI-compatible base URL, such as http://localhost:8000/v1",
			redact.ConnString(cfg.URL))
	}
	if cfg.Model == "" {
		return nil, errors.New("modelclient: the model's name is required: set RECALL_MODEL_NAME to the name the endpoint knows it by")
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("modelclient: the timeout is %s: it must be positive, or 0 for the default %s", cfg.Timeout, DefaultTimeout)
	}
	endpoint := strings.TrimRight(cfg.URL, "/")
	if !strings.HasSuffix(endpoint, "/chat/completions") {
		endpoint += "/chat/completions"
	}
	c := &Client{endpoint: endpoint, shown: redact.ConnString(endpoint), model: cfg.Model, key: cfg.APIKey,
		timeout: cmp.Or(cfg.Timeout, DefaultTimeout), http: cfg.HTTPClient}
	if c.http == nil {
		// Calls run several at once to one host: keep as many connections
		// alive (the default transport keeps two).
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		c.http = &http.Client{Transport: t}
	}
	return c, nil
}

// Endpoint returns the chat-completions URL the client posts to, with its
// secrets masked.
func (c *Client) Endpoint() string { return c.shown }

// Format is how a request asks for structured output.
type Format int32

// The formats, in the order they are tried.
const (
	// FormatJSONSchema: response_format {"type":"json_schema",…} with the
	// answer's schema.
	FormatJSONSchema Format = iota
	// FormatJSONObject: response_format {"type":"json_object"}.
	FormatJSONObject
	// FormatPlain: no response_format; the system message asks for JSON.
	FormatPlain
)

func (f Format) String() string {
	switch f {
	case FormatJSONSchema:
		return "json_schema"
	case FormatJSONObject:
		return "json_object"
	default:
		return "plain"
	}
}

// Kind is how a call failed.
type Kind int

// The kinds of failure.
const (
	// KindTimeout: the call took longer than the timeout.
	KindTimeout Kind = iota
	// KindTransport: the exchange failed (a refused connection, a reset).
	KindTransport
	// KindStatus: the endpoint answered a status other than 2xx.
	KindStatus
	// KindBadResponse: a 2xx answer that is not a chat completion with
	// text.
	KindBadResponse
)

// Error is a failed call. It never quotes a prompt, an answer or the key.
type Error struct {
	Kind Kind
	// Status is the endpoint's status (KindStatus).
	Status int
	// Retry is the delay the endpoint asked for (Retry-After, at most
	// MaxRetryAfter), 0 when none.
	Retry time.Duration
	// Endpoint is the URL called, its secrets masked.
	Endpoint string
	err      error
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindTimeout:
		return "the model endpoint at " + e.Endpoint + " did not answer in time"
	case KindStatus:
		s := "the model endpoint at " + e.Endpoint + " answered " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status)
		if e.Retry > 0 {
			s += ", retry after " + e.Retry.String()
		}
		return s
	case KindBadResponse:
		return "the model endpoint at " + e.Endpoint + " answered something other than a chat completion with text"
	default:
		return "call the model endpoint at " + e.Endpoint + ": " + e.err.Error()
	}
}

func (e *Error) Unwrap() error { return e.err }

// Transient reports whether the failure may go away when the call is made
// again: a timeout, a transport error, 408, 429 or a 5xx. Other failures
// (another 4xx, a bad response) are the same the next time.
func (e *Error) Transient() bool {
	switch e.Kind {
	case KindStatus:
		return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
	case KindBadResponse:
		return false
	}
	return true
}

// RetryAfter returns the delay the endpoint asked for, 0 when none.
func (e *Error) RetryAfter() time.Duration { return e.Retry }

// Outcome names the failure for a metric label: timeout, transport_error,
// rate_limited (429), server_error (5xx), client_error (another status) or
// bad_response.
func (e *Error) Outcome() string {
	switch e.Kind {
	case KindTimeout:
		return "timeout"
	case KindTransport:
		return "transport_error"
	case KindBadResponse:
		return "bad_response"
	}
	switch {
	case e.Status == http.StatusTooManyRequests:
		return "rate_limited"
	case e.Status >= 500:
		return "server_error"
	default:
		return "client_error"
	}
}

// Format returns the form of structured output the client asks for first:
// the last one the endpoint accepted.
func (c *Client) Format() Format { return Format(c.format.Load()) }

// Complete sends p, asking for an answer of the JSON schema schema, and
// returns the answer. An endpoint that rejects the schema's form is asked
// again in the next form (see the package comment) within the same call.
// A failed call's error is an *Error.
func (c *Client) Complete(ctx context.Context, p modelnote.Prompt, schema json.RawMessage) (modelnote.Completion, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := c.Format()
	var err *Error
	for f := start; f <= FormatPlain; f++ {
		var comp modelnote.Completion
		comp, err = c.post(ctx, p, schema, f)
		if err != nil && err.Kind == KindStatus && (err.Status == http.StatusBadRequest || err.Status == http.StatusUnprocessableEntity) && f < FormatPlain {
			continue // the endpoint may not take this response_format
		}
		if err != nil {
			return comp, err
		}
		if f != start {
			c.format.Store(int32(f))
		}
		return comp, nil
	}
	return modelnote.Completion{}, err
}

// request is the chat-completions request body.
type request struct {
	Model          string          `json:"model"`
	Messages       []message       `json:"messages"`
	Temperature    float64         `json:"temperature"`
	Stream         bool            `json:"stream"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

// Body returns the request body Complete sends for p in format f.
func (c *Client) Body(p modelnote.Prompt, schema json.RawMessage, f Format) ([]byte, error) {
	r := request{Model: c.model, Messages: []message{{"system", p.System}, {"user", p.User}}}
	switch f {
	case FormatJSONSchema:
		r.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: modelnote.SchemaName, Strict: true, Schema: schema}}
	case FormatJSONObject:
		r.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the transcript's tags as they are
	if err := enc.Encode(&r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// response is what the client reads of a chat completion.
type response struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func (c *Client) post(ctx context.Context, p modelnote.Prompt, schema json.RawMessage, f Format) (modelnote.Completion, *Error) {
	fail := func(kind Kind, err error) (modelnote.Completion, *Error) {
		if ctx.Err() == context.DeadlineExceeded {
			kind = KindTimeout
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // net/http's *url.Error quotes the whole URL
		}
		return modelnote.Completion{}, &Error{Kind: kind, Endpoint: c.shown, err: err}
	}
	body, err := c.Body(p, schema, f)
	if err != nil {
		return fail(KindTransport, fmt.Errorf("encode the request: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return fail(KindTransport, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fail(KindTransport, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return fail(KindTransport, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return modelnote.Completion{}, &Error{Kind: KindStatus, Status: resp.StatusCode, Endpoint: c.shown,
			Retry: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	var r response
	if len(raw) > MaxResponseBytes || json.Unmarshal(raw, &r) != nil || len(r.Choices) == 0 || r.Choices[0].Message.Content == nil {
		return modelnote.Completion{}, &Error{Kind: KindBadResponse, Endpoint: c.shown}
	}
	return modelnote.Completion{Content: *r.Choices[0].Message.Content, TokensIn: r.Usage.PromptTokens, TokensOut: r.Usage.CompletionTokens}, nil
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), at most
// MaxRetryAfter; 0 when there is none.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		d = time.Duration(min(n, int64(MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return max(min(d, MaxRetryAfter), 0)
}
