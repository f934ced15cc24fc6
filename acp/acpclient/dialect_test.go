package acpclient

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
)

func TestDetectDialect(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    Caps
		wantErr bool
	}{
		{
			name: "zeroclaw 0.8.4",
			raw: `{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":false,"embeddedContext":true},
				"mcpCapabilities":{"http":false,"sse":false},"sessionCapabilities":{"resume":{},"close":{}}},
				"agentInfo":{"name":"zeroclaw-acp","title":"ZeroClaw ACP","version":"0.8.4"},"authMethods":[],
				"_meta":{"zeroclaw":{"maxSessions":10,"sessionTimeoutSecs":3600,"defaultModel":"m"}}}`,
			want: Caps{Dialect: DialectV1, ZeroClaw: true, AgentName: "zeroclaw-acp", AgentVersion: "0.8.4",
				MaxSessions: 10, SessionTimeout: time.Hour, DefaultModel: "m", LoadSession: true, Resume: true, Close: true, EmbeddedContext: true},
		},
		{
			name: "third-party v1 that loads but cannot resume",
			raw:  `{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"sessionCapabilities":{"close":{}}},"authMethods":[]}`,
			want: Caps{Dialect: DialectV1, LoadSession: true, Close: true},
		},
		{
			name: "zeroclaw 0.7.5 without store",
			raw:  `{"protocolVersion":1,"agentCapabilities":{"loadSession":false,"sessionCapabilities":{}},"agentInfo":{"name":"zeroclaw-acp","version":"0.7.5"},"authMethods":[],"_meta":{"zeroclaw":{"maxSessions":10}}}`,
			want: Caps{Dialect: DialectV1, ZeroClaw: true, AgentName: "zeroclaw-acp", AgentVersion: "0.7.5", MaxSessions: 10},
		},
		{
			name: "third-party v1",
			raw:  `{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[]}`,
			want: Caps{Dialect: DialectV1},
		},
		{
			name: "claude-agent-acp connects to MCP over HTTP and SSE",
			raw: `{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":true,"embeddedContext":true},
				"mcpCapabilities":{"http":true,"sse":true},"sessionCapabilities":{"resume":{}}},
				"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"0.31.0"},"authMethods":[]}`,
			want: Caps{Dialect: DialectV1, AgentName: "@agentclientprotocol/claude-agent-acp", AgentVersion: "0.31.0",
				Resume: true, EmbeddedContext: true, MCPHTTP: true, MCPSSE: true},
		},
		{
			name: "HTTP without SSE",
			raw:  `{"protocolVersion":1,"agentCapabilities":{"mcpCapabilities":{"http":true}},"authMethods":[]}`,
			want: Caps{Dialect: DialectV1, MCPHTTP: true},
		},
		{
			name: "mcpCapabilities null is stdio only",
			raw:  `{"protocolVersion":1,"agentCapabilities":{"mcpCapabilities":null},"authMethods":[]}`,
			want: Caps{Dialect: DialectV1},
		},
		{
			name: "legacy L0 snake case",
			raw: `{"protocol_version":"1.0","server_info":{"name":"zeroclaw-acp","version":"0.6.3"},
				"capabilities":{"streaming":true,"max_sessions":10,"session_timeout_secs":3600},"methods":["initialize","session/new","session/prompt","session/stop"]}`,
			want: Caps{Dialect: DialectL0, ZeroClaw: true, AgentName: "zeroclaw-acp", AgentVersion: "0.6.3", MaxSessions: 10, SessionTimeout: time.Hour},
		},
		{
			name: "legacy L1 camel case",
			raw:  `{"protocolVersion":"1.0","serverInfo":{"name":"zeroclaw-acp","version":"0.7.0"},"capabilities":{"streaming":true,"maxSessions":5,"sessionTimeoutSecs":60},"methods":["initialize","session/new","session/prompt","session/stop","session/event"]}`,
			want: Caps{Dialect: DialectL1, ZeroClaw: true, AgentName: "zeroclaw-acp", AgentVersion: "0.7.0", MaxSessions: 5, SessionTimeout: time.Minute},
		},
		{
			name: "legacy L2 streams session/update",
			raw:  `{"protocolVersion":"1.0","serverInfo":{"name":"zeroclaw-acp","version":"0.7.4"},"capabilities":{"maxSessions":10,"defaultModel":"x"},"methods":["initialize","session/update","session/event"]}`,
			want: Caps{Dialect: DialectL2, ZeroClaw: true, AgentName: "zeroclaw-acp", AgentVersion: "0.7.4", MaxSessions: 10, DefaultModel: "x"},
		},
		{name: "protocol version 2 refused", raw: `{"protocolVersion":2,"agentCapabilities":{}}`, wantErr: true},
		{name: "no version", raw: `{"hello":"world"}`, wantErr: true},
		{name: "not an object", raw: `[1,2]`, wantErr: true},
		{name: "null", raw: `null`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := detectDialect(json.RawMessage(tt.raw))
			if tt.wantErr {
				var u *agentconn.UnsupportedError
				if !errors.As(err, &u) {
					t.Fatalf("err = %v, want an *agentconn.UnsupportedError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(got, tt.want); d != "" {
				t.Errorf("caps (-got +want):\n%s", d)
			}
		})
	}
}

// A session is reopened with session/resume when the agent advertises it
// (nothing replayed), else with session/load; never on a legacy agent.
func TestRestoreMethod(t *testing.T) {
	for _, tt := range []struct {
		caps Caps
		want string
	}{
		{Caps{Dialect: DialectV1, LoadSession: true, Resume: true}, "session/resume"},
		{Caps{Dialect: DialectV1, Resume: true}, "session/resume"},
		{Caps{Dialect: DialectV1, LoadSession: true}, "session/load"},
		{Caps{Dialect: DialectV1}, ""},
		{Caps{Dialect: DialectL2, LoadSession: true, Resume: true}, ""},
	} {
		if got := tt.caps.RestoreMethod(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.caps, got, tt.want)
		}
	}
}

func TestDecodeUpdates(t *testing.T) {
	tests := []struct {
		name    string
		dialect Dialect
		method  string
		params  string
		sid     string
		want    event
		ok      bool
	}{
		{"v1 chunk", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`, "S", event{kind: evText, text: "hi"}, true},
		{"v1 thought", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}}`, "S", event{kind: evThought, text: "hm"}, true},
		{"v1 tool call with zeroclaw name", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Run shell","name":"shell","status":"pending"}}`, "S", event{kind: evToolStart, tool: "shell", title: "Run shell", toolID: "t1", status: "pending"}, true},
		{"v1 tool call named by claude-agent-acp's _meta", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"ls -la","_meta":{"claudeCode":{"toolName":"Bash"}},"status":"pending"}}`, "S", event{kind: evToolStart, tool: "Bash", title: "ls -la", toolID: "toolu_1", status: "pending"}, true},
		{"v1 tool call named by codex-acp's title", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Tool: robot/self.camera.take_photo","status":"in_progress"}}`, "S", event{kind: evToolStart, tool: "self.camera.take_photo", title: "Tool: robot/self.camera.take_photo", toolID: "c1", status: "in_progress"}, true},
		{"v1 tool call with a prose title names no tool", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":"call_2","title":"Modifying critical configuration file","status":"pending"}}`, "S", event{kind: evToolStart, title: "Modifying critical configuration file", toolID: "call_2", status: "pending"}, true},
		{"v1 cancel marker", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":"turn-cancelled-S","title":"turn-cancelled","kind":"think","status":"completed"}}`, "S", event{kind: evCancelMarker, toolID: "turn-cancelled-S"}, true},
		{"v1 ignores session/event", DialectV1, "session/event", `{"sessionId":"S","type":"chunk","content":"x"}`, "", event{}, false},
		{"L0 snake chunk", DialectL0, "session/event", `{"session_id":"S","type":"chunk","content":"Let me look. "}`, "S", event{kind: evText, text: "Let me look. "}, true},
		{"L1 tool result", DialectL1, "session/event", `{"sessionId":"S","type":"tool_result","name":"shell","output":"a"}`, "S", event{kind: evToolEnd, tool: "shell"}, true},
		{"v1 chunk with a bare string", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":"plain"}}`, "S", event{kind: evText, text: "plain"}, true},
		{"v1 chunk, snake session id, no content", DialectV1, "session/update", `{"session_id":"S","update":{"sessionUpdate":"agent_message_chunk"}}`, "S", event{kind: evText}, true},
		{"v1 chunk whose text is not a string", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"text":5}}}`, "S", event{kind: evText}, true},
		{"v1 unknown kind", DialectV1, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"usage","tokens":3}}`, "S", event{kind: evOther, status: "usage"}, true},
		{"L2 session/update chunk", DialectL2, "session/update", `{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"yo"}}}`, "S", event{kind: evText, text: "yo"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sid, ev, ok := adapterFor(Caps{Dialect: tt.dialect}).decode(tt.method, json.RawMessage(tt.params))
			if ok != tt.ok || sid != tt.sid {
				t.Fatalf("decode = %q, %v; want %q, %v", sid, ok, tt.sid, tt.ok)
			}
			ev.raw = nil
			if d := cmp.Diff(ev, tt.want, cmp.AllowUnexported(event{})); d != "" {
				t.Errorf("event (-got +want):\n%s", d)
			}
		})
	}
}

func TestAdapterParams(t *testing.T) {
	v1 := adapterFor(Caps{Dialect: DialectV1, ZeroClaw: true})
	b, _ := json.Marshal(v1.newSessionParams(Config{AgentAlias: "dotty"}, Caps{Dialect: DialectV1, ZeroClaw: true}))
	if string(b) != `{"agentAlias":"dotty","mcpServers":[]}` {
		t.Errorf("zeroclaw session/new params = %s", b)
	}
	b, _ = json.Marshal(v1.newSessionParams(Config{}, Caps{Dialect: DialectV1, ZeroClaw: true}))
	if string(b) != `{"mcpServers":[]}` {
		t.Errorf("zeroclaw session/new without alias = %s (cwd must be omitted, never empty)", b)
	}
	b, _ = json.Marshal(v1.promptParams("S", "hi"))
	if string(b) != `{"prompt":[{"text":"hi","type":"text"}],"sessionId":"S"}` {
		t.Errorf("v1 prompt params = %s", b)
	}
	l := adapterFor(Caps{Dialect: DialectL1})
	b, _ = json.Marshal(l.promptParams("S", "hi"))
	if string(b) != `{"prompt":"hi","sessionId":"S","session_id":"S"}` {
		t.Errorf("legacy prompt params = %s", b)
	}
}

func TestRPCErrorIs(t *testing.T) {
	tests := []struct {
		err  *agentconn.RPCError
		want error
		is   bool
	}{
		{&agentconn.RPCError{Code: -32000, Message: "Session not found: S"}, agentconn.ErrSessionNotFound, true},
		{&agentconn.RPCError{Code: -32000, Message: "Authentication required"}, agentconn.ErrSessionNotFound, false},
		{&agentconn.RPCError{Code: -32603, Message: "session expired"}, agentconn.ErrSessionNotFound, true},
		{&agentconn.RPCError{Code: -32603, Message: "Agent turn failed: boom"}, agentconn.ErrSessionNotFound, false},
		{&agentconn.RPCError{Code: -32001, Message: "Maximum session limit reached (10)"}, agentconn.ErrSessionLimit, true},
		{&agentconn.RPCError{Code: -32002, Message: "Session already has an active prompt turn: S"}, agentconn.ErrSessionBusy, true},
		{&agentconn.RPCError{Code: -32601, Message: "Method not found"}, agentconn.ErrNotSupported, true},
		{&agentconn.RPCError{Code: -32602, Message: "bad"}, agentconn.ErrNotSupported, false},
	}
	for _, tt := range tests {
		wrapped := errors.Join(errors.New("context"), tt.err)
		if got := errors.Is(wrapped, tt.want); got != tt.is {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", tt.err, tt.want, got, tt.is)
		}
	}
}
