package acp

// AgentHealth is a snapshot of the supervised agent process for /health.
type AgentHealth struct {
	// Command is the agent binary's file name (no path, no arguments).
	Command string `json:"command"`
	// PID is the running child's process id, 0 when none runs.
	PID int `json:"pid"`
	// Dialect is the detected ACP dialect ("v1", "legacy-l0", "legacy-l1",
	// "legacy-l2") or "steerable" for the steerable sidecar, empty before
	// the first successful handshake.
	Dialect string `json:"dialect"`
	// AgentName and AgentVersion are what the agent reported, if anything.
	AgentName    string `json:"agent_name,omitempty"`
	AgentVersion string `json:"agent_version,omitempty"`
	// ProtocolVersion, AgentStatus, AgentUptimeSeconds, LoadedProviders
	// and LoadedTools are what an agent reporting its own health (the
	// steerable sidecar's system.ping) said last; empty otherwise.
	ProtocolVersion    string   `json:"protocol_version,omitempty"`
	AgentStatus        string   `json:"agent_status,omitempty"`
	AgentUptimeSeconds float64  `json:"agent_uptime_s,omitempty"`
	LoadedProviders    []string `json:"loaded_providers,omitempty"`
	LoadedTools        *int     `json:"loaded_tools,omitempty"`
	// State is one of starting, ready, backoff, stopping, stopped.
	State string `json:"state"`
	// Running is true while a child process exists and has not exited.
	Running bool `json:"running"`
	// Restarts counts children started after the first.
	Restarts int `json:"restarts"`
	// UptimeSeconds is how long the current child has been ready.
	UptimeSeconds float64 `json:"uptime_s"`
	// LastError says why the agent is not running or last stopped.
	LastError string `json:"last_error,omitempty"`
	// BinaryMissing is true when the executable does not exist.
	BinaryMissing bool `json:"binary_missing,omitempty"`
}

// PoolHealth is a snapshot of the session pool for /health.
type PoolHealth struct {
	// Sessions is the number of live agent sessions.
	Sessions int `json:"sessions"`
	// CachedSession is true when any agent session is live.
	CachedSession bool `json:"cached_session"`
	// SessionTurns is the turn count of the most recently used session.
	SessionTurns int `json:"session_turns"`
	// SessionsResumed, SessionsRecreated and SessionsLost count, since the
	// start, the sessions whose agent process restarted under them:
	// resumed by the agent, recreated with the conversation the bridge
	// kept, or lost (dotty_agent_sessions_restored_total and
	// dotty_agent_sessions_lost_total).
	SessionsResumed   int `json:"sessions_resumed"`
	SessionsRecreated int `json:"sessions_recreated"`
	SessionsLost      int `json:"sessions_lost"`
}
