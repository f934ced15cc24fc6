// Package llm builds OpenAI-compatible chat clients (openai-go) from the
// full ".../chat/completions" URLs bridge.py's settings hold. It is a leaf:
// tier1's think_hard and the vision routes both use it.
package llm

import (
	"net/http"
	"strings"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
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
