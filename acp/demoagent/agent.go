package demoagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"
)

// JSON-RPC error codes the demo agent answers with, as ZeroClaw does.
const (
	codeSessionNotFound = -32000
	codeSessionBusy     = -32002
)

// updater sends session/update notifications; *acp.AgentSideConnection is
// the production one.
type updater interface {
	SessionUpdate(ctx context.Context, n acp.SessionNotification) error
}

// hooks are test seams; the zero value is production behaviour.
type hooks struct {
	// turnStarted runs once a turn is registered as the session's running
	// turn, before its first chunk; ctx is the turn's context.
	turnStarted func(ctx context.Context, sid acp.SessionId)
}

// agent implements acp.Agent. Turns run under contexts the agent owns,
// derived from life: session/cancel and session/close cancel them through
// Cancel and CloseSession, and Serve ends life on shutdown. The SDK's own
// prompt context is deliberately not used, because the SDK cancels a
// session's running prompt as soon as a second prompt arrives for it, and
// the demo agent rejects that second prompt with -32002 instead, leaving the
// first turn running, as ZeroClaw does. Two consequences: the unstable
// per-request $/cancel_request is not honoured (session/cancel is the way to
// stop a turn), and a session/cancel that overtakes its own prompt, before
// the turn has registered, finds no turn and is ignored.
type agent struct {
	Unsupported

	life  context.Context
	delay time.Duration
	log   hclog.Logger
	hooks hooks
	out   updater // set once, before the first request is read

	mu       sync.Mutex
	sessions map[acp.SessionId]*session
	running  int           // turns in progress
	stopping bool          // no new turns; idle closes when running hits 0
	idle     chan struct{} // closed once stopping and no turn runs
}

// session is one session/new; cancel is non-nil while a turn runs.
type session struct {
	cancel context.CancelFunc
}

var _ acp.Agent = (*agent)(nil)

func newAgent(life context.Context, delay time.Duration, log hclog.Logger, h hooks) *agent {
	return &agent{
		life:     life,
		delay:    delay,
		log:      log,
		hooks:    h,
		sessions: make(map[acp.SessionId]*session),
		idle:     make(chan struct{}),
	}
}

// Initialize advertises protocol v1, session/close and no authentication.
func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.log.Debug("initialize", "client_protocol", p.ProtocolVersion)
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo: &acp.Implementation{
			Name:    Name,
			Title:   acp.Ptr("zeroclaw-bridge demo agent"),
			Version: "1",
		},
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession: false,
			SessionCapabilities: acp.SessionCapabilities{
				Close: &acp.SessionCloseCapabilities{},
			},
		},
		AuthMethods: []acp.AuthMethod{},
	}, nil
}

// NewSession creates a session with a fresh random id; cwd and MCP servers
// are accepted and ignored.
func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	sid := acp.SessionId("demo-" + hex.EncodeToString(b[:]))
	a.mu.Lock()
	a.sessions[sid] = &session{}
	a.mu.Unlock()
	a.log.Debug("session created", "session", sid, "cwd", p.Cwd)
	return acp.NewSessionResponse{SessionId: sid}, nil
}

// CloseSession cancels the session's running turn, if any, and forgets it.
func (a *agent) CloseSession(_ context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	a.mu.Lock()
	s, ok := a.sessions[p.SessionId]
	delete(a.sessions, p.SessionId)
	if ok && s.cancel != nil {
		s.cancel()
	}
	a.mu.Unlock()
	if !ok {
		return acp.CloseSessionResponse{}, sessionNotFound(p.SessionId)
	}
	a.log.Debug("session closed", "session", p.SessionId)
	return acp.CloseSessionResponse{}, nil
}

// Cancel stops the session's running turn; its prompt then answers
// stopReason "cancelled". Unknown or idle sessions are ignored.
func (a *agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	a.mu.Lock()
	s, ok := a.sessions[p.SessionId]
	running := ok && s.cancel != nil
	if running {
		s.cancel()
	}
	a.mu.Unlock()
	a.log.Debug("cancel", "session", p.SessionId, "running", running)
	return nil
}

// Prompt streams Reply of the prompt's text as several agent_message_chunk
// updates and ends the turn with end_turn, or with cancelled as soon as the
// turn is cancelled.
func (a *agent) Prompt(_ context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	ctx, err := a.beginTurn(p.SessionId)
	switch {
	case err != nil:
		return acp.PromptResponse{}, err
	case ctx == nil:
		return a.cancelled(p.SessionId, 0)
	}
	defer a.endTurn(p.SessionId)

	text := PromptText(p.Prompt)
	reply := Reply(text)
	a.log.Debug("prompt", "session", p.SessionId, "prompt_bytes", len(text), "reply", reply)
	if a.hooks.turnStarted != nil {
		a.hooks.turnStarted(ctx, p.SessionId)
	}
	for i, piece := range Chunks(reply) {
		if i > 0 && !a.pause(ctx) {
			return a.cancelled(p.SessionId, i)
		}
		if ctx.Err() != nil {
			return a.cancelled(p.SessionId, i)
		}
		err := a.out.SessionUpdate(ctx, acp.SessionNotification{
			SessionId: p.SessionId,
			Update:    acp.UpdateAgentMessageText(piece),
		})
		if err != nil {
			if ctx.Err() != nil {
				return a.cancelled(p.SessionId, i)
			}
			return acp.PromptResponse{}, fmt.Errorf("demo agent: stream chunk %d of session %s: %w", i, p.SessionId, err)
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// beginTurn registers a running turn on the session and returns its
// context, or the JSON-RPC error for an unknown or busy session. Once the
// agent is stopping it returns neither: the prompt ends as cancelled.
func (a *agent) beginTurn(sid acp.SessionId) (context.Context, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[sid]
	switch {
	case !ok:
		return nil, sessionNotFound(sid)
	case s.cancel != nil:
		return nil, &acp.RequestError{Code: codeSessionBusy, Message: "Session already has an active prompt turn: " + string(sid)}
	case a.stopping:
		return nil, nil
	}
	ctx, cancel := context.WithCancel(a.life)
	s.cancel = cancel
	a.running++
	return ctx, nil
}

// endTurn clears the session's running turn and counts the turn as done.
func (a *agent) endTurn(sid acp.SessionId) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// The session may have been closed meanwhile; CloseSession then
	// already cancelled the turn's context.
	if s, ok := a.sessions[sid]; ok && s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	a.running--
	if a.stopping && a.running == 0 {
		close(a.idle)
	}
}

// stop refuses new turns from now on and returns a channel that is closed
// once no turn runs. Callers cancel life to end the running turns.
func (a *agent) stop() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.stopping {
		a.stopping = true
		if a.running == 0 {
			close(a.idle)
		}
	}
	return a.idle
}

// pause waits ChunkDelay and reports whether the turn may go on.
func (a *agent) pause(ctx context.Context) bool { return Pause(ctx, a.delay) }

// Pause waits d and reports whether ctx is still live: the pause between
// two streamed chunks, which a cancelled turn cuts short (the test agents
// stream the same way).
func Pause(ctx context.Context, d time.Duration) bool {
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

func (a *agent) cancelled(sid acp.SessionId, sent int) (acp.PromptResponse, error) {
	a.log.Debug("turn cancelled", "session", sid, "chunks_sent", sent)
	return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
}

// PromptText joins the text of every text content block with "\n" (the
// test agents read prompts the same way).
func PromptText(blocks []acp.ContentBlock) string {
	var texts []string
	for _, b := range blocks {
		if b.Text != nil {
			texts = append(texts, b.Text.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func sessionNotFound(sid acp.SessionId) error {
	return &acp.RequestError{Code: codeSessionNotFound, Message: "Session not found: " + string(sid)}
}

// Name is the agent name the demo agent reports on initialize, so the
// bridge and its dashboard can tell it from a real agent.
const Name = "zeroclaw-bridge-demo"

// Unsupported answers the optional ACP agent methods with "method not
// found". The demo agent embeds it, and so do the test agents (acptest),
// so every agent of this repository refuses them the same way.
type Unsupported struct{}

// Authenticate is not supported: the agents advertise no auth methods.
func (Unsupported) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, acp.NewMethodNotFound(acp.AgentMethodAuthenticate)
}

// ListSessions is not supported.
func (Unsupported) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

// ResumeSession is not supported.
func (Unsupported) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

// SetSessionConfigOption is not supported.
func (Unsupported) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

// SetSessionMode is not supported.
func (Unsupported) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetMode)
}
