package cli

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/redact"
	"github.com/recallhq/recall/jobs"
	"github.com/recallhq/recall/modelclient"
	"github.com/recallhq/recall/modelnote"
)

// The extractors RECALL_EXTRACTOR names.
const (
	extractorLexical = "lexical"
	extractorModel   = "model"
)

// modelSettings are the extractor's settings: RECALL_EXTRACTOR and the
// model lane's RECALL_MODEL_* (docs/evidence.md, The model lane).
type modelSettings struct {
	// Extractor is lexical (the profile's own rules) or model (the lane
	// added). Defaults to lexical.
	Extractor string
	// URL, Name and APIKey name the OpenAI-compatible endpoint. APIKey is
	// a secret: read from RECALL_MODEL_API_KEY only, never from a flag
	// value (ps shows those), never printed.
	URL, Name, APIKey string
	// ContextTurns is the rolling pair window, 0 (off) to 10. Defaults to
	// 2.
	ContextTurns int
	// CaptureAssistant lets assistant messages into the transcript.
	// Defaults to false.
	CaptureAssistant bool
	// Timeout bounds one call. Defaults to 60s.
	Timeout time.Duration
	// Concurrency bounds the calls in flight per process. Defaults to 4.
	Concurrency int
	// given keeps values that did not parse, for validate to refuse (a
	// typo must not silently keep the default).
	given map[string]string
}

// bind sets the settings from the environment and, when withFlags,
// registers their flags on fs.
func (m *modelSettings) bind(fs *flag.FlagSet, env *Env, withFlags bool) {
	m.given = map[string]string{}
	m.Extractor = strings.TrimSpace(env.Getenv("RECALL_EXTRACTOR"))
	if m.Extractor == "" {
		m.Extractor = extractorLexical
	}
	m.URL, m.Name, m.APIKey = env.Getenv("RECALL_MODEL_URL"), env.Getenv("RECALL_MODEL_NAME"), env.Getenv("RECALL_MODEL_API_KEY")
	m.ContextTurns, m.Timeout, m.Concurrency = modelnote.DefaultContextTurns, jobs.DefaultModelTimeout, jobs.DefaultModelConcurrency
	parse := func(name string, set func(string) error) {
		if v := env.Getenv(name); v != "" {
			if set(v) != nil {
				m.given[name] = v
			}
		}
	}
	parse("RECALL_MODEL_CONTEXT_TURNS", intSetter(&m.ContextTurns))
	parse("RECALL_MODEL_CAPTURE_ASSISTANT", boolSetter(&m.CaptureAssistant))
	parse("RECALL_MODEL_TIMEOUT", durationSetter(&m.Timeout))
	parse("RECALL_MODEL_CONCURRENCY", intSetter(&m.Concurrency))
	if !withFlags {
		return
	}
	fs.StringVar(&m.Extractor, "extractor", m.Extractor, "extractor: lexical (the evidence profile's own rules) or model (adds notes of an OpenAI-compatible model; needs -model-url and -model-name) (env RECALL_EXTRACTOR)")
	fs.Var(redactedFlag{p: &m.URL, redact: redact.ConnString}, "model-url",
		"OpenAI-compatible base URL of the model (…/v1: a hosted API, vLLM, llama.cpp's server, Ollama); its API key is read from env RECALL_MODEL_API_KEY only (env RECALL_MODEL_URL)")
	fs.StringVar(&m.Name, "model-name", m.Name, "the model's name at the endpoint (env RECALL_MODEL_NAME)")
	fs.IntVar(&m.ContextTurns, "model-context-turns", m.ContextTurns, fmt.Sprintf("user turns before the new messages sent to the model as context, 0 (none) to %d (env RECALL_MODEL_CONTEXT_TURNS)", modelnote.MaxContextTurns))
	fs.BoolVar(&m.CaptureAssistant, "model-capture-assistant", m.CaptureAssistant, "send the assistant's messages to the model too, as sources of notes (env RECALL_MODEL_CAPTURE_ASSISTANT)")
	fs.DurationVar(&m.Timeout, "model-timeout", m.Timeout, "deadline of one call to the model (env RECALL_MODEL_TIMEOUT)")
	fs.IntVar(&m.Concurrency, "model-concurrency", m.Concurrency, "calls to the model in flight per process (env RECALL_MODEL_CONCURRENCY)")
}

func intSetter(p *int) func(string) error {
	return func(s string) error {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err == nil {
			*p = n
		}
		return err
	}
}

func boolSetter(p *bool) func(string) error {
	return func(s string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err == nil {
			*p = b
		}
		return err
	}
}

func durationSetter(p *time.Duration) func(string) error {
	return func(s string) error {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err == nil {
			*p = d
		}
		return err
	}
}

// validate checks the settings for profile, saying how to fix a value. It
// checks the lane's settings only when the extractor is model.
func (m *modelSettings) validate(profile evidence.Profile) error {
	switch m.Extractor {
	case "", extractorLexical:
		return nil
	case extractorModel:
	default:
		return fmt.Errorf("RECALL_EXTRACTOR (-extractor) must be %s (the evidence profile's own rules) or %s (adds the notes of a model at RECALL_MODEL_URL), not %q",
			extractorLexical, extractorModel, m.Extractor)
	}
	for _, name := range []string{"RECALL_MODEL_CONTEXT_TURNS", "RECALL_MODEL_CAPTURE_ASSISTANT", "RECALL_MODEL_TIMEOUT", "RECALL_MODEL_CONCURRENCY"} {
		if v, ok := m.given[name]; ok {
			return fmt.Errorf("%s=%q does not parse: %s", name, v, modelHints[name])
		}
	}
	switch {
	case profile != evidence.ProfileFocus:
		return fmt.Errorf("RECALL_EXTRACTOR=model adds notes to the focus profile's view: set RECALL_EVIDENCE_PROFILE=focus (the seed profile keeps the seed's message byte for byte), or RECALL_EXTRACTOR=lexical")
	case m.URL == "":
		return errors.New("RECALL_EXTRACTOR=model needs RECALL_MODEL_URL (-model-url): the endpoint's OpenAI-compatible base URL, such as http://localhost:11434/v1 for Ollama")
	case m.Name == "":
		return errors.New("RECALL_EXTRACTOR=model needs RECALL_MODEL_NAME (-model-name): the model's name at the endpoint")
	case m.ContextTurns < 0 || m.ContextTurns > modelnote.MaxContextTurns:
		return fmt.Errorf("RECALL_MODEL_CONTEXT_TURNS (-model-context-turns) is %d: %s", m.ContextTurns, modelHints["RECALL_MODEL_CONTEXT_TURNS"])
	case m.Timeout <= 0:
		return fmt.Errorf("RECALL_MODEL_TIMEOUT (-model-timeout) is %s: %s", m.Timeout, modelHints["RECALL_MODEL_TIMEOUT"])
	case m.Concurrency < 1:
		return fmt.Errorf("RECALL_MODEL_CONCURRENCY (-model-concurrency) is %d: %s", m.Concurrency, modelHints["RECALL_MODEL_CONCURRENCY"])
	}
	return nil
}

// modelHints say what each numeric setting takes.
var modelHints = map[string]string{
	"RECALL_MODEL_CONTEXT_TURNS":     fmt.Sprintf("give a whole number of user turns from 0 (no context) to %d", modelnote.MaxContextTurns),
	"RECALL_MODEL_CAPTURE_ASSISTANT": "give true or false",
	"RECALL_MODEL_TIMEOUT":           "give a positive Go duration, such as 60s or 2m",
	"RECALL_MODEL_CONCURRENCY":       "give a whole number of calls, 1 or more",
}

// client returns the endpoint's client.
func (m *modelSettings) client() (*modelclient.Client, error) {
	return modelclient.New(&modelclient.Config{URL: m.URL, Model: m.Name, APIKey: m.APIKey, Timeout: m.Timeout})
}

// modelLane returns the model lane c's settings ask for: nil for the
// lexical extractor.
func (c *config) modelLane() (*jobs.ModelLane, error) {
	profile, err := evidence.ParseProfile(c.Profile)
	if err != nil {
		return nil, fmt.Errorf("RECALL_EVIDENCE_PROFILE: %w", err)
	}
	if err := c.Model.validate(profile); err != nil {
		return nil, err
	}
	if c.Model.Extractor != extractorModel {
		return nil, nil
	}
	client, err := c.Model.client()
	if err != nil {
		return nil, err
	}
	turns := c.Model.ContextTurns
	if turns == 0 {
		turns = -1 // jobs.ModelLane: negative sends none
	}
	return &jobs.ModelLane{Model: client, ContextTurns: turns, CaptureAssistant: c.Model.CaptureAssistant,
		Timeout: c.Model.Timeout, Concurrency: c.Model.Concurrency}, nil
}
