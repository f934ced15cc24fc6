// Package agenttest gives other packages' tests a scriptable in-process ACP
// v1 agent and a session pool connected to it over pipes, so HTTP tests
// drive the real acp.Pool, SDK and dispatcher without a child process.
package agenttest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
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
}

// Prompt is one prompt the agent received.
type Prompt struct {
	SessionID string
	Text      string
}

// Agent is a scriptable ACP v1 agent. Script decides each reply; nil
// echoes "😊 echo: <text>" in three chunks.
type Agent struct {
	Script func(p Prompt) Reply

	conn *acpsdk.AgentSideConnection

	mu       sync.Mutex
	n        int
	sessions map[string]bool
	prompts  []Prompt
	cancels  []string
	closed   []string
	running  int
	maxRun   int
	cancelAt []time.Time
}

// Echo is the default script's reply text for a prompt.
func Echo(text string) string { return "😊 echo: " + text }

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

// MaxConcurrent is the highest number of prompts that ran at once.
func (a *Agent) MaxConcurrent() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.maxRun
}

// Forget makes the agent lose a session (its next prompt gets -32000).
func (a *Agent) Forget(sid string) {
	a.mu.Lock()
	delete(a.sessions, sid)
	a.mu.Unlock()
}

// Pool connects a to a new acp.Pool over in-process pipes and runs the
// pool until the test ends. Zero configs get test-friendly defaults.
func Pool(t testing.TB, a *Agent, cfg acp.Config, pcfg acp.PoolConfig) *acp.Pool {
	t.Helper()
	if a.sessions == nil {
		a.sessions = map[string]bool{}
	}
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	a.conn = acpsdk.NewAgentSideConnection(a, fromAgentW, toAgentR)
	a.conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if cfg.Command == "" {
		cfg.Command = "agenttest"
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.CancelGrace == 0 {
		cfg.CancelGrace = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := acp.Dial(ctx, cfg, toAgentW, fromAgentR)
	if err != nil {
		t.Fatalf("agenttest: dial: %v", err)
	}
	if pcfg.Logger == nil {
		pcfg.Logger = cfg.Logger
	}
	p := acp.NewPool(pcfg, c)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
		_ = toAgentW.Close()
		_ = fromAgentW.Close()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Error("agenttest: client did not close")
		}
		select {
		case <-a.conn.Done():
		case <-time.After(5 * time.Second):
			t.Error("agenttest: agent did not close")
		}
	})
	return p
}

// Initialize implements acp.Agent.
func (a *Agent) Initialize(context.Context, acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	r := acpsdk.InitializeResponse{ProtocolVersion: acpsdk.ProtocolVersionNumber, AuthMethods: []acpsdk.AuthMethod{},
		AgentInfo: &acpsdk.Implementation{Name: "agenttest", Version: "1"}}
	r.AgentCapabilities.SessionCapabilities.Close = &acpsdk.SessionCloseCapabilities{}
	return r, nil
}

// NewSession implements acp.Agent.
func (a *Agent) NewSession(context.Context, acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	sid := fmt.Sprintf("sess-%d", a.n)
	a.sessions[sid] = true
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(sid)}, nil
}

// CloseSession implements acp.Agent.
func (a *Agent) CloseSession(_ context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	a.mu.Lock()
	a.closed = append(a.closed, string(p.SessionId))
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	return acpsdk.CloseSessionResponse{}, nil
}

// Cancel implements acp.Agent; the SDK also cancels the prompt's ctx.
func (a *Agent) Cancel(_ context.Context, p acpsdk.CancelNotification) error {
	a.mu.Lock()
	a.cancels = append(a.cancels, string(p.SessionId))
	a.cancelAt = append(a.cancelAt, time.Now())
	a.mu.Unlock()
	return nil
}

// Prompt implements acp.Agent by running the script.
func (a *Agent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	sid := string(p.SessionId)
	var parts []string
	for _, b := range p.Prompt {
		if b.Text != nil {
			parts = append(parts, b.Text.Text)
		}
	}
	pr := Prompt{SessionID: sid, Text: strings.Join(parts, "\n")}
	a.mu.Lock()
	if !a.sessions[sid] {
		a.mu.Unlock()
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32000, Message: "Session not found: " + sid}
	}
	a.prompts = append(a.prompts, pr)
	a.running++
	a.maxRun = max(a.maxRun, a.running)
	script := a.Script
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running--
		a.mu.Unlock()
	}()
	r := Reply{Chunks: thirds(Echo(pr.Text))}
	if script != nil {
		r = script(pr)
	}
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
		if !sleep(wait, d) {
			return cancelled, nil
		}
		if err := a.conn.SessionUpdate(context.Background(), acpsdk.SessionNotification{
			SessionId: p.SessionId, Update: acpsdk.UpdateAgentMessageText(c)}); err != nil {
			return acpsdk.PromptResponse{}, err
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

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func thirds(s string) []string {
	r := []rune(s)
	return []string{string(r[:len(r)/3]), string(r[len(r)/3 : 2*len(r)/3]), string(r[2*len(r)/3:])}
}

// Authenticate implements acp.Agent.
func (a *Agent) Authenticate(context.Context, acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return acpsdk.AuthenticateResponse{}, nil
}

// ListSessions implements acp.Agent.
func (a *Agent) ListSessions(context.Context, acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	return acpsdk.ListSessionsResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionList)
}

// ResumeSession implements acp.Agent.
func (a *Agent) ResumeSession(context.Context, acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	return acpsdk.ResumeSessionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionResume)
}

// SetSessionConfigOption implements acp.Agent.
func (a *Agent) SetSessionConfigOption(context.Context, acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	return acpsdk.SetSessionConfigOptionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetConfigOption)
}

// SetSessionMode implements acp.Agent.
func (a *Agent) SetSessionMode(context.Context, acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	return acpsdk.SetSessionModeResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetMode)
}

// DemoPool returns a pool on an in-process built-in demo agent with no
// chunk delay (for benchmarks); it is shut down when the test ends.
func DemoPool(t testing.TB) *acp.Pool {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = demoagent.Serve(ctx, toAgentR, fromAgentW, demoagent.Options{})
		_ = fromAgentW.Close()
	}()
	c, err := acp.Dial(context.Background(), acp.Config{Command: "demo", Logger: hclog.NewNullLogger()}, toAgentW, fromAgentR)
	if err != nil {
		t.Fatalf("agenttest: dial demo agent: %v", err)
	}
	t.Cleanup(func() {
		_ = toAgentW.Close()
		<-served
		cancel()
	})
	return acp.NewPool(acp.PoolConfig{SessionMaxTurns: 1 << 30}, c)
}
