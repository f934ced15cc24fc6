package agentconn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

// Sentinel errors callers branch on. Match them with errors.Is.
var (
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
)

// JSON-RPC error codes with a meaning the bridge acts on.
const (
	codeSessionNotFound = -32000
	codeSessionLimit    = -32001
	codeSessionBusy     = -32002
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
		return e.Code == jsonrpc.CodeMethodNotFound
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

// Kinds of AgentError: classes of failure an agent reports, each of which
// the bridge counts under its own label and answers with its own fallback.
const (
	// KindBudgetExhausted: the agent's spending or token budget is used up.
	KindBudgetExhausted = "budget_exhausted"
	// KindPolicyDenied: the agent's policy refused the request.
	KindPolicyDenied = "policy_denied"
	// KindToolDispatch: a tool the agent called failed to run.
	KindToolDispatch = "tool_dispatch"
	// KindStorage: the agent's own storage failed.
	KindStorage = "storage"
	// KindTransport: the agent could not reach its model provider.
	KindTransport = "transport"
)

// AgentErrorKinds returns the AgentError kinds, in a stable order.
func AgentErrorKinds() []string {
	return []string{KindBudgetExhausted, KindPolicyDenied, KindToolDispatch, KindStorage, KindTransport}
}

// AgentError is a failure the agent reported with a class the bridge acts
// on (the steerable sidecar's failure classes, by its error's kind or code
// or the class its stream.error names). Match it with errors.As; Kind is
// stable, so callers can branch on it without knowing which agent runs.
type AgentError struct {
	// Kind is one of the Kind constants, or "" when the agent named a
	// class the bridge does not know.
	Kind string
	// Method is the call that failed ("agent.chat.stream").
	Method string
	// Code is the JSON-RPC error code, 0 when the failure came in-stream
	// without one.
	Code int
	// Class is the agent's own name for the failure, if it gave one
	// ("BudgetExhaustedError").
	Class string
	// Message is the agent's message.
	Message string
}

func (e *AgentError) Error() string {
	kind := e.Kind
	if kind == "" {
		kind = "agent error"
	}
	s := e.Method + ": " + kind
	if e.Code != 0 {
		s += fmt.Sprintf(" (%d)", e.Code)
	}
	if e.Class != "" && e.Class != e.Kind {
		s += " " + e.Class
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// UnsupportedError is a handshake failure because the bridge cannot drive
// the agent (an ACP protocol version it does not speak); the supervisor
// counts the restart as "unsupported".
type UnsupportedError struct{ Reason string }

func (e *UnsupportedError) Error() string { return "unsupported agent: " + e.Reason }
