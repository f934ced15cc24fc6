package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// modelText is the fake model's answer unless a test scripts another.
const modelText = "  A text.\n"

func newNarrative(t *testing.T, f *llmtest.Server, key string, timeout time.Duration) (*Narrative, *testkit.LogBuffer) {
	logs := &testkit.LogBuffer{}
	return NewNarrative(NarrativeConfig{URL: f.URL + "/v1/chat/completions", APIKey: key, Timeout: timeout,
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})}), logs
}

func TestNarrativeRequest(t *testing.T) {
	f := llmtest.New(t, modelText)
	n, _ := newNarrative(t, f, "sk-test", 0)
	text, err := n.Complete(context.Background(), "sys", "user", 1200, 0.9)
	if err != nil || text != "A text." {
		t.Fatalf("Complete = %q, %v", text, err)
	}
	want := map[string]any{"model": DefaultNarrativeModel, "max_tokens": 1200.0, "temperature": 0.9,
		"messages": []any{map[string]any{"role": "system", "content": "sys"}, map[string]any{"role": "user", "content": "user"}}}
	if d := cmp.Diff(f.Request(0).Body, want); d != "" {
		t.Errorf("request (-got +want):\n%s", d)
	}
	if auth := f.Request(0).Auth; auth != "Bearer sk-test" {
		t.Errorf("authorization %q", auth)
	}
	if n.Model() != DefaultNarrativeModel {
		t.Errorf("model %q", n.Model())
	}
}

func TestNarrativeNoKey(t *testing.T) {
	f := llmtest.New(t, modelText)
	n, logs := newNarrative(t, f, "", 0)
	for range 3 {
		if text, err := n.Complete(context.Background(), "s", "u", 10, 0.5); text != "" || !errors.Is(err, ErrNoKey) {
			t.Fatalf("Complete = %q, %v", text, err)
		}
	}
	if f.Count() != 0 {
		t.Errorf("%d requests without a key", f.Count())
	}
	if c := strings.Count(logs.String(), "no API key"); c != 1 {
		t.Errorf("no-key warning logged %d times:\n%s", c, logs)
	}
}

func TestNarrativeFailuresLoggedOncePerKind(t *testing.T) {
	f := llmtest.New(t, modelText)
	n, logs := newNarrative(t, f, "sk-secret", 0)
	fail := func(w http.ResponseWriter, r *http.Request) {
		// An upstream that echoes the request must not get the key logged.
		http.Error(w, `{"error":{"message":"bad key `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}}`, http.StatusUnauthorized)
	}
	f.Set(llmtest.Reply{Func: fail})
	for range 3 {
		if text, err := n.Complete(context.Background(), "s", "u", 10, 0.5); text != "" || err == nil {
			t.Fatalf("Complete = %q, %v", text, err)
		}
	}
	warns := func() int { return strings.Count(logs.String(), "[WARN]") }
	if warns() != 1 || !strings.Contains(logs.String(), `kind="status 401"`) {
		t.Errorf("want one 401 warning:\n%s", logs)
	}
	if strings.Contains(logs.String(), "sk-secret") {
		t.Errorf("key logged:\n%s", logs)
	}
	f.Answer("   ") // no text is a failure of its own kind
	if _, err := n.Complete(context.Background(), "s", "u", 10, 0.5); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty answer: %v", err)
	}
	if warns() != 2 {
		t.Errorf("want a warning for the empty answer:\n%s", logs)
	}
	f.Answer(modelText)
	if text, _ := n.Complete(context.Background(), "s", "u", 10, 0.5); text != "A text." {
		t.Errorf("after recovery %q", text)
	}
	if !strings.Contains(logs.String(), "answering again") {
		t.Errorf("no recovery line:\n%s", logs)
	}
	f.Set(llmtest.Reply{Func: fail})
	_, _ = n.Complete(context.Background(), "s", "u", 10, 0.5)
	if warns() != 3 {
		t.Errorf("a failure after a success is logged again:\n%s", logs)
	}
}

func TestNarrativeTimeoutAndCancel(t *testing.T) {
	f := llmtest.New(t, modelText)
	f.Set(llmtest.Reply{Block: true})
	n, logs := newNarrative(t, f, "k", 50*time.Millisecond)
	start := time.Now()
	if text, err := n.Complete(context.Background(), "s", "u", 10, 0.5); text != "" || err == nil {
		t.Fatalf("Complete = %q, %v", text, err)
	}
	// The model never answers: the logged timeout below shows what ended
	// the call; its time is printed.
	t.Logf("timeout took %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(logs.String(), `kind=timeout`) {
		t.Errorf("no timeout warning:\n%s", logs)
	}

	// A caller that gives up (shutdown) is not a model failure.
	n2, logs2 := newNarrative(t, f, "k", 5*time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	reached := make(chan bool, 1)
	go func() {
		// Cancel once the request is with the model; the verdict is
		// read by the test itself, never reported after it ends.
		reached <- testkit.Within(time.Minute, func() bool { return f.Count() >= 2 })
		cancel()
	}()
	_, err := n2.Complete(ctx, "s", "u", 10, 0.5)
	if !<-reached {
		t.Fatal("the request never reached the model")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	if strings.Contains(logs2.String(), "[WARN]") {
		t.Errorf("cancellation logged:\n%s", logs2)
	}
}

func TestNarrativeValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  NarrativeConfig
		ok   bool
	}{
		{"defaults", DefaultNarrativeConfig(), true},
		{"zero timeout", NarrativeConfig{}, false},
		{"https", NarrativeConfig{URL: "https://openrouter.ai/api/v1/chat/completions", Timeout: time.Minute}, true},
		{"not a URL", NarrativeConfig{URL: "openrouter.ai", Timeout: time.Minute}, false},
		{"negative timeout", NarrativeConfig{Timeout: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}
