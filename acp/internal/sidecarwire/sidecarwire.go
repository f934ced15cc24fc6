// Package sidecarwire holds the steerable-sidecar's request rules as its
// source applies them (pathlyapp/steerable-framework v0.2.3, commit
// 192a937, packages/sidecar and the runtime's stdio JSON-RPC server): what
// each method the bridge calls reads, requires and refuses, with the
// sidecar's error codes, kinds and messages, and the shape of its answers
// (on acp/internal/jsonrpc's envelope).
// The built-in demo agent and the tests' fake sidecar both follow them, so
// neither accepts what the real sidecar refuses.
//
// The sidecar answers every failure as {"code","message","kind"}: -32700
// (parse), -32600 (invalid_request), -32601 (method_not_found), -32602
// (invalid_params), -32603 (internal: any exception, its message the
// exception's text, e.g. "'chatId'" for a missing key), -32004
// (invalid_request: session not found). A null result is sent as no
// result member at all, and an answer to an unreadable frame has no id.
package sidecarwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/pyjson"
)

// Error codes the sidecar answers with: JSON-RPC's, and its own for an
// unknown session.
const (
	CodeParse          = jsonrpc.CodeParse
	CodeInvalidRequest = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound = jsonrpc.CodeMethodNotFound
	CodeInvalidParams  = jsonrpc.CodeInvalidParams
	CodeInternal       = jsonrpc.CodeInternal
	CodeNotFound       = -32004
)

// Error is the sidecar's error object: JSON-RPC's, with its kind.
type Error = jsonrpc.Error

func invalid(msg string) *Error {
	return &Error{Code: CodeInvalidParams, Message: msg, Kind: "invalid_params"}
}
func internal(msg string) *Error { return &Error{Code: CodeInternal, Message: msg, Kind: "internal"} }

// ParseError answers a frame that is not JSON.
func ParseError(err error) *Error {
	return &Error{Code: CodeParse, Message: err.Error(), Kind: "parse"}
}

// MissingMethod answers a request without a method.
func MissingMethod() *Error {
	return &Error{Code: CodeInvalidRequest, Message: "missing method", Kind: "invalid_request"}
}

// UnknownMethod answers a method the sidecar does not serve.
func UnknownMethod(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "unknown method '" + method + "'", Kind: "method_not_found"}
}

// Answer builds the answer to request id: result, or err when not nil.
// A nil result is left out, as the sidecar does, and so is an id that is
// absent or null. A result that cannot be encoded is answered as the
// sidecar answers an exception.
func Answer(id json.RawMessage, result any, err *Error) jsonrpc.Message {
	if bytes.Equal(bytes.TrimSpace(id), []byte("null")) {
		id = nil
	}
	m, e := jsonrpc.NewResponse(id, result, err)
	if e != nil {
		m, _ = jsonrpc.NewResponse(id, nil, internal(e.Error()))
	}
	return m
}

// params reads a method's params, which must be an object.
func params(raw json.RawMessage) (map[string]json.RawMessage, *Error) {
	var p map[string]json.RawMessage
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &p) != nil {
		return nil, invalid("params must be an object")
	}
	return p, nil
}

// str reads a JSON string (not null).
func str(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// pyRepr is how Python's repr shows a JSON value in the sidecar's
// messages, near enough: strings quoted with ', null as None.
func pyRepr(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "None"
	}
	if s, ok := str(raw); ok {
		return "'" + s + "'"
	}
	switch v := string(bytes.TrimSpace(raw)); v {
	case "null":
		return "None"
	case "true":
		return "True"
	case "false":
		return "False"
	default:
		return v
	}
}

// pyText is Python's str() of a JSON value: a string as it is; "" when
// absent.
func pyText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if s, ok := str(raw); ok {
		return s
	}
	return strings.Trim(pyRepr(raw), "'")
}

// Session is the sidecar's AgentSession as it answers it.
type Session struct {
	SessionID    string          `json:"sessionId"`
	UserID       string          `json:"userId"`
	ProjectID    json.RawMessage `json:"projectId,omitempty"`
	ChatID       string          `json:"chatId"`
	CurrentStage string          `json:"currentStage"`
	Scenario     *string         `json:"scenario,omitempty"`
	StageData    json.RawMessage `json:"stageData,omitempty"`
	IsActive     bool            `json:"isActive"`
	CreatedAt    string          `json:"createdAt"`
	UpdatedAt    string          `json:"updatedAt"`
}

// Create reads agent.session.create's params into the session the
// sidecar would store: chatId is required (-32603 "'chatId'" without it)
// and must be a string; sessionId (newID() when falsy), userId ("local"),
// currentStage ("plan") and scenario ("agent-entry", null allowed) must be
// strings when given; projectId and stageData are kept as given. now is
// the creation time.
func Create(raw json.RawMessage, newID func() string, now string) (Session, *Error) {
	p, err := params(raw)
	if err != nil {
		return Session{}, err
	}
	chat, ok := p["chatId"]
	if !ok {
		return Session{}, internal("'chatId'")
	}
	var bad []string
	text := func(field string, v json.RawMessage, def string, nullOK bool) *string {
		if len(v) == 0 {
			return &def
		}
		if s, ok := str(v); ok {
			return &s
		}
		if nullOK && string(bytes.TrimSpace(v)) == "null" {
			return nil
		}
		bad = append(bad, field)
		return nil
	}
	orDefault := func(v json.RawMessage) json.RawMessage {
		if pyjson.Falsy(v) {
			return nil
		}
		return v
	}
	s := Session{IsActive: true, CreatedAt: now, UpdatedAt: now}
	sid := text("sessionId", orDefault(p["sessionId"]), "", false)
	user := text("userId", orDefault(p["userId"]), "local", false)
	chatID := text("chatId", chat, "", false)
	stage := text("currentStage", p["currentStage"], "plan", false)
	s.Scenario = text("scenario", p["scenario"], "agent-entry", true)
	if len(bad) > 0 {
		msg := fmt.Sprintf("%d validation error", len(bad))
		if len(bad) > 1 {
			msg += "s"
		}
		msg += " for AgentSession"
		for _, f := range bad {
			msg += "\n" + f + "\n  Input should be a valid string [type=string_type]"
		}
		return Session{}, internal(msg)
	}
	s.SessionID, s.UserID, s.ChatID, s.CurrentStage = *sid, *user, *chatID, *stage
	if s.SessionID == "" {
		s.SessionID = newID()
	}
	if v := p["projectId"]; string(bytes.TrimSpace(v)) != "null" {
		s.ProjectID = v
	}
	if v := p["stageData"]; string(bytes.TrimSpace(v)) != "null" {
		s.StageData = v
	}
	return s, nil
}

// Resume reads agent.session.resume's params: the session id to look up
// (-32602 "sessionId required" when falsy). A session the sidecar does
// not hold is answered with NotFound.
func Resume(raw json.RawMessage) (string, *Error) { return required(raw, "sessionId") }

// NotFound answers agent.session.resume of a session the sidecar does not
// hold: its sessions live in memory, so every session is unknown to a
// restarted sidecar.
func NotFound(sid string) *Error {
	return &Error{Code: CodeNotFound, Message: "session not found: " + sid, Kind: "invalid_request"}
}

// Cancel reads agent.chat.cancel's params: the stream to cancel (-32602
// "streamId required" when falsy). An unknown stream is no error: the
// answer is null either way.
func Cancel(raw json.RawMessage) (string, *Error) { return required(raw, "streamId") }

// required reads the one param a method needs, key, as text: -32602
// "<key> required" when it is falsy.
func required(raw json.RawMessage, key string) (string, *Error) {
	p, err := params(raw)
	if err != nil {
		return "", err
	}
	if pyjson.Falsy(p[key]) {
		return "", invalid(key + " required")
	}
	return pyText(p[key]), nil
}

// Message is one of agent.chat.stream's messages as the sidecar reads it.
type Message struct {
	Role    string
	Content string          // str() of content: a string as it is
	Raw     json.RawMessage // content as sent
}

// Chat is what the sidecar reads of agent.chat.stream's params.
type Chat struct {
	Provider string // lowercased, trimmed
	Model    string
	BaseURL  string
	APIKey   string
	StreamID string // the caller's, "" when the sidecar makes one up
	Messages []Message
}

// Providers are the provider names the sidecar's default provider factory
// builds (after trimming and lowercasing).
var Providers = []string{"openai", "openai_compat", "openai-compatible", "ollama", "anthropic", "claude"}

// ChatParams reads agent.chat.stream's params in the sidecar's order. With
// provider set, the default provider factory's rules apply: model is
// required and provider must be one of Providers (-32602 "failed to
// construct LLM provider: …"); without, neither is checked (the demo
// agent answers without a model). Then messages, when not falsy, must be
// a list of objects whose role is system, user, assistant or tool
// (-32602), and temperature, when given, a number or a numeric string
// (-32603, as float() fails).
func ChatParams(raw json.RawMessage, provider bool) (Chat, *Error) {
	p, err := params(raw)
	if err != nil {
		return Chat{}, err
	}
	var c Chat
	if v, ok := str(p["provider"]); ok {
		c.Provider = strings.ToLower(strings.TrimSpace(v))
	}
	if provider {
		construct := func(msg string) *Error { return invalid("failed to construct LLM provider: " + msg) }
		if pyjson.Falsy(p["model"]) {
			return Chat{}, construct("model is required")
		}
		if pv := p["provider"]; !pyjson.Falsy(pv) {
			if _, ok := str(pv); !ok {
				return Chat{}, construct("'" + pyType(pv) + "' object has no attribute 'strip'")
			}
		}
		known := false
		for _, n := range Providers {
			known = known || n == c.Provider
		}
		if !known {
			return Chat{}, construct("unknown provider: '" + c.Provider + "'")
		}
	}
	if !pyjson.Falsy(p["model"]) {
		c.Model = pyText(p["model"])
	}
	if v := cmpRaw(p["baseUrl"], p["base_url"]); v != nil {
		c.BaseURL = pyText(v)
	}
	if v := cmpRaw(p["apiKey"], p["api_key"]); v != nil {
		c.APIKey = pyText(v)
	}
	if s, ok := str(p["streamId"]); ok {
		c.StreamID = s
	}
	if m := p["messages"]; !pyjson.Falsy(m) {
		var items []json.RawMessage
		if json.Unmarshal(m, &items) != nil {
			return Chat{}, invalid("messages must be a list")
		}
		for _, it := range items {
			var e map[string]json.RawMessage
			if json.Unmarshal(it, &e) != nil || e == nil {
				return Chat{}, invalid("each message must be an object")
			}
			role, _ := str(e["role"])
			switch role {
			case "system", "user", "assistant", "tool":
			default:
				return Chat{}, invalid("invalid role: " + pyRepr(e["role"]))
			}
			content := e["content"]
			c.Messages = append(c.Messages, Message{Role: role, Content: pyText(content), Raw: content})
		}
	}
	if t := p["temperature"]; len(t) > 0 && string(bytes.TrimSpace(t)) != "null" {
		if !float(t) {
			if s, ok := str(t); ok {
				return Chat{}, internal("could not convert string to float: '" + s + "'")
			}
			return Chat{}, internal("float() argument must be a string or a real number, not '" + pyType(t) + "'")
		}
	}
	return c, nil
}

// float reports whether Python's float() takes the JSON value.
func float(raw json.RawMessage) bool {
	if s, ok := str(raw); ok {
		_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return err == nil
	}
	v := string(bytes.TrimSpace(raw))
	if v == "true" || v == "false" {
		return true
	}
	_, err := strconv.ParseFloat(v, 64)
	return err == nil
}

// pyType is the Python type name of a JSON value.
func pyType(raw json.RawMessage) string {
	v := string(bytes.TrimSpace(raw))
	switch {
	case v == "" || v == "null":
		return "NoneType"
	case v == "true" || v == "false":
		return "bool"
	case v[0] == '"':
		return "str"
	case v[0] == '[':
		return "list"
	case v[0] == '{':
		return "dict"
	case strings.ContainsAny(v, ".eE"):
		return "float"
	default:
		return "int"
	}
}

// cmpRaw is Python's `a or b` on JSON values.
func cmpRaw(a, b json.RawMessage) json.RawMessage {
	if !pyjson.Falsy(a) {
		return a
	}
	if !pyjson.Falsy(b) {
		return b
	}
	return nil
}
