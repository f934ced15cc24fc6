package acpclient

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
)

// Dialect is the ACP flavour an agent speaks: ACP v1, or one of the three
// pre-v1 ZeroClaw dialects the bridge still serves.
type Dialect string

const (
	// DialectV1 is ACP v1 (ZeroClaw ≥ 0.7.5 and third-party agents).
	DialectV1 Dialect = "v1"
	// DialectL0 is ZeroClaw 0.6.3–0.6.4: snake_case, session/event, string prompts.
	DialectL0 Dialect = "legacy-l0"
	// DialectL1 is ZeroClaw 0.6.5–0.7.3: camelCase, otherwise as L0.
	DialectL1 Dialect = "legacy-l1"
	// DialectL2 is ZeroClaw 0.7.4: session/update streaming, legacy initialize.
	DialectL2 Dialect = "legacy-l2"
)

// Legacy reports whether d is one of the pre-v1 ZeroClaw dialects.
func (d Dialect) Legacy() bool { return d == DialectL0 || d == DialectL1 || d == DialectL2 }

// Caps is what the agent's initialize result says it can do.
type Caps struct {
	Dialect Dialect
	// ZeroClaw is true when the agent is ZeroClaw (its extras are usable:
	// agentAlias, session/stop, result.content).
	ZeroClaw     bool
	AgentName    string
	AgentVersion string
	// MaxSessions, SessionTimeout and DefaultModel are the agent's limits,
	// zero when not advertised.
	MaxSessions    int
	SessionTimeout time.Duration
	DefaultModel   string
	// LoadSession, Resume (sessionCapabilities.resume), Close and
	// EmbeddedContext are v1 capabilities.
	LoadSession     bool
	Resume          bool
	Close           bool
	EmbeddedContext bool
	// MCPHTTP and MCPSSE are agentCapabilities.mcpCapabilities.http and
	// .sse: the MCP transports the agent connects to besides stdio.
	MCPHTTP bool
	MCPSSE  bool
}

// Cancel reports whether a running turn can be cancelled in protocol.
func (c Caps) Cancel() bool { return c.Dialect == DialectV1 }

// RestoreMethod is how a session opened on an earlier process of the
// agent is reopened: session/resume when advertised (nothing replayed),
// else session/load (which replays the conversation first), "" when the
// agent can do neither (its sessions die with its process).
func (c Caps) RestoreMethod() string {
	switch {
	case c.Dialect != DialectV1:
		return ""
	case c.Resume:
		return methodSessionResume
	case c.LoadSession:
		return methodSessionLoad
	}
	return ""
}

// OneTurnPerProcess reports whether the agent serves one turn at a time in
// total (legacy agents do not read stdin during a turn).
func (c Caps) OneTurnPerProcess() bool { return c.Dialect.Legacy() }

// detectDialect classifies a raw initialize result, before the SDK's typed
// decode could reject a legacy shape.
func detectDialect(raw json.RawMessage) (Caps, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return Caps{}, &agentconn.UnsupportedError{Reason: "initialize result is not an object"}
	}
	if pv, ok := top["protocolVersion"]; ok {
		pv = bytes.TrimSpace(pv)
		if len(pv) > 0 && pv[0] == '"' {
			var methods []string
			_ = json.Unmarshal(top["methods"], &methods)
			c := legacyCaps(top)
			c.Dialect = DialectL1
			if slices.Contains(methods, "session/update") {
				c.Dialect = DialectL2
			}
			return c, nil
		}
		var n float64
		if err := json.Unmarshal(pv, &n); err != nil {
			return Caps{}, &agentconn.UnsupportedError{Reason: "protocolVersion is neither a number nor a string"}
		}
		if n != 1 {
			return Caps{}, &agentconn.UnsupportedError{Reason: fmt.Sprintf("protocol version %v (the bridge speaks 1)", n)}
		}
		return v1Caps(raw)
	}
	if _, ok := top["protocol_version"]; ok {
		c := legacyCaps(top)
		c.Dialect = DialectL0
		return c, nil
	}
	return Caps{}, &agentconn.UnsupportedError{Reason: "no protocol version in initialize result"}
}

func v1Caps(raw json.RawMessage) (Caps, error) {
	var r struct {
		AgentCapabilities struct {
			LoadSession     bool `json:"loadSession"`
			MCPCapabilities struct {
				HTTP bool `json:"http"`
				SSE  bool `json:"sse"`
			} `json:"mcpCapabilities"`
			PromptCapabilities struct {
				EmbeddedContext bool `json:"embeddedContext"`
			} `json:"promptCapabilities"`
			SessionCapabilities struct {
				Close  json.RawMessage `json:"close"`
				Resume json.RawMessage `json:"resume"`
			} `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
		AgentInfo *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"agentInfo"`
		Meta struct {
			ZeroClaw *struct {
				MaxSessions        int    `json:"maxSessions"`
				SessionTimeoutSecs int    `json:"sessionTimeoutSecs"`
				DefaultModel       string `json:"defaultModel"`
			} `json:"zeroclaw"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Caps{}, &agentconn.UnsupportedError{Reason: "malformed v1 initialize result: " + err.Error()}
	}
	c := Caps{
		Dialect:         DialectV1,
		LoadSession:     r.AgentCapabilities.LoadSession,
		EmbeddedContext: r.AgentCapabilities.PromptCapabilities.EmbeddedContext,
		Close:           isObject(r.AgentCapabilities.SessionCapabilities.Close),
		Resume:          isObject(r.AgentCapabilities.SessionCapabilities.Resume),
		MCPHTTP:         r.AgentCapabilities.MCPCapabilities.HTTP,
		MCPSSE:          r.AgentCapabilities.MCPCapabilities.SSE,
	}
	if r.AgentInfo != nil {
		c.AgentName, c.AgentVersion = r.AgentInfo.Name, r.AgentInfo.Version
	}
	if z := r.Meta.ZeroClaw; z != nil {
		c.ZeroClaw = true
		c.MaxSessions = z.MaxSessions
		c.SessionTimeout = time.Duration(z.SessionTimeoutSecs) * time.Second
		c.DefaultModel = z.DefaultModel
	}
	if c.AgentName == "zeroclaw-acp" {
		c.ZeroClaw = true
	}
	return c, nil
}

func legacyCaps(top map[string]json.RawMessage) Caps {
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(top["capabilities"], &caps)
	var info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(firstOf(top, "serverInfo", "server_info"), &info); err != nil {
		info.Name, info.Version = "", ""
	}
	c := Caps{ZeroClaw: true, AgentName: info.Name, AgentVersion: info.Version}
	_ = json.Unmarshal(firstOf(caps, "maxSessions", "max_sessions"), &c.MaxSessions)
	var secs int
	_ = json.Unmarshal(firstOf(caps, "sessionTimeoutSecs", "session_timeout_secs"), &secs)
	c.SessionTimeout = time.Duration(secs) * time.Second
	_ = json.Unmarshal(firstOf(caps, "defaultModel", "default_model"), &c.DefaultModel)
	return c
}

func firstOf(m map[string]json.RawMessage, keys ...string) json.RawMessage {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// eventKind classifies one streamed agent update.
type eventKind int

const (
	evText eventKind = iota
	evThought
	evToolStart
	evToolEnd
	evPlan
	evHistoryTrimmed
	evCancelMarker
	evOther
)

// event is one decoded agent update, dialect-independent.
type event struct {
	kind   eventKind
	text   string // evText, evThought
	tool   string // evToolStart, evToolEnd: the tool's name, "" when the update names none
	title  string // evToolStart, evToolEnd: the agent's display title
	toolID string
	status string
	raw    json.RawMessage
}

// adapter translates between the bridge and one dialect's frames.
type adapter interface {
	newSessionParams(cfg Config, caps Caps) any
	promptParams(sid, text string) any
	sessionIDParams(sid string) any
	// decode turns a streaming notification into a session id and event.
	decode(method string, params json.RawMessage) (sid string, ev event, ok bool)
}

// adapterFor returns the adapter for caps.Dialect.
func adapterFor(caps Caps) adapter {
	if caps.Dialect.Legacy() {
		return &legacyAdapter{snake: caps.Dialect == DialectL0}
	}
	return v1Adapter{}
}

type v1Adapter struct{}

func (v1Adapter) newSessionParams(cfg Config, caps Caps) any {
	p := map[string]any{"mcpServers": []any{}}
	if caps.ZeroClaw {
		if cfg.AgentAlias != "" {
			p["agentAlias"] = cfg.AgentAlias
		}
		if cfg.SessionCwd != "" {
			p["cwd"] = cfg.SessionCwd
		}
		return p
	}
	p["cwd"] = cfg.SessionCwd // withDefaults guarantees an absolute path for non-ZeroClaw agents
	return p
}

func (v1Adapter) promptParams(sid, text string) any {
	return map[string]any{
		"sessionId": sid,
		"prompt":    []map[string]string{{"type": "text", "text": text}},
	}
}

func (v1Adapter) sessionIDParams(sid string) any { return map[string]string{"sessionId": sid} }

func (v1Adapter) decode(method string, params json.RawMessage) (string, event, bool) {
	if method != methodSessionUpdate {
		return "", event{}, false
	}
	return decodeSessionUpdate(params)
}

// decodeSessionUpdate reads a session/update notification by its raw tag
// (the SDK's typed decode misfiles kinds it does not know).
func decodeSessionUpdate(params json.RawMessage) (string, event, bool) {
	// A text chunk, nearly every update of a turn, is read in one pass;
	// anything else (or a chunk of another shape) by its raw tag below.
	// The two differ only for a repeated key (which RFC 8259 leaves
	// undefined): one pass merges repeated objects, the raw tag keeps the
	// last.
	var chunk struct {
		SessionID  string `json:"sessionId"`
		SessionID2 string `json:"session_id"`
		Update     struct {
			Kind    string `json:"sessionUpdate"`
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"update"`
	}
	if json.Unmarshal(params, &chunk) == nil && chunk.Update.Kind == "agent_message_chunk" {
		return cmp.Or(chunk.SessionID, chunk.SessionID2), event{kind: evText, text: chunk.Update.Content.Text}, true
	}
	var n struct {
		SessionID  string          `json:"sessionId"`
		SessionID2 string          `json:"session_id"`
		Update     json.RawMessage `json:"update"`
	}
	if err := json.Unmarshal(params, &n); err != nil {
		return "", event{}, false
	}
	sid := cmp.Or(n.SessionID, n.SessionID2)
	var u struct {
		Kind    string          `json:"sessionUpdate"`
		Content json.RawMessage `json:"content"`
		ID      string          `json:"toolCallId"`
		Title   string          `json:"title"`
		Name    string          `json:"name"`
		Status  string          `json:"status"`
		Meta    json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(n.Update, &u); err != nil {
		return sid, event{kind: evOther, raw: n.Update}, true
	}
	switch u.Kind {
	case "agent_message_chunk":
		return sid, event{kind: evText, text: blockText(u.Content)}, true
	case "agent_thought_chunk":
		return sid, event{kind: evThought, text: blockText(u.Content)}, true
	case "tool_call":
		if strings.HasPrefix(u.ID, "turn-cancelled-") {
			return sid, event{kind: evCancelMarker, toolID: u.ID}, true
		}
		return sid, event{kind: evToolStart, tool: updateTool(u.Name, u.Meta, u.Title), title: u.Title, toolID: u.ID, status: u.Status}, true
	case "tool_call_update":
		return sid, event{kind: evToolEnd, tool: updateTool(u.Name, u.Meta, u.Title), title: u.Title, toolID: u.ID, status: u.Status}, true
	case "plan":
		return sid, event{kind: evPlan, raw: n.Update}, true
	case "history_trimmed":
		return sid, event{kind: evHistoryTrimmed, raw: n.Update}, true
	default:
		return sid, event{kind: evOther, status: u.Kind, raw: n.Update}, true
	}
}

// blockText extracts the text of a content block ({type:"text",text}); a
// bare string is accepted too.
func blockText(raw json.RawMessage) string {
	var b struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &b) == nil {
		return b.Text
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// legacyAdapter speaks ZeroClaw 0.6.3–0.7.4 (L0, L1, L2).
type legacyAdapter struct {
	snake bool // L0 reads snake_case keys only
}

func (a *legacyAdapter) newSessionParams(Config, Caps) any { return map[string]any{} }

func (a *legacyAdapter) promptParams(sid, text string) any {
	return map[string]any{"sessionId": sid, "session_id": sid, "prompt": text}
}

func (a *legacyAdapter) sessionIDParams(sid string) any {
	return map[string]string{"sessionId": sid, "session_id": sid}
}

func (a *legacyAdapter) decode(method string, params json.RawMessage) (string, event, bool) {
	switch method {
	case methodSessionUpdate: // L2
		return decodeSessionUpdate(params)
	case methodSessionEvent:
	default:
		return "", event{}, false
	}
	var e struct {
		SessionID  string          `json:"sessionId"`
		SessionID2 string          `json:"session_id"`
		Type       string          `json:"type"`
		Content    json.RawMessage `json:"content"`
		Name       string          `json:"name"`
	}
	if err := json.Unmarshal(params, &e); err != nil {
		return "", event{}, false
	}
	sid := cmp.Or(e.SessionID, e.SessionID2)
	var text string
	_ = json.Unmarshal(e.Content, &text)
	switch e.Type {
	case "chunk":
		return sid, event{kind: evText, text: text}, true
	case "thinking":
		return sid, event{kind: evThought, text: text}, true
	case "tool_call":
		return sid, event{kind: evToolStart, tool: e.Name}, true
	case "tool_result":
		return sid, event{kind: evToolEnd, tool: e.Name}, true
	default:
		return sid, event{kind: evOther, status: e.Type, raw: params}, true
	}
}
