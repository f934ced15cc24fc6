package acpclient

import (
	"path/filepath"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
)

// Config is what the bridge tells an ACP agent beyond the supervisor's
// settings (acp.Config): who it is, the session's alias and cwd, and how
// permission requests are answered. Every field may be left zero.
type Config struct {
	// AgentAlias is sent as agentAlias on session/new to ZeroClaw 0.8+ (ZEROCLAW_AGENT_ALIAS).
	AgentAlias string
	// SessionCwd is sent as cwd on session/new (ZEROCLAW_SESSION_CWD). ZeroClaw
	// gets none when empty; other v1 agents get the bridge's working directory.
	SessionCwd string

	// ClientName and ClientVersion are sent in initialize's clientInfo.
	ClientName    string
	ClientVersion string

	// Permissions answers session/request_permission. Nil allows everything.
	Permissions agentconn.Permissioner

	// Tools is the robot's MCP tool server, offered to every v1 agent but
	// ZeroClaw in the mcpServers of session/new, load and resume, with a
	// token minted for the session (see ToolsEntry); nil, or ToolsURL
	// empty, offers none.
	Tools Tools
	// ToolsURL is where Tools is served over streamable HTTP
	// ("http://127.0.0.1:<port>/mcp"): given to agents that advertise
	// mcpCapabilities.http, and to the relay of the others.
	ToolsURL string
	// ToolsRelay is the command (argv) an agent without HTTP runs as a
	// stdio MCP server relaying to ToolsURL ("<bridge> mcp"); empty offers
	// such agents nothing.
	ToolsRelay []string
}

// Tools is the robot's tool server (*robottools.Server) as the client
// uses it: a bearer token per agent session, minted for the session's pool
// key when it is opened, bound to the agent's session id once the agent
// names it, revoked when the session ends.
type Tools interface {
	Mint(key string) string
	Bind(token, agentSessionID string)
	Revoke(token string)
}

// ToolsName is the robot's MCP server's name in every mcpServers entry.
const ToolsName = "dotty-robot"

// Environment of the stdio relay: where the bridge serves the tools and
// the session's token.
const (
	EnvToolsURL   = "DOTTY_MCP_URL"
	EnvToolsToken = "DOTTY_MCP_TOKEN" // #nosec G101 -- a variable's name, not a credential
)

// DefaultConfig returns the client name sent in initialize: the one place
// its default is written.
func DefaultConfig() Config {
	return Config{ClientName: "zeroclaw-bridge", ClientVersion: "dev"}
}

// withDefaults fills each field left zero with its DefaultConfig value,
// field by field.
func (c Config) withDefaults() Config {
	fieldcheck.Fill(&c, DefaultConfig(), "ClientName", "ClientVersion")
	return c
}

// Validate reports every setting outside its range as a *fieldcheck.Error
// naming the field ("SessionCwd"): the one range check of each field; the
// bridge's command line names the variable a value came from.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("SessionCwd", c.SessionCwd == "" || filepath.IsAbs(c.SessionCwd), c.SessionCwd, "an absolute path")
	errs.Check("ToolsURL", c.ToolsURL == "" || fieldcheck.HTTPURL(c.ToolsURL), c.ToolsURL, fieldcheck.WantHTTPURL)
	return errs.Err()
}
