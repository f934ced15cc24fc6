package agentconn

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
)

// Conn is one live connection to one agent process (one child generation)
// as acp's Pool drives it, whatever protocol it speaks: acpclient.Client
// speaks ACP, the steerable package's connection speaks the steerable
// sidecar's protocol. Every method is safe for concurrent use and bounded
// in time.
type Conn interface {
	// Done is closed when the connection can no longer be used; Err then
	// says why, and is nil while it is alive.
	Done() <-chan struct{}
	Err() error
	// Traits says what the pool may rely on.
	Traits() Traits
	// TurnLease is non-nil for agents that serve one turn at a time in
	// total: a turn holds its only slot while it runs.
	TurnLease() chan struct{}

	// NewSession creates an agent session, waiting at most InitTimeout
	// and never past ctx. The pool puts the session's key in ctx
	// (SessionKey).
	NewSession(ctx context.Context) (string, error)
	// ResumeSession reopens, on this connection, a session created on an
	// earlier one to the same agent, and returns the id to use from now
	// on: sid itself when the agent resumed the session, another id when
	// it opened a new one carrying the conversation over (the pool counts
	// the two apart). ctx carries the key as for NewSession. It fails with
	// ErrNotSupported when Traits().Resume is false.
	ResumeSession(ctx context.Context, sid string) (string, error)
	// CloseSession retires sid: best effort and bounded.
	CloseSession(ctx context.Context, sid string)
	// ForgetSession drops sid without telling the agent (it lost it, or
	// the connection is gone).
	ForgetSession(sid string)
	// LateSessions counts sessions still being created after their caller
	// stopped waiting: the agent may hold one for each.
	LateSessions() int

	// BeginTurn routes the text streamed for m's session into m until
	// EndTurn(m).
	BeginTurn(m *Mailbox)
	EndTurn(m *Mailbox)
	// Prompt sends text as sid's next turn and waits for the turn's end.
	// Ending ctx abandons the wait (not the agent's turn: see CancelTurn).
	Prompt(ctx context.Context, sid, text string) (PromptResult, error)
	// CancelTurn asks the agent to stop sid's running turn without
	// waiting for it; ErrNotSupported when Traits().Cancel is false.
	CancelTurn(sid string) error
	// Recycle asks the connection's owner to replace the agent process.
	Recycle(reason string)
}

// Traits are the properties of a connection the pool's rules depend on.
type Traits struct {
	// Cancel: a running turn can be cancelled in protocol. Without it a
	// barge-in detaches the turn and the process is recycled if the turn
	// outlives InitTimeout.
	Cancel bool
	// Resume: sessions survive a restart of the agent process and are
	// reopened with ResumeSession. A session whose agent dies, even in
	// the middle of a turn, stays bound to its key for the next turn to
	// reopen.
	Resume bool
	// MaxSessions is the agent's own session limit, 0 when it has none.
	MaxSessions int
	// InitTimeout bounds session creation and the wait for a process
	// still busy with a detached turn; CancelGrace is how long a
	// cancelled turn may take to confirm.
	InitTimeout time.Duration
	CancelGrace time.Duration
	// KeepCancelled: a cancelled turn still running after CancelGrace
	// keeps its session, because the agent answers once it has finished
	// what it could not interrupt (ZeroClaw 0.8.0 runs a tool to its end):
	// the key's next turn waits for that answer, within its own deadline.
	// Without it, the session is retired after CancelGrace.
	KeepCancelled bool
}

// DefaultKey is the pool key used when a caller sends no session id.
const DefaultKey = "default"

type sessionKeyCtx struct{}

// WithSessionKey returns ctx carrying key, the pool key a session is
// opened for, so a protocol can name the conversation to its agent.
func WithSessionKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, sessionKeyCtx{}, key)
}

// SessionKey is the pool key ctx carries, "" when none.
func SessionKey(ctx context.Context) string {
	k, _ := ctx.Value(sessionKeyCtx{}).(string)
	return k
}

// PromptResult is a finished turn as the agent reported it.
type PromptResult struct {
	// Content is the agent's final text when it sent one (HasContent);
	// otherwise the turn's text is its streamed chunks.
	Content    string
	HasContent bool
	// StopReason is "end_turn", "cancelled" or the agent's own reason.
	StopReason string
}

// Stop reasons every protocol reports.
const (
	StopEndTurn   = "end_turn"
	StopCancelled = "cancelled"
)

// Protocol is how acp's Supervisor speaks to the children it spawns:
// acpclient's for ACP agents, steerable's for the steerable sidecar.
type Protocol interface {
	// Open wraps a freshly spawned child's pipes in a connection. It
	// starts the goroutines that read them (through Child.Go) and returns
	// at once, sending nothing.
	Open(ch Child) (ChildConn, error)
}

// ChildConn is a Conn to a child acp's Supervisor owns, with the hooks the
// supervisor drives it through.
type ChildConn interface {
	Conn
	// Handshake waits until the agent is ready for requests (ACP:
	// initialize answered), within InitTimeout and ctx. It returns
	// promptly once the connection dies.
	Handshake(ctx context.Context) error
	// Info describes the agent for /health and the logs; it never blocks.
	Info() AgentInfo
	// StderrLine sees each line of the child's stderr, cleaned, before
	// the log's rate cap can drop it. It must not block.
	StderrLine(line string)
	// Shutdown is a graceful stop's first step, taken while the child
	// still runs: ask the agent to end its work and exit. It reports
	// whether it already waited for the exit (StopGrace at most); if not,
	// the supervisor waits after closing stdin.
	Shutdown(exited <-chan struct{}) bool
	// Abort marks the connection dead with err: calls in flight and
	// later ones fail at once.
	Abort(err error)
	// CloseCause says why the connection closed, when it knows more than
	// the process status does ("" otherwise).
	CloseCause() string
	// Wait waits for the connection's own background work; the
	// supervisor calls it once the child is reaped and its pipes drained.
	Wait()
}

// Child is what a Protocol gets to speak to one spawned child.
type Child struct {
	// Gen is the child's generation, counted from 1.
	Gen uint64
	// InitTimeout bounds the handshake and session creation; CancelGrace
	// is how long a cancelled turn may take to confirm; StopGrace is each
	// step of the supervisor's stop ladder (acp.Config's, defaults applied).
	InitTimeout time.Duration
	CancelGrace time.Duration
	StopGrace   time.Duration
	// Clock is the supervisor's clock.
	Clock clockwork.Clock
	// Metrics receives the series a protocol fills; nil records nothing.
	Metrics *Metrics
	// Stdin takes whole frames: writes are serialised and each is bounded
	// by WriteTimeout (a child that stops reading is recycled).
	Stdin io.Writer
	// Stdout is the child's output; it ends when the child (and every
	// holder of the pipe) is gone, or the supervisor gives up draining.
	Stdout io.Reader
	// Log is the supervisor's logger for this child (gen and pid set).
	Log hclog.Logger
	// Noise logs a line of stdout that is not a protocol frame: cleaned of
	// control characters and rate-capped.
	Noise func(line string)
	// Go runs f on a goroutine the supervisor waits for before it reaps
	// the child: for the readers of the child's pipes.
	Go func(f func())
	// Recycle asks the supervisor to replace the child.
	Recycle func(reason string)
}

// AgentInfo describes a ready agent for /health and the logs.
type AgentInfo struct {
	// Dialect is the protocol flavour: "v1", "legacy-l0" … for ACP,
	// "steerable" for the steerable sidecar.
	Dialect string
	// Name and Version are what the agent reported, if anything.
	Name    string
	Version string
	// ProtocolVersion is the agent's protocol version when it reports one
	// apart from its own version.
	ProtocolVersion string
	// Status is the agent's own health word ("ok"), when it reports one.
	Status string
	// Uptime is the agent's own uptime, when it reports one.
	Uptime time.Duration
	// LoadedProviders and LoadedTools are what the agent has loaded, when
	// it reports them (LoadedTools nil: not reported).
	LoadedProviders []string
	LoadedTools     *int
	// Details are extra key/value pairs for the "agent ready" log line.
	Details []any
}

// mailboxCap bounds the text buffered for one turn between the
// connection's reader and the turn's owner.
const mailboxCap = 1 << 20

// Mailbox holds the text streamed for one running turn between the
// connection's reader, which appends without ever blocking, and the turn's
// owner in the pool, which drains it. It holds at most 1 MiB; past that,
// text is dropped and counted.
type Mailbox struct {
	sid    string
	signal chan struct{} // cap 1: new text is waiting
	cancel chan struct{} // closed when the turn is being cancelled

	mu       sync.Mutex
	pending  []string
	size     int
	closed   bool
	canceled bool
}

// NewMailbox returns the empty mailbox of a turn on session sid.
func NewMailbox(sid string) *Mailbox {
	return &Mailbox{sid: sid, signal: make(chan struct{}, 1), cancel: make(chan struct{})}
}

// SessionID is the agent session the turn runs on.
func (t *Mailbox) SessionID() string { return t.sid }

// Push appends text without blocking. It reports false with the reason
// label of dotty_acp_dropped_updates_total when the text was dropped: the
// turn was cancelled or has ended ("cancelled_turn"), or the mailbox is
// full ("mailbox_full").
func (t *Mailbox) Push(text string) (ok bool, reason string) {
	t.mu.Lock()
	switch {
	case t.closed || t.canceled:
		t.mu.Unlock()
		return false, "cancelled_turn"
	case t.size+len(text) > mailboxCap:
		t.mu.Unlock()
		return false, "mailbox_full"
	}
	t.pending = append(t.pending, text)
	t.size += len(text)
	t.mu.Unlock()
	select {
	case t.signal <- struct{}{}:
	default:
	}
	return true, ""
}

// Drain takes the waiting text.
func (t *Mailbox) Drain() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pending
	t.pending, t.size = nil, 0
	return p
}

// MarkCancelled stops delivery and releases pending permission waits.
func (t *Mailbox) MarkCancelled() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.canceled {
		t.canceled = true
		t.pending, t.size = nil, 0
		close(t.cancel)
	}
}

// Signal receives when new text is waiting to be drained.
func (t *Mailbox) Signal() <-chan struct{} { return t.signal }

// Cancelled is closed once the turn is being cancelled.
func (t *Mailbox) Cancelled() <-chan struct{} { return t.cancel }

// IsCancelled reports whether the turn is being cancelled.
func (t *Mailbox) IsCancelled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.canceled
}

// Close refuses later text; the pool calls it after the connection's EndTurn.
func (t *Mailbox) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
}
