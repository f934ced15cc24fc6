// Package demoagent is the bridge's built-in demo agent: a real ACP v1
// agent on acp-go-sdk's agent side that needs no model. The bridge runs it
// as `zeroclaw-bridge demo-agent` when no zeroclaw binary is installed, so
// a fresh machine can run the bridge end to end; benchmarks and tests run it
// in-process over pipes.
//
// Every prompt is answered with a short reply that starts with one of the
// nine emoji the robot can show and quotes the user's last line, streamed as
// several agent_message_chunk updates. session/cancel stops a turn at once
// with stopReason "cancelled".
package demoagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"
)

// Emoji are the nine reply emoji the bridge allows, in the bridge's order.
var Emoji = []string{"😊", "😆", "😢", "😮", "🤔", "😠", "😐", "😍", "😴"}

// quoteCap is the longest quoted user line, in runes.
const quoteCap = 120

// Options tune the demo agent. The zero value works.
type Options struct {
	// ChunkDelay is the pause between streamed chunks (0 = none; the CLI default is 40ms).
	ChunkDelay time.Duration
	// Logger receives diagnostics; nil discards.
	Logger hclog.Logger
}

// Serve runs the agent on the given streams (in = what the client writes,
// out = what the client reads) until in reaches EOF or ctx ends, and returns
// nil. When ctx ends, Serve closes in if it is an io.Closer so the reader
// stops; running turns are cancelled and awaited (for at most a second, in
// case nobody reads out any more).
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	a := &agent{opts: opts, log: opts.Logger, sessions: make(map[string]*session)}
	conn := acpsdk.NewAgentSideConnection(a, out, in)
	conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	a.mu.Lock()
	a.conn = conn // requests may already be arriving; Prompt reads it under mu
	a.mu.Unlock()

	select {
	case <-conn.Done():
	case <-ctx.Done():
		if c, ok := in.(io.Closer); ok {
			_ = c.Close()
			<-conn.Done()
		}
	}
	a.stopAll()
	turnsDone := make(chan struct{})
	go func() {
		a.turns.Wait()
		close(turnsDone)
	}()
	select {
	case <-turnsDone:
	case <-time.After(time.Second):
		a.log.Warn("demo agent turns still running at exit")
	}
	return nil
}

// agent implements acp.Agent.
type agent struct {
	opts Options
	log  hclog.Logger

	turns sync.WaitGroup

	mu       sync.Mutex
	conn     *acpsdk.AgentSideConnection
	sessions map[string]*session
}

type session struct {
	busy   bool
	cancel context.CancelFunc // cancels the running turn
}

func (a *agent) Initialize(context.Context, acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	r := acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentInfo:       &acpsdk.Implementation{Name: "zeroclaw-bridge-demo", Title: acpsdk.Ptr("zeroclaw-bridge demo agent"), Version: "1"},
		AuthMethods:     []acpsdk.AuthMethod{},
	}
	r.AgentCapabilities.SessionCapabilities.Close = &acpsdk.SessionCloseCapabilities{}
	return r, nil
}

func (a *agent) NewSession(context.Context, acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return acpsdk.NewSessionResponse{}, fmt.Errorf("session id: %w", err)
	}
	sid := "demo-" + hex.EncodeToString(b[:])
	a.mu.Lock()
	a.sessions[sid] = &session{}
	a.mu.Unlock()
	a.log.Debug("session created", "session", sid)
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(sid)}, nil
}

func (a *agent) CloseSession(_ context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	if s == nil {
		return acpsdk.CloseSessionResponse{}, &acpsdk.RequestError{Code: -32000, Message: "Session not found: " + string(p.SessionId)}
	}
	if s.cancel != nil {
		s.cancel()
	}
	return acpsdk.CloseSessionResponse{}, nil
}

func (a *agent) Cancel(_ context.Context, p acpsdk.CancelNotification) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[string(p.SessionId)]; s != nil && s.cancel != nil {
		s.cancel()
	}
	return nil
}

// stopAll cancels every running turn (shutdown).
func (a *agent) stopAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.sessions {
		if s.cancel != nil {
			s.cancel()
		}
	}
}

// Prompt streams Reply(text). The turn runs under its own ctx, cancelled by
// session/cancel or session/close, because the SDK also cancels a session's
// previous prompt ctx when a second prompt arrives — which this agent
// rejects with -32002 instead, leaving the first turn running.
func (a *agent) Prompt(_ context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	sid := string(p.SessionId)
	a.mu.Lock()
	s := a.sessions[sid]
	switch {
	case s == nil:
		a.mu.Unlock()
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32000, Message: "Session not found: " + sid}
	case s.busy:
		a.mu.Unlock()
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32002, Message: "Session already has an active prompt turn: " + sid}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.busy, s.cancel = true, cancel
	conn := a.conn
	a.turns.Add(1)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		s.busy, s.cancel = false, nil
		a.mu.Unlock()
		cancel()
		a.turns.Done()
	}()

	var parts []string
	for _, b := range p.Prompt {
		if b.Text != nil {
			parts = append(parts, b.Text.Text)
		}
	}
	reply := Reply(strings.Join(parts, "\n"))
	a.log.Debug("prompt", "session", sid, "reply", reply)
	for i, chunk := range Chunks(reply) {
		if i > 0 && a.opts.ChunkDelay > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(a.opts.ChunkDelay):
			}
		}
		if ctx.Err() != nil {
			return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
		}
		err := conn.SessionUpdate(ctx, acpsdk.SessionNotification{
			SessionId: p.SessionId,
			Update:    acpsdk.UpdateAgentMessageText(chunk),
		})
		if err != nil {
			if ctx.Err() != nil {
				return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
			}
			return acpsdk.PromptResponse{}, fmt.Errorf("send chunk: %w", err)
		}
	}
	if ctx.Err() != nil {
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	}
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
}

func (a *agent) Authenticate(context.Context, acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return acpsdk.AuthenticateResponse{}, nil
}

func (a *agent) ListSessions(context.Context, acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	return acpsdk.ListSessionsResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionList)
}

func (a *agent) ResumeSession(context.Context, acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	return acpsdk.ResumeSessionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(context.Context, acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	return acpsdk.SetSessionConfigOptionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetConfigOption)
}

func (a *agent) SetSessionMode(context.Context, acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	return acpsdk.SetSessionModeResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetMode)
}

// Reply returns the demo agent's full reply to a prompt: one of the nine
// emoji, a space, and a quote of the user's last line.
func Reply(prompt string) string {
	line := UserLine(prompt)
	h := fnv.New32a()
	_, _ = h.Write([]byte(line))
	emoji := Emoji[h.Sum32()%uint32(len(Emoji))]
	return fmt.Sprintf("%s You said: %q. I'm the demo agent; install ZeroClaw for real answers.", emoji, line)
}

// UserLine finds the line of prompt the user said: the text after the last
// "[User] " marker, else the last non-blank line that is not a bracketed
// bridge directive, else the last non-blank line; capped at 120 runes.
func UserLine(prompt string) string {
	var line string
	if i := strings.LastIndex(prompt, "[User] "); i >= 0 {
		line, _, _ = strings.Cut(prompt[i+len("[User] "):], "\n")
	} else {
		lines := strings.Split(prompt, "\n")
		fallback := ""
		for j := len(lines) - 1; j >= 0; j-- {
			l := strings.TrimSpace(lines[j])
			if l == "" {
				continue
			}
			if fallback == "" {
				fallback = l
			}
			if !strings.HasPrefix(l, "[") {
				line = l
				break
			}
		}
		if line == "" {
			line = fallback
		}
	}
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > quoteCap {
		line = string([]rune(line)[:quoteCap-1]) + "…"
	}
	if line == "" {
		line = "(nothing)"
	}
	return line
}

// Chunks splits reply at word boundaries into the pieces the agent streams:
// at least three, at most eight, concatenating to reply.
func Chunks(reply string) []string {
	var words []string
	start := 0
	for i, r := range reply {
		if i > start && unicode.IsSpace(r) {
			words = append(words, reply[start:i])
			start = i
		}
	}
	words = append(words, reply[start:])
	n := min(max(len(words)/3, 3), 8)
	if len(words) < n {
		// Too few words: split by runes instead.
		return splitRunes(reply, 3)
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, strings.Join(words[i*len(words)/n:(i+1)*len(words)/n], ""))
	}
	return out
}

func splitRunes(s string, n int) []string {
	r := []rune(s)
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}
