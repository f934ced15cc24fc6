package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/openai/openai-go"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// DefaultNarrativeModel is NARRATIVE_MODEL's default.
const DefaultNarrativeModel = "anthropic/claude-sonnet-4-6"

// DefaultNarrativeTimeout is NARRATIVE_TIMEOUT_SEC's default.
const DefaultNarrativeTimeout = 60 * time.Second

// NarrativeConfig configures the narrative client: the model that writes
// the robot's private texts (dreams, dance reflections), which nobody
// hears, so it goes straight to the provider rather than through the
// voice agent.
type NarrativeConfig struct {
	// URL is the full .../chat/completions address (VISION_API_URL).
	URL string
	// Model is NARRATIVE_MODEL (DefaultNarrativeModel when ""; New
	// defaults each field on its own).
	Model string
	// APIKey is sent as a Bearer token (VISION_API_KEY); "" means every
	// call returns ErrNoKey without a request.
	APIKey string
	// Timeout bounds one call (NARRATIVE_TIMEOUT_SEC; DefaultNarrativeTimeout when 0).
	Timeout time.Duration
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient *http.Client
	// Logger receives the failure lines; nil discards.
	Logger hclog.Logger
}

// DefaultNarrativeConfig returns bridge.py's narrative model and timeout:
// the one place they are written.
func DefaultNarrativeConfig() NarrativeConfig {
	return NarrativeConfig{Model: DefaultNarrativeModel, Timeout: DefaultNarrativeTimeout}
}

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field ("Timeout"): the one range check of
// each field; the bridge's command line names the variable a value came
// from.
func (c NarrativeConfig) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("URL", c.URL == "" || fieldcheck.HTTPURL(c.URL), c.URL, fieldcheck.WantHTTPURL)
	errs.Check("Timeout", c.Timeout > 0, c.Timeout, "more than 0")
	return errs.Err()
}

// ErrNoKey means no API key is configured, so no call is made.
var ErrNoKey = errors.New("narrative model has no API key")

// ErrEmpty means the model answered without text.
var ErrEmpty = errors.New("narrative model returned no text")

// Narrative asks a chat model for one text. Failures are the caller's
// "no text": each cause is logged once (a missing key once for the
// process; a failure kind once until a call succeeds again), because a
// robot asleep for eight hours would otherwise log the same outage at
// every dream. Safe for concurrent use.
type Narrative struct {
	cfg    NarrativeConfig
	client openai.Client
	log    hclog.Logger

	mu          sync.Mutex
	noKeyLogged bool
	failed      map[string]bool // failure kinds logged since the last success
}

// NewNarrative returns the client.
func NewNarrative(cfg NarrativeConfig) *Narrative {
	if cfg.Model == "" {
		cfg.Model = DefaultNarrativeModel
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultNarrativeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Narrative{cfg: cfg, client: NewClient(cfg.URL, cfg.APIKey, cfg.HTTPClient), log: cfg.Logger, failed: map[string]bool{}}
}

// Model is the model name sent.
func (n *Narrative) Model() string { return n.cfg.Model }

// Complete sends system and user as one exchange and returns the answer
// with surrounding whitespace removed. Any failure returns an error
// (ErrNoKey, ErrEmpty, a timeout, an HTTP status …) and "", already
// logged; a call cut short by ctx is not logged.
func (n *Narrative) Complete(ctx context.Context, system, user string, maxTokens int, temperature float64) (string, error) {
	if n.cfg.APIKey == "" {
		n.mu.Lock()
		first := !n.noKeyLogged
		n.noKeyLogged = true
		n.mu.Unlock()
		if first {
			n.log.Warn("narrative model has no API key (VISION_API_KEY); dreams and dance reflections are not written")
		}
		return "", ErrNoKey
	}
	cctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	reply, err := Ask(cctx, n.client, n.cfg.Model, system, openai.UserMessage(user), maxTokens, temperature)
	if err == nil && reply != "" {
		n.succeeded()
		return reply, nil
	}
	if err == nil || errors.Is(err, ErrNoChoices) {
		err = ErrEmpty
	}
	if ctx.Err() != nil { // the caller gave up (shutdown, a state change): not a model failure
		return "", fmt.Errorf("narrative call: %w", ctx.Err())
	}
	kind, detail := classify(err, cctx)
	n.fail(kind, detail)
	return "", fmt.Errorf("narrative call (%s): %w", kind, err)
}

// classify names a failure for the once-per-kind log, with a detail that
// never holds request headers.
func classify(err error, cctx context.Context) (kind, detail string) {
	var apiErr *openai.Error
	switch {
	case errors.Is(err, ErrEmpty):
		return "empty", err.Error()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return "timeout", "no answer in time"
	case errors.As(err, &apiErr):
		status := 0
		if apiErr.Response != nil {
			status = apiErr.Response.StatusCode
		}
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(status)
		}
		return fmt.Sprintf("status %d", status), text.Truncate(msg, text.Cut{Max: 200, Mark: "…"})
	default:
		return "transport", text.Truncate(err.Error(), text.Cut{Max: 300, Mark: "…"})
	}
}

func (n *Narrative) fail(kind, detail string) {
	n.mu.Lock()
	first := !n.failed[kind]
	n.failed[kind] = true
	n.mu.Unlock()
	if !first {
		n.log.Debug("narrative model call failed", "kind", kind)
		return
	}
	if n.cfg.APIKey != "" { // an error text echoing the request must not leak the key
		detail = strings.ReplaceAll(detail, n.cfg.APIKey, "[redacted]")
	}
	n.log.Warn("narrative model call failed; no text written (logged once until a call succeeds)",
		"model", n.cfg.Model, "kind", kind, "error", detail)
}

func (n *Narrative) succeeded() {
	n.mu.Lock()
	recovered := len(n.failed) > 0
	clear(n.failed)
	n.mu.Unlock()
	if recovered {
		n.log.Info("narrative model answering again", "model", n.cfg.Model)
	}
}
