package llm

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// Ask sends the system and user messages with the bounds and the caller's
// options, and returns the first choice stripped; an answer without a
// choice is ErrNoChoices, a failing endpoint its error.
func TestAsk(t *testing.T) {
	f := llmtest.New(t, modelText)
	c := NewClient(f.URL+"/v1/chat/completions", "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.MinWait)
	defer cancel()
	got, err := Ask(ctx, c, "m", "sys", openai.UserMessage("user"), 200, 0.3, option.WithJSONSet("stream", false))
	if err != nil || got != "A text." {
		t.Fatalf("Ask = %q, %v", got, err)
	}
	want := map[string]any{"model": "m", "max_tokens": 200.0, "temperature": 0.3, "stream": false,
		"messages": []any{map[string]any{"role": "system", "content": "sys"}, map[string]any{"role": "user", "content": "user"}}}
	if d := cmp.Diff(f.Request(0).Body, want); d != "" {
		t.Errorf("request (-got +want):\n%s", d)
	}

	f.Set(llmtest.Reply{Func: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[]}`))
	}})
	if got, err := Ask(ctx, c, "m", "sys", openai.UserMessage("user"), 200, 0.3); got != "" || !errors.Is(err, ErrNoChoices) {
		t.Errorf("no choices: %q, %v", got, err)
	}
	f.Set(llmtest.Reply{Func: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusBadGateway) }})
	if got, err := Ask(ctx, c, "m", "sys", openai.UserMessage("user"), 200, 0.3); got != "" || err == nil || errors.Is(err, ErrNoChoices) {
		t.Errorf("failing endpoint: %q, %v", got, err)
	}
}
