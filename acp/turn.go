package acp

import "time"

// TurnRequest is one voice turn for Pool.Turn.
type TurnRequest struct {
	// Key selects the agent session (the caller's session_id); empty means
	// agentconn.DefaultKey. Ignored in KeyShared mode.
	Key string
	// Prompt builds the text sent to the agent. It is called after the
	// session lease is held, with the number of turns the session has
	// completed (0 on a fresh session and on the lost-session retry).
	Prompt func(turnIndex int) string
	// OnChunk receives each streamed text (ACP agent_message_chunk,
	// steerable stream.chunk) in order, on the caller's goroutine. It is
	// never called after the turn's ctx ends.
	OnChunk func(text string)
	// Flush, when set, is called on the caller's goroutine after OnChunk
	// has been given the texts that arrived together, so a writer can send
	// them in one write. It is not called after the texts delivered with
	// the turn's end: the caller's next write (its last frame) carries them.
	Flush func()
	// NoEvict makes a turn whose key needs a new session take only a free
	// slot: it never closes another key's idle session to make room, nor
	// waits in the slot queue (it waits only for a close already under
	// way), and fails at once with ErrSessionLimit when there is none. The
	// greeter's turns use it, so they never push a conversation out.
	NoEvict bool
}

// TurnResult describes a completed turn.
type TurnResult struct {
	// Text is the agent's final text: result.content when the agent sent
	// one, else the concatenated chunks.
	Text string
	// StopReason is the agent's stop reason ("end_turn" when it sent none).
	StopReason string
	// SessionID is the agent's session id.
	SessionID string
	// TurnIndex is the index Prompt was called with for the sent prompt.
	TurnIndex int
	// Phases times the turn.
	Phases Phases
}

// Phases are a turn's latency phases, as bridge.py logged them.
type Phases struct {
	// Total is lease wait + session creation + prompt.
	Total time.Duration
	// Lease is the wait for the session (and for a ready agent).
	Lease time.Duration
	// NewSession is the time spent creating (or reopening) agent sessions
	// for this turn.
	NewSession time.Duration
	// Prompt is the session/prompt round trip.
	Prompt time.Duration
	// Reused is true when no session was created or reopened for this turn.
	Reused bool
}
