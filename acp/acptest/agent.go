package acptest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

// Reply scripts one prompt's answer.
type Reply struct {
	// FirstDelay passes before the first chunk; ChunkDelay between chunks.
	FirstDelay, ChunkDelay time.Duration
	// Chunks are streamed as agent_message_chunk updates.
	Chunks []string
	// Err fails the prompt with this JSON-RPC error after the chunks.
	Err *acpsdk.RequestError
	// Hang keeps the turn open until it is cancelled.
	Hang bool
	// IgnoreCancel makes delays and Hang ignore session/cancel.
	IgnoreCancel bool
	// Tools are called after the chunks, each asking permission (see
	// Agent.Asked) and running the way Shape's agent does, in its Locale
	// (ZeroClaw's approval title: en, es, fr, ja or zh-CN; default en). A
	// turn cancelled meanwhile ends "cancelled" as that agent's would.
	Tools  []Tool
	Shape  Shape
	Locale string
}

// Prompt is one prompt the agent received.
type Prompt struct {
	SessionID string
	Text      string
}

// Echo is the default reply text for a prompt.
func Echo(text string) string { return "😊 echo: " + text }

// Agent is the one scriptable in-process ACP v1 agent of the tests: acp's
// own tests and, through agenttest.Pool, every package that drives a real
// acp.Pool. It imports nothing of this module, so acp's in-package tests
// can use it. Script answers prompts declaratively; OnPrompt, when set,
// answers them by hand. With neither, a prompt is echoed as "😊 echo:
// <text>" in three chunks.
type Agent struct {
	demoagent.Unsupported

	// Script decides each reply.
	Script func(p Prompt) Reply
	// OnPrompt handles a prompt itself (send updates with Chunk or Conn);
	// it wins over Script.
	OnPrompt func(ctx context.Context, a *Agent, sid, text string) (acpsdk.PromptResponse, error)
	// Name is agentInfo.name ("acptest"); InitMeta is initialize's _meta.
	Name     string
	InitMeta map[string]any
	// NoClose leaves sessionCapabilities.close out of initialize.
	NoClose bool
	// SessionPrefix names the sessions prefix+n ("sess-").
	SessionPrefix string
	// MCPHTTP advertises agentCapabilities.mcpCapabilities.http, as
	// claude-agent-acp, codex-acp and gemini-cli do.
	MCPHTTP bool
	// Resume advertises sessionCapabilities.resume: session/resume
	// reopens any session id, as an agent whose sessions outlive its
	// process does.
	Resume bool

	conn *acpsdk.AgentSideConnection
	out  *jsonrpc.LockedWriter

	mu        sync.Mutex
	toolSeq   int
	asked     []Asked
	n         int
	sessions  map[string]bool
	prompts   []Prompt
	cancels   []string
	cancelAt  []time.Time
	closed    []string
	running   map[string]int
	total     int
	maxTotal  int
	maxPerSes int
	loseNext  bool
	refuse    bool
	opened    []Opened
}

// Opened is a request that opened a session: its method, the session and
// the mcpServers it offered.
type Opened struct {
	Method     string
	SessionID  string
	MCPServers []acpsdk.McpServer
}

// Serve answers the ACP connection whose client writes to r and reads from
// w, with impl (a, or a wrapper around a) handling requests; it returns
// the connection, which closes when r does.
func (a *Agent) Serve(impl acpsdk.Agent, w io.Writer, r io.Reader) *acpsdk.AgentSideConnection {
	out := &jsonrpc.LockedWriter{W: w} // scripted tools write raw frames beside the SDK's
	conn := newAgentConn(impl, out, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
	a.mu.Lock()
	a.conn, a.out = conn, out
	a.mu.Unlock()
	return conn
}

// Link serves impl (a, or a wrapper around a) over in-process pipes and
// returns the client's side: toAgent is the agent's input, fromAgent its
// output. Call onDone with the client's Done channel once it is dialled:
// when the test ends, the pipes are closed and both the client and the
// agent's connection are waited for.
func (a *Agent) Link(t testing.TB, impl acpsdk.Agent) (toAgent io.Writer, fromAgent io.Reader, onDone func(clientDone <-chan struct{})) {
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	conn := a.Serve(impl, fromAgentW, toAgentR)
	return toAgentW, fromAgentR, func(clientDone <-chan struct{}) {
		t.Cleanup(func() {
			_ = toAgentW.Close()
			_ = fromAgentW.Close()
			WaitClosed(t, "the client's connection", clientDone)
			WaitClosed(t, "the fake agent's connection", conn.Done())
		})
	}
}

// Asked returns the permission requests scripted tools made so far, with
// their answers, in order.
func (a *Agent) Asked() []Asked {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Asked(nil), a.asked...)
}

// Conn is the connection Serve made (nil before).
func (a *Agent) Conn() *acpsdk.AgentSideConnection {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

// Chunk sends one agent_message_chunk update on session sid.
func (a *Agent) Chunk(ctx context.Context, sid, text string) error {
	return a.Conn().SessionUpdate(ctx, acpsdk.SessionNotification{
		SessionId: acpsdk.SessionId(sid),
		Update:    acpsdk.UpdateAgentMessageText(text),
	})
}

// Prompts returns the prompts received so far.
func (a *Agent) Prompts() []Prompt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Prompt(nil), a.prompts...)
}

// Cancels returns the sessions session/cancel was received for, in order.
func (a *Agent) Cancels() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.cancels...)
}

// CancelTimes returns when each session/cancel arrived.
func (a *Agent) CancelTimes() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.cancelAt...)
}

// Closed returns the sessions closed so far.
func (a *Agent) Closed() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.closed...)
}

// NewSessions is how many sessions session/new created.
func (a *Agent) NewSessions() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// MaxConcurrent is the highest number of prompts that ran at once.
func (a *Agent) MaxConcurrent() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.maxTotal
}

// MaxPerSession is the highest number of prompts that ran at once on one
// session.
func (a *Agent) MaxPerSession() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.maxPerSes
}

// Forget makes the agent lose a session (its next prompt gets -32000).
func (a *Agent) Forget(sid string) {
	a.mu.Lock()
	delete(a.sessions, sid)
	a.mu.Unlock()
}

// LoseNextSession makes the next prompt answer -32000 and forget its
// session, as an agent that restarted its session store would.
func (a *Agent) LoseNextSession() {
	a.mu.Lock()
	a.loseNext = true
	a.mu.Unlock()
}

// Initialize implements acpsdk.Agent.
func (a *Agent) Initialize(context.Context, acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	name := a.Name
	if name == "" {
		name = "acptest"
	}
	r := acpsdk.InitializeResponse{ProtocolVersion: acpsdk.ProtocolVersionNumber, AuthMethods: []acpsdk.AuthMethod{},
		AgentInfo: &acpsdk.Implementation{Name: name, Version: "1"}, Meta: a.InitMeta}
	if !a.NoClose {
		r.AgentCapabilities.SessionCapabilities.Close = &acpsdk.SessionCloseCapabilities{}
	}
	if a.Resume {
		r.AgentCapabilities.SessionCapabilities.Resume = &acpsdk.SessionResumeCapabilities{}
	}
	r.AgentCapabilities.McpCapabilities.Http = a.MCPHTTP
	return r, nil
}

// RefuseSessions makes session/new fail (-32603) while on.
func (a *Agent) RefuseSessions(on bool) {
	a.mu.Lock()
	a.refuse = on
	a.mu.Unlock()
}

// Opened returns the requests that opened sessions so far, in order.
func (a *Agent) Opened() []Opened {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Opened(nil), a.opened...)
}

// ResumeSession implements acpsdk.Agent when Resume is set: the session
// is live again under its id.
func (a *Agent) ResumeSession(_ context.Context, p acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	if !a.Resume {
		return acpsdk.ResumeSessionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionResume)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sessions == nil {
		a.sessions = map[string]bool{}
	}
	a.sessions[string(p.SessionId)] = true
	a.opened = append(a.opened, Opened{Method: acpsdk.AgentMethodSessionResume, SessionID: string(p.SessionId), MCPServers: p.McpServers})
	return acpsdk.ResumeSessionResponse{}, nil
}

// NewSession implements acpsdk.Agent.
func (a *Agent) NewSession(_ context.Context, p acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.refuse {
		a.opened = append(a.opened, Opened{Method: acpsdk.AgentMethodSessionNew, MCPServers: p.McpServers})
		return acpsdk.NewSessionResponse{}, acpsdk.NewInternalError(map[string]any{"reason": "sessions refused"})
	}
	if a.sessions == nil {
		a.sessions = map[string]bool{}
	}
	a.n++
	prefix := a.SessionPrefix
	if prefix == "" {
		prefix = "sess-"
	}
	sid := fmt.Sprintf("%s%d", prefix, a.n)
	a.sessions[sid] = true
	a.opened = append(a.opened, Opened{Method: acpsdk.AgentMethodSessionNew, SessionID: sid, MCPServers: p.McpServers})
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(sid)}, nil
}

// CloseSession implements acpsdk.Agent.
func (a *Agent) CloseSession(_ context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	a.mu.Lock()
	a.closed = append(a.closed, string(p.SessionId))
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	return acpsdk.CloseSessionResponse{}, nil
}

// Cancel implements acpsdk.Agent; the SDK also cancels the prompt's ctx.
func (a *Agent) Cancel(_ context.Context, p acpsdk.CancelNotification) error {
	a.mu.Lock()
	a.cancels = append(a.cancels, string(p.SessionId))
	a.cancelAt = append(a.cancelAt, time.Now())
	a.mu.Unlock()
	return nil
}

// Prompt implements acpsdk.Agent: OnPrompt, else the script, else echo.
func (a *Agent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	sid := string(p.SessionId)
	pr := Prompt{SessionID: sid, Text: demoagent.PromptText(p.Prompt)}
	a.mu.Lock()
	if !a.sessions[sid] || a.loseNext {
		if a.sessions[sid] {
			a.loseNext = false
			delete(a.sessions, sid)
		}
		a.mu.Unlock()
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32000, Message: "Session not found: " + sid}
	}
	a.prompts = append(a.prompts, pr)
	if a.running == nil {
		a.running = map[string]int{}
	}
	a.running[sid]++
	a.total++
	a.maxPerSes = max(a.maxPerSes, a.running[sid])
	a.maxTotal = max(a.maxTotal, a.total)
	script, hook := a.Script, a.OnPrompt
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running[sid]--
		a.total--
		a.mu.Unlock()
	}()
	if hook != nil {
		return hook(ctx, a, sid, pr.Text)
	}
	r := Reply{Chunks: Thirds(Echo(pr.Text))}
	if script != nil {
		r = script(pr)
	}
	return a.play(ctx, sid, r)
}

// play streams a scripted reply.
func (a *Agent) play(ctx context.Context, sid string, r Reply) (acpsdk.PromptResponse, error) {
	wait := ctx
	if r.IgnoreCancel {
		wait = context.Background()
	}
	cancelled := acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}
	for i, c := range r.Chunks {
		d := r.ChunkDelay
		if i == 0 {
			d = r.FirstDelay
		}
		if !demoagent.Pause(wait, d) {
			return cancelled, nil
		}
		if err := a.Chunk(context.Background(), sid, c); err != nil {
			return acpsdk.PromptResponse{}, err
		}
	}
	if len(r.Tools) > 0 {
		a.mu.Lock()
		out := a.out
		a.mu.Unlock()
		p := &toolPlayer{conn: a.Conn(), raw: func(b []byte) error { _, err := out.Write(b); return err },
			sid: sid, shape: r.Shape, locale: r.Locale, seq: &a.toolSeq, mu: &a.mu,
			asked: func(x Asked) { a.mu.Lock(); a.asked = append(a.asked, x); a.mu.Unlock() }}
		stopped, err := p.play(ctx, r.Tools)
		if err != nil {
			return acpsdk.PromptResponse{}, err
		}
		if stopped {
			return cancelled, nil
		}
	}
	if r.Hang {
		<-wait.Done()
		return cancelled, nil
	}
	if r.Err != nil {
		return acpsdk.PromptResponse{}, r.Err
	}
	if ctx.Err() != nil && !r.IgnoreCancel {
		return cancelled, nil
	}
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
}

// Thirds splits s into three nearly equal runs of code points: a reply
// streamed as three chunks.
func Thirds(s string) []string {
	r := []rune(s)
	return []string{string(r[:len(r)/3]), string(r[len(r)/3 : 2*len(r)/3]), string(r[2*len(r)/3:])}
}

// newAgentConn is acpsdk.NewAgentSideConnection with log as its logger.
// The SDK starts reading r at once and SetLogger is a plain write, so r is
// held until the logger is set: the SDK reads the logger only after a read.
func newAgentConn(impl acpsdk.Agent, w io.Writer, r io.Reader, log *slog.Logger) *acpsdk.AgentSideConnection {
	held := &heldReader{r: r, opened: make(chan struct{})}
	conn := acpsdk.NewAgentSideConnection(impl, w, held)
	conn.SetLogger(log)
	close(held.opened)
	return conn
}

// heldReader holds every Read until opened is closed.
type heldReader struct {
	r      io.Reader
	opened chan struct{}
}

func (h *heldReader) Read(p []byte) (int, error) {
	<-h.opened
	return h.r.Read(p)
}
