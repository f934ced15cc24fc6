package acp

import "errors"

// Sentinel errors of the supervisor and the pool, beside the agent's in
// package agentconn. Match them with errors.Is.
var (
	// ErrBinaryMissing means the agent executable does not exist.
	ErrBinaryMissing = errors.New("agent binary missing")
	// ErrAgentUnavailable means the agent has failed and did not come back
	// within the unavailable grace; turns fail at once until it is ready.
	ErrAgentUnavailable = errors.New("agent unavailable")
	// ErrStopped means the supervisor has shut down.
	ErrStopped = errors.New("agent supervisor stopped")
)
