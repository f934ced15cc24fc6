package acp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
)

// Config configures a Supervisor: which agent to run and how to keep it alive.
// The zero value is not runnable (Command is required); every other field has
// a default applied by withDefaults.
type Config struct {
	// Command is the agent executable (absolute path or a name looked up on PATH).
	Command string
	// Args follow Command; nil means ["acp"], as bridge.py ran it, when
	// Protocol is ACP, and none otherwise.
	Args []string
	// Protocol is what the child speaks; nil is ACP. The steerable
	// package provides the steerable sidecar's.
	Protocol Protocol
	// Env is added to the bridge's own environment for the child
	// (after RUST_LOG=error, so an entry here wins).
	Env []string
	// DropEnv names variables of the bridge's environment the child does
	// not get (the bridge's own settings and secrets).
	DropEnv []string
	// Dir is the child's working directory; empty means the bridge's.
	Dir string

	// InitTimeout bounds the handshake (initialize, or the sidecar's ready
	// signal) and session creation (ZEROCLAW_INIT_TIMEOUT, 10 s).
	InitTimeout time.Duration
	// CancelGrace is how long a cancelled turn waits for the agent's
	// cancelled result before the session is abandoned (ZEROCLAW_CANCEL_GRACE, 2 s).
	CancelGrace time.Duration
	// StopGrace is each step of the stop ladder: close stdin, wait, SIGTERM
	// the process group, wait, SIGKILL (2 s).
	StopGrace time.Duration
	// WriteTimeout bounds one frame written to the child's stdin; a child that
	// does not read for this long is treated as wedged (default InitTimeout).
	WriteTimeout time.Duration

	// AgentAlias is sent as agentAlias on session/new to ZeroClaw 0.8+ (ZEROCLAW_AGENT_ALIAS).
	AgentAlias string
	// SessionCwd is sent as cwd on session/new (ZEROCLAW_SESSION_CWD). ZeroClaw
	// gets none when empty; other v1 agents get the bridge's working directory.
	SessionCwd string

	// ClientName and ClientVersion are sent in initialize's clientInfo.
	ClientName    string
	ClientVersion string

	// Permissions answers session/request_permission. Nil allows everything.
	Permissions Permissioner

	// UnavailableGrace is how long Acquire waits for an agent that has
	// failed since it was last ready before failing with
	// ErrAgentUnavailable (ZEROCLAW_UNAVAILABLE_GRACE, 2 s). The first start
	// is not cut short.
	UnavailableGrace time.Duration
	// BackoffInitial, BackoffMax and HealthyReset shape restarts: the delay
	// starts at BackoffInitial (200 ms), doubles up to BackoffMax (30 s), never
	// gives up, and resets once a child has run for HealthyReset (60 s).
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	HealthyReset   time.Duration

	// StderrLinesPerSecond caps the child's stderr lines logged per second
	// (200, as bridge.py); the excess is summarised in one "dropped N lines" line.
	StderrLinesPerSecond int

	// Logger receives everything; the child's stderr goes to its "child"
	// sub-logger and SDK diagnostics to "rpc". Nil discards.
	Logger hclog.Logger
	// Metrics receives the supervisor's series. Nil records nothing.
	Metrics *Metrics
	// Clock times backoff, the unavailable grace and health uptime; nil is
	// the real clock.
	Clock clockwork.Clock
}

func (c Config) withDefaults() Config {
	if c.Args == nil && c.Protocol == nil {
		c.Args = []string{"acp"}
	}
	if c.InitTimeout <= 0 {
		c.InitTimeout = 10 * time.Second
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = 2 * time.Second
	}
	if c.StopGrace <= 0 {
		c.StopGrace = 2 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = c.InitTimeout
	}
	if c.ClientName == "" {
		c.ClientName = "zeroclaw-bridge"
	}
	if c.ClientVersion == "" {
		c.ClientVersion = "dev"
	}
	if c.UnavailableGrace <= 0 {
		c.UnavailableGrace = 2 * time.Second
	}
	if c.BackoffInitial <= 0 {
		c.BackoffInitial = 200 * time.Millisecond
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 30 * time.Second
	}
	if c.HealthyReset <= 0 {
		c.HealthyReset = time.Minute
	}
	if c.StderrLinesPerSecond <= 0 {
		c.StderrLinesPerSecond = 200
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	return c
}

// Validate reports configuration errors that would make the supervisor
// unable to ever start an agent. A missing executable is not one of them:
// the bridge runs without its brain and says so on /health.
func (c Config) Validate() error {
	var errs []error
	if c.Command == "" {
		errs = append(errs, errors.New("agent command is empty"))
	}
	if c.SessionCwd != "" && !filepath.IsAbs(c.SessionCwd) {
		errs = append(errs, fmt.Errorf("session cwd %q is not an absolute path", c.SessionCwd))
	}
	if c.BackoffMax > 0 && c.BackoffInitial > c.BackoffMax {
		errs = append(errs, fmt.Errorf("backoff initial %s exceeds max %s", c.BackoffInitial, c.BackoffMax))
	}
	return errors.Join(errs...)
}

// SessionKeyMode selects how the pool maps callers to agent sessions.
type SessionKeyMode string

const (
	// KeyPerSession gives every caller session_id its own agent session.
	KeyPerSession SessionKeyMode = "session_id"
	// KeyShared gives all callers bridge.py's single shared agent session.
	KeyShared SessionKeyMode = "shared"
)

// DefaultKey is the pool key used when a caller sends no session id.
const DefaultKey = "default"

// PoolConfig configures a Pool.
type PoolConfig struct {
	// KeyMode is KeyPerSession (default) or KeyShared (ZEROCLAW_SESSION_KEY).
	KeyMode SessionKeyMode
	// MaxSessions bounds live agent sessions (ZEROCLAW_MAX_SESSIONS, 8); it is
	// lowered further to stay below an agent's advertised maxSessions.
	MaxSessions int
	// SessionIdle rotates a session unused for longer (ZEROCLAW_SESSION_IDLE, 300 s).
	SessionIdle time.Duration
	// SessionMaxTurns rotates a session after this many turns (ZEROCLAW_SESSION_MAX_TURNS, 50).
	SessionMaxTurns int
	// SessionMaxAge rotates a session older than this (ZEROCLAW_SESSION_MAX_AGE_SEC, 1800 s).
	SessionMaxAge time.Duration
	// SessionQueue bounds the turns waiting for a session slot while every
	// session is in a turn (ZEROCLAW_SESSION_QUEUE, 64); past it a turn
	// fails at once with ErrSessionLimit.
	SessionQueue int
	// MaxKeys bounds the caller session keys the pool remembers (1024);
	// past it the least recently used key with no session is forgotten.
	MaxKeys int
	// ReapInterval is how often idle sessions are closed in the background
	// (default SessionIdle/4, at least 1 s).
	ReapInterval time.Duration

	// Logger and Metrics as in Config.
	Logger  hclog.Logger
	Metrics *Metrics
	// Clock times idleness, ages, waits and cancel grace; nil is the real
	// clock.
	Clock clockwork.Clock
}

func (c PoolConfig) withDefaults() PoolConfig {
	if c.KeyMode == "" {
		c.KeyMode = KeyPerSession
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 8
	}
	if c.SessionIdle <= 0 {
		c.SessionIdle = 300 * time.Second
	}
	if c.SessionQueue <= 0 {
		c.SessionQueue = 64
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = max(1024, 4*c.MaxSessions)
	}
	if c.SessionMaxTurns <= 0 {
		c.SessionMaxTurns = 50
	}
	if c.SessionMaxAge <= 0 {
		c.SessionMaxAge = 1800 * time.Second
	}
	if c.ReapInterval <= 0 {
		c.ReapInterval = max(c.SessionIdle/4, time.Second)
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	return c
}

// Validate reports invalid pool settings.
func (c PoolConfig) Validate() error {
	switch c.KeyMode {
	case "", KeyPerSession, KeyShared:
		return nil
	}
	return fmt.Errorf("session key mode %q is not %q or %q", c.KeyMode, KeyPerSession, KeyShared)
}

// LookupAgent resolves the agent executable the way the bridge does when
// ZEROCLAW_BIN is unset: "zeroclaw" on PATH, then fallback (for example
// /root/.cargo/bin/zeroclaw). It returns "" when neither exists.
func LookupAgent(lookPath func(string) (string, error), fallback string) string {
	if p, err := lookPath("zeroclaw"); err == nil {
		return p
	}
	if fallback != "" {
		if st, err := os.Stat(fallback); err == nil && !st.IsDir() {
			return fallback
		}
	}
	return ""
}
