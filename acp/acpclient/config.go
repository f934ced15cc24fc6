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
}

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
	return errs.Err()
}
