package sidecarwire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

func TestCreate(t *testing.T) {
	newID := func() string { return "sess_new" }
	for _, tt := range []struct {
		params  string
		session string // JSON of the session, or "" when refused
		err     string // "code kind: message" prefix
	}{
		{`{"chatId":"c"}`, `{"sessionId":"sess_new","userId":"local","chatId":"c","currentStage":"plan","scenario":"agent-entry","isActive":true,"createdAt":"t","updatedAt":"t"}`, ""},
		{`{"chatId":"","sessionId":"","userId":0,"scenario":null,"projectId":"p"}`, `{"sessionId":"sess_new","userId":"local","projectId":"p","chatId":"","currentStage":"plan","isActive":true,"createdAt":"t","updatedAt":"t"}`, ""},
		{`{"chatId":"c","sessionId":"mine","stageData":{"a":1}}`, `{"sessionId":"mine","userId":"local","chatId":"c","currentStage":"plan","scenario":"agent-entry","stageData":{"a":1},"isActive":true,"createdAt":"t","updatedAt":"t"}`, ""},
		{`{}`, "", "-32603 internal: 'chatId'"},
		{`{"sessionId":5}`, "", "-32603 internal: 'chatId'"}, // the missing key is found first
		{`null`, "", "-32602 invalid_params: params must be an object"},
		{`[]`, "", "-32602 invalid_params: params must be an object"},
		{`{"chatId":null}`, "", "-32603 internal: 1 validation error for AgentSession\nchatId\n"},
		{`{"chatId":1,"currentStage":null}`, "", "-32603 internal: 2 validation errors for AgentSession\nchatId\n"},
	} {
		s, err := Create(json.RawMessage(tt.params), newID, "t")
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("Create(%s) = %v, want %q", tt.params, err, tt.err)
			}
			continue
		}
		b, _ := json.Marshal(s)
		if err != nil || string(b) != tt.session {
			t.Errorf("Create(%s) = %s, %v\nwant %s", tt.params, b, err, tt.session)
		}
	}
}

func TestChatParams(t *testing.T) {
	for _, tt := range []struct {
		params   string
		provider bool
		err      string
	}{
		{`{"provider":" OpenAI_Compat ","model":"m","messages":[{"role":"user","content":"hi"}],"temperature":"0.5"}`, true, ""},
		{`{"provider":"anthropic","model":"m"}`, true, ""},
		{`{"provider":"openai_compat"}`, true, "-32602 invalid_params: failed to construct LLM provider: model is required"},
		{`{"provider":"x","model":"m"}`, true, "-32602 invalid_params: failed to construct LLM provider: unknown provider: 'x'"},
		{`{"provider":3,"model":"m"}`, true, "-32602 invalid_params: failed to construct LLM provider: 'int' object has no attribute 'strip'"},
		{`{"messages":[]}`, false, ""},
		{`{"messages":{}}`, false, ""}, // falsy: read as no messages
		{`{"messages":{"a":1}}`, false, "-32602 invalid_params: messages must be a list"},
		{`{"messages":[{"role":null}]}`, false, "-32602 invalid_params: invalid role: None"},
		{`{"temperature":[1]}`, false, "-32603 internal: float() argument must be a string or a real number, not 'list'"},
		{`{"temperature":true}`, false, ""},
	} {
		_, err := ChatParams(json.RawMessage(tt.params), tt.provider)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ChatParams(%s) = %v", tt.params, err)
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("ChatParams(%s) = %v, want %q", tt.params, err, tt.err)
		}
	}
	c, _ := ChatParams(json.RawMessage(`{"base_url":"u","apiKey":"k","streamId":"s","messages":[{"role":"user","content":null},{"role":"tool"}]}`), false)
	if c.BaseURL != "u" || c.APIKey != "k" || c.StreamID != "s" || len(c.Messages) != 2 || c.Messages[0].Content != "None" || c.Messages[1].Content != "" {
		t.Errorf("chat %+v", c)
	}
}

func TestAnswer(t *testing.T) {
	for _, tt := range []struct {
		got  jsonrpc.Message
		want string
	}{
		{Answer(json.RawMessage(`1`), nil, nil), `{"jsonrpc":"2.0","id":1}`},
		{Answer(json.RawMessage(`"a"`), []int{}, nil), `{"jsonrpc":"2.0","id":"a","result":[]}`},
		{Answer(json.RawMessage(`null`), nil, ParseError(errString("bad"))), `{"jsonrpc":"2.0","error":{"code":-32700,"message":"bad","kind":"parse"}}`},
		{Answer(nil, "x", UnknownMethod("m")), `{"jsonrpc":"2.0","error":{"code":-32601,"message":"unknown method 'm'","kind":"method_not_found"}}`},
	} {
		if b, _ := json.Marshal(tt.got); string(b) != tt.want {
			t.Errorf("%s, want %s", b, tt.want)
		}
	}
	isRequest := func(frame string) bool {
		m, ok, err := jsonrpc.Decode([]byte(frame))
		return err == nil && ok && m.IsRequest()
	}
	if !isRequest(`{"id":null,"method":"m"}`) || isRequest(`{"method":"m"}`) {
		t.Error("a request is a frame with an id member, null included")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
