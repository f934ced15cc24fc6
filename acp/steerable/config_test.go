package steerable

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
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
		{"bad url", Config{BaseURL: "api.openai.com"}, "BaseURL api.openai.com: want an http or https URL"},
		{"hot", Config{Temperature: &hot}, "Temperature 2.5: want a number from 0 to 2"},
		{"negative cap", Config{HistoryChars: -1}, "HistoryChars -1: want 0 or more"},
		{"ping timeout over interval", Config{PingInterval: 1, PingTimeout: 2}, "PingTimeout 2ns: want at most PingInterval"},
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
		"BudgetExhaustedError": agentconn.KindBudgetExhausted, "budget_exhausted": agentconn.KindBudgetExhausted,
		"PolicyDeniedError": agentconn.KindPolicyDenied, "policy_denied": agentconn.KindPolicyDenied,
		"ToolDispatchError": agentconn.KindToolDispatch, "tool_failed": agentconn.KindToolDispatch,
		"StorageError": agentconn.KindStorage, "TransportError": agentconn.KindTransport,
		"ConnectError": agentconn.KindTransport, "ReadTimeout": agentconn.KindTransport, "RemoteProtocolError": agentconn.KindTransport,
		"HTTPStatusError": agentconn.KindTransport, "APIConnectionError": agentconn.KindTransport, "RateLimitError": agentconn.KindTransport,
		"-32021": agentconn.KindBudgetExhausted, "ValueError": "", "internal": "", "invalid_params": "", "": "",
	} {
		if got := kindForClass(class); got != want {
			t.Errorf("kindForClass(%q) = %q, want %q", class, got, want)
		}
	}
	// As the sidecar answers them: its own classes by kind or code.
	for _, tt := range []struct {
		e    jsonrpc.Error
		kind string // "" for an *agentconn.RPCError
	}{
		{jsonrpc.Error{Code: -32021, Kind: "budget_exhausted"}, agentconn.KindBudgetExhausted},
		{jsonrpc.Error{Code: -32020, Kind: "policy_denied"}, agentconn.KindPolicyDenied},
		{jsonrpc.Error{Code: -32030, Kind: "tool_failed"}, agentconn.KindToolDispatch},
		{jsonrpc.Error{Code: -32011, Kind: "internal"}, agentconn.KindStorage},
		{jsonrpc.Error{Code: -32021}, agentconn.KindBudgetExhausted},
		{jsonrpc.Error{Code: -32603, Kind: "internal", Message: "'chatId'"}, ""},
		{jsonrpc.Error{Code: -32602, Kind: "invalid_params", Message: "failed to construct LLM provider: model is required"}, ""},
		{jsonrpc.Error{Code: -32004, Kind: "invalid_request", Message: "session not found: s"}, ""},
		{jsonrpc.Error{Code: -32001, Message: "BudgetExhaustedError"}, ""}, // the catalogue's codes: never raised
	} {
		err := rpcError("m", &tt.e)
		ae, isAgent := err.(*agentconn.AgentError)
		if _, isRPC := err.(*agentconn.RPCError); tt.kind == "" && !isRPC || tt.kind != "" && (!isAgent || ae.Kind != tt.kind) {
			t.Errorf("%+v gave %#v, want kind %q", tt.e, err, tt.kind)
		}
	}
	if err := rpcError("agent.session.resume", &jsonrpc.Error{Code: -32004, Kind: "invalid_request", Message: "session not found: s"}); !errors.Is(err, agentconn.ErrSessionNotFound) {
		t.Errorf("%v is not a lost session", err)
	}
}

// A chat id is stable for a key, at most 47 characters of [A-Za-z0-9._-]
// (the sidecar's SQL storage holds 191), and distinct for distinct keys,
// those that read alike once cleaned included.
func TestChatID(t *testing.T) {
	valid := regexp.MustCompile(`^dotty-[A-Za-z0-9._-]{0,24}-[0-9a-f]{16}$`)
	keys := []string{"default", "robot-1", "a b", "a_b", "", "ünïcödé", strings.Repeat("k", 500), strings.Repeat("k", 501), "../../etc/passwd", "x\n\"y"}
	seen := map[string]string{}
	for _, k := range keys {
		id := ChatID(k)
		if !valid.MatchString(id) || len(id) > 47 {
			t.Errorf("ChatID(%q) = %q", k, id)
		}
		if id != ChatID(k) {
			t.Errorf("ChatID(%q) is not stable", k)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("keys %q and %q share %s", other, k, id)
		}
		seen[id] = k
	}
	if id := ChatID("robot-1"); !strings.HasPrefix(id, "dotty-robot-1-") {
		t.Errorf("ChatID(robot-1) = %s, want the key readable in it", id)
	}
}
