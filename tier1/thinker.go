package tier1

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// ThinkerConfig is think_hard's OpenAI-compatible chat endpoint.
type ThinkerConfig struct {
	// URL is VOICE_THINKER_URL, the full .../chat/completions address.
	URL string
	// Model is VOICE_THINKER_MODEL.
	Model string
	// Timeout is VOICE_THINKER_TIMEOUT; the 28 s budget caps it.
	Timeout time.Duration
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient *http.Client
}

// thinkerSystem is think_hard's system prompt (bridge.py's, exact).
const thinkerSystem = "Answer the user's question concisely in 1-2 sentences. Be precise."

// validate checks the URL and the timeout.
func (c ThinkerConfig) validate() error {
	var errs fieldcheck.Errors
	errs.Check("URL", fieldcheck.HTTPURL(c.URL), c.URL, fieldcheck.WantHTTPURL)
	errs.Check("Timeout", c.Timeout > 0, c.Timeout, "more than 0")
	return errs.Err()
}

type thinker struct {
	cfg    ThinkerConfig
	client openai.Client
}

// newThinker builds the client: the base URL is the configured URL without
// its chat/completions tail; no Authorization header, no retries, and no
// OPENAI_* variables from the environment take effect.
func newThinker(cfg ThinkerConfig) *thinker {
	def := DefaultConfig().Thinker
	cfg.URL, cfg.Model = cmp.Or(cfg.URL, def.URL), cmp.Or(cfg.Model, def.Model)
	if cfg.Timeout <= 0 {
		cfg.Timeout = def.Timeout
	}
	return &thinker{cfg: cfg, client: llm.NewClient(cfg.URL, "", cfg.HTTPClient)}
}

// thinkHard asks the thinker model, within the caller's 30 s wait.
func (h *Handler) thinkHard(ctx context.Context, args map[string]json.RawMessage) (string, error) {
	q, err := strArg(args, "question")
	if err != nil {
		return "", err
	}
	if q = text.Strip(q); q == "" {
		return EmptyQuestion, nil
	}
	t := h.thinker
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout) // the budget still caps it
	defer cancel()
	answer, err := llm.Ask(ctx, t.client, t.cfg.Model, thinkerSystem, openai.UserMessage(q), 200, 0.3,
		option.WithJSONSet("stream", false), option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": false}))
	switch {
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		h.log.Warn("thinker too slow", "timeout", min(t.cfg.Timeout, h.cfg.longBudget))
		return ThinkerSlow, nil
	case errors.Is(err, llm.ErrNoChoices):
		h.log.Warn("thinker answered no choices")
		return ThinkingFailed, nil
	case err != nil:
		h.log.Warn("thinker failed", "error", err)
		return ThinkingFailed, nil
	}
	return text.Truncate(answer, text.Cut{Max: 500}), nil
}
