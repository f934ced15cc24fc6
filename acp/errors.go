package acp

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors callers branch on. Match them with errors.Is.
var (
	// ErrBinaryMissing means the agent executable does not exist.
	ErrBinaryMissing = errors.New("agent binary missing")
	// ErrAgentGone means the agent process exited or its connection closed.
	ErrAgentGone = errors.New("agent process gone")
	// ErrSessionNotFound means the agent no longer knows the session (-32000).
	ErrSessionNotFound = errors.New("agent session not found")
	// ErrSessionLimit means the agent or the pool has no room for another session.
	ErrSessionLimit = errors.New("agent session limit reached")
	// ErrSessionBusy means the agent already runs a turn on the session (-32002).
	ErrSessionBusy = errors.New("agent session busy")
	// ErrNotSupported means the agent's dialect lacks the operation.
	ErrNotSupported = errors.New("not supported by agent dialect")
	// ErrAgentUnavailable means the agent has failed and did not come back
	// within the unavailable grace; turns fail at once until it is ready.
	ErrAgentUnavailable = errors.New("agent unavailable")
	// ErrStopped means the supervisor has shut down.
	ErrStopped = errors.New("agent supervisor stopped")
)

// JSON-RPC error codes with a meaning the bridge acts on.
const (
	codeSessionNotFound = -32000
	codeSessionLimit    = -32001
	codeSessionBusy     = -32002
	codeMethodNotFound  = -32601
	codeInvalidParams   = -32602
	codeInternal        = -32603
	codeCancelled       = -32800
)

// RPCError is a JSON-RPC error answered by the agent for one method call.
// It matches the sentinels above through errors.Is.
type RPCError struct {
	Method  string
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("%s: rpc error %d: %s", e.Method, e.Code, e.Message)
}

// Is maps agent error codes onto the package sentinels. -32000 is also
// used by the SDK for "authentication required", so it only counts as
// session-not-found when the message does not say otherwise; a message
// that names a lost session counts whatever its code (bridge.py's rule).
func (e *RPCError) Is(target error) bool {
	switch target {
	case ErrSessionNotFound:
		if e.Code == codeSessionNotFound && !strings.Contains(strings.ToLower(e.Message), "auth") {
			return true
		}
		return messageNamesLostSession(e.Message)
	case ErrSessionLimit:
		return e.Code == codeSessionLimit
	case ErrSessionBusy:
		return e.Code == codeSessionBusy
	case ErrNotSupported:
		return e.Code == codeMethodNotFound
	}
	return false
}

// messageNamesLostSession is bridge.py's fallback test: the lowercased
// message contains "session" and one of not found, invalid, expired, unknown.
func messageNamesLostSession(msg string) bool {
	m := strings.ToLower(msg)
	if !strings.Contains(m, "session") {
		return false
	}
	for _, w := range []string{"not found", "invalid", "expired", "unknown"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}
