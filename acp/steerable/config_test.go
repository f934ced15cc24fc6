package steerable

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
)

func TestConfigValidate(t *testing.T) {
	hot, cold := 2.5, 0.0
	tests := []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"zero value", Config{}, ""},
		{"full", Config{Provider: "openai_compat", Model: "m", BaseURL: "https://api.openai.com/v1", APIKey: "k", Temperature: &cold}, ""},
		{"bad url", Config{BaseURL: "api.openai.com"}, "not an http(s) URL"},
		{"hot", Config{Temperature: &hot}, "outside 0…2"},
		{"negative cap", Config{HistoryChars: -1}, "negative"},
		{"ping timeout over interval", Config{PingInterval: 1, PingTimeout: 2}, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSecretNeverPrints(t *testing.T) {
	cfg := Config{APIKey: "sk-very-secret"}
	b, _ := json.Marshal(cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s %q", cfg.APIKey, cfg.APIKey), string(b)} {
		if strings.Contains(s, "sk-very-secret") {
			t.Errorf("secret printed: %s", s)
		}
	}
	if string(cfg.APIKey) != "sk-very-secret" {
		t.Error("the secret's value was lost")
	}
}

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string]string{
		"":   "python3 [-m steerable_sidecar]",
		"  ": "python3 [-m steerable_sidecar]",
		"/opt/venv/bin/python -m steerable_sidecar --quiet-ready": "/opt/venv/bin/python [-m steerable_sidecar --quiet-ready]",
		"steerable-sidecar": "steerable-sidecar []",
	} {
		cmd, args := SplitCommand(in)
		if got := fmt.Sprintf("%s %v", cmd, args); got != want || args == nil {
			t.Errorf("SplitCommand(%q) = %s (nil args %v), want %s", in, got, args == nil, want)
		}
	}
}

func TestKinds(t *testing.T) {
	for class, want := range map[string]string{
		"BudgetExhaustedError": acp.KindBudgetExhausted, "budget_exhausted": acp.KindBudgetExhausted,
		"PolicyDeniedError": acp.KindPolicyDenied, "policy-denied": acp.KindPolicyDenied,
		"ToolDispatchError": acp.KindToolDispatch, "tool_dispatch": acp.KindToolDispatch,
		"StorageError": acp.KindStorage, "TransportError": acp.KindTransport, "transport": acp.KindTransport,
		"-32005": acp.KindTransport, "ProviderError": "", "": "",
	} {
		if got := kindForClass(class); got != want {
			t.Errorf("kindForClass(%q) = %q, want %q", class, got, want)
		}
	}
	for code := -32001; code >= -32005; code-- {
		err := rpcError("m", &wireError{Code: code, Message: "x"})
		if _, ok := err.(*acp.AgentError); !ok {
			t.Errorf("code %d gave %T", code, err)
		}
	}
	if _, ok := rpcError("m", &wireError{Code: -32602}).(*acp.RPCError); !ok {
		t.Error("-32602 is not an RPCError")
	}
}
