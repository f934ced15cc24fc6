// Package wiretest holds, for tests, what the real steerable-sidecar
// (steerable-framework v0.2.3) refuses and how it answers, so the fake
// sidecar and the built-in demo are checked against one table.
package wiretest

import (
	"strings"
	"testing"
)

// Refusal is one request the sidecar refuses and its error.
type Refusal struct {
	Method string
	Params any
	Code   float64
	Kind   string
	Msg    string // prefix of the error message
}

// Chat is agent.chat.stream params the sidecar accepts, with extra
// merged over them.
func Chat(extra map[string]any) map[string]any {
	p := map[string]any{"provider": "openai_compat", "model": "m", "messages": []any{map[string]string{"role": "user", "content": "hi"}}}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// Refusals are the refusals every sidecar the bridge ships or tests with
// gives, whatever provider checks it makes.
var Refusals = []Refusal{
	{"agent.session.create", map[string]any{}, -32603, "internal", "'chatId'"},
	{"agent.session.create", nil, -32602, "invalid_params", "params must be an object"},
	{"agent.session.create", []any{}, -32602, "invalid_params", "params must be an object"},
	{"agent.session.create", map[string]any{"chatId": 7}, -32603, "internal", "1 validation error for AgentSession\nchatId\n"},
	{"agent.session.create", map[string]any{"chatId": nil}, -32603, "internal", "1 validation error for AgentSession\nchatId\n"},
	{"agent.session.create", map[string]any{"chatId": "c", "currentStage": nil}, -32603, "internal", "1 validation error for AgentSession\ncurrentStage\n"},
	{"agent.session.resume", map[string]any{}, -32602, "invalid_params", "sessionId required"},
	{"agent.session.resume", map[string]any{"sessionId": "nope"}, -32004, "invalid_request", "session not found: nope"},
	{"agent.chat.stream", Chat(map[string]any{"messages": "hi"}), -32602, "invalid_params", "messages must be a list"},
	{"agent.chat.stream", Chat(map[string]any{"messages": []any{"hi"}}), -32602, "invalid_params", "each message must be an object"},
	{"agent.chat.stream", Chat(map[string]any{"messages": []any{map[string]any{"role": "robot"}}}), -32602, "invalid_params", "invalid role: 'robot'"},
	{"agent.chat.stream", Chat(map[string]any{"temperature": "hot"}), -32603, "internal", "could not convert string to float: 'hot'"},
	{"agent.chat.cancel", map[string]any{}, -32602, "invalid_params", "streamId required"},
	{"agent.chat.cancel", nil, -32602, "invalid_params", "params must be an object"},
	{"tool.list", nil, -32601, "method_not_found", "unknown method 'tool.list'"},
}

// ProviderRefusals are the default provider factory's refusals, which the
// real sidecar (and the fake) make and the demo, which has no provider,
// does not.
var ProviderRefusals = []Refusal{
	{"agent.chat.stream", Chat(map[string]any{"model": nil}), -32602, "invalid_params", "failed to construct LLM provider: model is required"},
	{"agent.chat.stream", Chat(map[string]any{"provider": "gpt"}), -32602, "invalid_params", "failed to construct LLM provider: unknown provider: 'gpt'"},
	{"agent.chat.stream", Chat(map[string]any{"provider": nil}), -32602, "invalid_params", "failed to construct LLM provider: unknown provider: ''"},
}

// Check sends each refusal through call, which returns the response
// frame, and reports every answer that is not the sidecar's error.
func Check(t *testing.T, refusals []Refusal, call func(method string, params any) map[string]any) {
	t.Helper()
	for _, tt := range refusals {
		r := call(tt.Method, tt.Params)
		e, _ := r["error"].(map[string]any)
		if msg, _ := e["message"].(string); e["code"] != tt.Code || e["kind"] != tt.Kind || !strings.HasPrefix(msg, tt.Msg) {
			t.Errorf("%s %v: answered %v, want %v %s %q", tt.Method, tt.Params, r, tt.Code, tt.Kind, tt.Msg)
		}
	}
}
