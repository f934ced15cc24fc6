// Package llm builds OpenAI-compatible chat clients (openai-go) from the
// full ".../chat/completions" URLs bridge.py's settings hold, and asks
// them one question. It is a leaf: tier1's think_hard and the vision
// routes both use it.
package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// NewClient returns a client for endpoint, a full ".../chat/completions"
// or ".../audio/transcriptions" URL (the SDK wants the base without that
// tail and appends it per call). An empty apiKey
// sends no Authorization header. Retries are off (callers have budgets)
// and no OPENAI_* environment variable takes effect. A nil hc is
// http.DefaultClient.
func NewClient(endpoint, apiKey string, hc *http.Client) openai.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	base := strings.TrimSuffix(endpoint, "/")
	for _, tail := range []string{"chat/completions", "audio/transcriptions"} {
		base = strings.TrimSuffix(base, tail)
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	opts := []option.RequestOption{option.WithBaseURL(base), option.WithMaxRetries(0), option.WithHTTPClient(hc)}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	} else {
		opts = append(opts, option.WithHeaderDel("authorization"))
	}
	return openai.NewClient(opts...)
}

// ErrNoChoices is an answer without a choice.
var ErrNoChoices = errors.New("no choices in the answer")

// Ask sends model one exchange, system then user, for at most maxTokens
// at temperature, and returns the first choice's text without
// surrounding white space (text.Strip); ErrNoChoices when the answer has
// none. ctx bounds the call; opts go with the request.
func Ask(ctx context.Context, c openai.Client, model, system string, user openai.ChatCompletionMessageParamUnion,
	maxTokens int, temperature float64, opts ...option.RequestOption) (string, error) {
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       model,
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), user},
		MaxTokens:   openai.Int(int64(maxTokens)),
		Temperature: openai.Float(temperature),
	}, opts...)
	if err != nil {
		return "", err
	}
	if len(resp.Choices) == 0 {
		return "", ErrNoChoices
	}
	return text.Strip(resp.Choices[0].Message.Content), nil
}
