package acpclient

import (
	"sync"

	"github.com/coder/acp-go-sdk"
)

// toolsEntry mints a token for pool key key and returns the mcpServers
// entry of the robot's tools carrying it: over HTTP for an agent that
// advertises mcpCapabilities.http, else the stdio relay. ok is false, and
// nothing is minted, when the agent gets no entry: the feature is off,
// the agent is ZeroClaw (it reads no mcpServers) or legacy, or it needs
// the relay and none is configured.
func (c *Client) toolsEntry(key string) (entry acp.McpServer, token string, ok bool) {
	cfg := c.cfg
	if cfg.Tools == nil || cfg.ToolsURL == "" || c.caps.Dialect != DialectV1 || c.caps.ZeroClaw ||
		(!c.caps.MCPHTTP && len(cfg.ToolsRelay) == 0) {
		return acp.McpServer{}, "", false
	}
	token = cfg.Tools.Mint(key)
	if c.caps.MCPHTTP {
		return acp.McpServer{Http: &acp.McpServerHttpInline{Type: "http", Name: ToolsName, Url: cfg.ToolsURL,
			Headers: []acp.HttpHeader{{Name: "Authorization", Value: "Bearer " + token}}}}, token, true
	}
	return acp.McpServer{Stdio: &acp.McpServerStdio{Name: ToolsName, Command: cfg.ToolsRelay[0],
		Args: append([]string{}, cfg.ToolsRelay[1:]...),
		Env:  []acp.EnvVariable{{Name: EnvToolsURL, Value: cfg.ToolsURL}, {Name: EnvToolsToken, Value: token}}}}, token, true
}

// sessionTokens is the robot-tools token of each agent session on one
// client. An entry lives as long as its session does on this client, so
// the table is bounded by the client's sessions; once the client is dead
// (closed) every token is revoked and one kept later is revoked at once.
type sessionTokens struct {
	tools Tools // nil: the feature is off, every method does nothing

	mu     sync.Mutex
	bySID  map[string]string
	closed bool
}

// keep binds token to agent session sid and holds it for the session,
// revoking the token the session held before (a session reopened on the
// same client).
func (s *sessionTokens) keep(sid, token string) {
	if s.tools == nil || token == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.tools.Revoke(token)
		return
	}
	s.tools.Bind(token, sid)
	if old, ok := s.bySID[sid]; ok && old != token {
		s.tools.Revoke(old)
	}
	if s.bySID == nil {
		s.bySID = map[string]string{}
	}
	s.bySID[sid] = token
}

// drop revokes a token no session holds (its open failed or was given up).
func (s *sessionTokens) drop(token string) {
	if s.tools != nil && token != "" {
		s.tools.Revoke(token)
	}
}

// end revokes session sid's token.
func (s *sessionTokens) end(sid string) {
	if s.tools == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token, ok := s.bySID[sid]; ok {
		delete(s.bySID, sid)
		s.tools.Revoke(token)
	}
}

// close revokes every token: the client is dead.
func (s *sessionTokens) close() {
	if s.tools == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for sid, token := range s.bySID {
		s.tools.Revoke(token)
		delete(s.bySID, sid)
	}
}

// len is the number of tokens held.
func (s *sessionTokens) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bySID)
}
