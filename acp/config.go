package acp

import (
	"cmp"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
)

// Config configures a Supervisor: which agent to run and how to keep it alive.
// The zero value is not runnable (Command is required); every other field has
// its default in DefaultConfig, filled field by field when left zero.
type Config struct {
	// Command is the agent executable (absolute path or a name looked up on PATH).
	Command string
	// Args follow Command.
	Args []string
	// Protocol is what the child speaks (required): acpclient's for an
	// ACP agent, steerable's for the steerable sidecar.
	Protocol agentconn.Protocol
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

// DefaultConfig returns the supervisor's timings and bounds (bridge.py's
// handshake timeout and stderr rate among them): the one place their
// defaults are written. Command and Protocol are the caller's to set.
func DefaultConfig() Config {
	return Config{InitTimeout: 10 * time.Second, CancelGrace: 2 * time.Second, StopGrace: 2 * time.Second,
		UnavailableGrace: 2 * time.Second, BackoffInitial: 200 * time.Millisecond, BackoffMax: 30 * time.Second,
		HealthyReset: time.Minute, StderrLinesPerSecond: 200}
}

// withDefaults fills each field left zero with its DefaultConfig value,
// field by field; WriteTimeout defaults to InitTimeout.
func (c Config) withDefaults() Config {
	fieldcheck.Fill(&c, DefaultConfig(), "InitTimeout", "CancelGrace", "StopGrace", "UnavailableGrace",
		"BackoffInitial", "BackoffMax", "HealthyReset", "StderrLinesPerSecond")
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = c.InitTimeout
	}
	c.Logger, c.Clock = cmp.Or(c.Logger, hclog.NewNullLogger()), cmp.Or(c.Clock, clockwork.NewRealClock())
	return c
}

// Validate reports every setting outside its range as a *fieldcheck.Error
// naming the field ("InitTimeout"): the one range check of each field;
// the bridge's command line names the variable a value came from. The
// timeouts and graces want more than 0 (New fills a zero one, but a
// setting of 0 is a mistake). A missing executable is not an error: the
// bridge runs without its brain and says so on /health; an empty Command
// or a nil Protocol is a mistake of the caller, which NewSupervisor panics
// on.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"InitTimeout", c.InitTimeout}, {"CancelGrace", c.CancelGrace}, {"UnavailableGrace", c.UnavailableGrace}} {
		errs.Check(d.field, d.v > 0, d.v, "more than 0")
	}
	errs.CheckRef("BackoffInitial", c.BackoffMax <= 0 || c.BackoffInitial <= c.BackoffMax, c.BackoffInitial, "at most", "BackoffMax")
	return errs.Err()
}

// SessionKeyMode selects how the pool maps callers to agent sessions.
type SessionKeyMode string

const (
	// KeyPerSession gives every caller session_id its own agent session.
	KeyPerSession SessionKeyMode = "session_id"
	// KeyShared gives all callers bridge.py's single shared agent session.
	KeyShared SessionKeyMode = "shared"
)

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

// DefaultPoolConfig returns bridge.py's session rotation (idle time,
// turns, age) with the bridge's bounds on sessions and waiting turns: the
// one place their defaults are written.
func DefaultPoolConfig() PoolConfig {
	return PoolConfig{KeyMode: KeyPerSession, MaxSessions: 8, SessionIdle: 300 * time.Second, SessionMaxTurns: 50,
		SessionMaxAge: 1800 * time.Second, SessionQueue: 64}
}

// withDefaults fills each field left zero with its DefaultPoolConfig
// value, field by field; MaxKeys and ReapInterval follow MaxSessions and
// SessionIdle.
func (c PoolConfig) withDefaults() PoolConfig {
	fieldcheck.Fill(&c, DefaultPoolConfig(), "KeyMode", "MaxSessions", "SessionIdle", "SessionMaxTurns", "SessionMaxAge", "SessionQueue")
	if c.MaxKeys <= 0 {
		c.MaxKeys = max(1024, 4*c.MaxSessions)
	}
	if c.ReapInterval <= 0 {
		c.ReapInterval = max(c.SessionIdle/4, time.Second)
	}
	c.Logger, c.Clock = cmp.Or(c.Logger, hclog.NewNullLogger()), cmp.Or(c.Clock, clockwork.NewRealClock())
	return c
}

// Validate reports every setting outside its range as a *fieldcheck.Error
// naming the field ("MaxSessions"): the one range check of each field;
// the bridge's command line names the variable a value came from. The
// bounds want at least 1 and the rotation times more than 0 (New fills a
// zero one, but a setting of 0 is a mistake); an empty KeyMode is
// KeyPerSession.
func (c PoolConfig) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("KeyMode", c.KeyMode == "" || c.KeyMode == KeyPerSession || c.KeyMode == KeyShared, c.KeyMode,
		string(KeyPerSession)+" or "+string(KeyShared))
	errs.Check("SessionIdle", c.SessionIdle > 0, c.SessionIdle, "more than 0")
	errs.Check("SessionMaxAge", c.SessionMaxAge > 0, c.SessionMaxAge, "more than 0")
	for _, n := range []struct {
		field string
		v     int
	}{{"SessionMaxTurns", c.SessionMaxTurns}, {"MaxSessions", c.MaxSessions}, {"SessionQueue", c.SessionQueue}} {
		errs.Check(n.field, n.v >= 1, n.v, "at least 1")
	}
	return errs.Err()
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
