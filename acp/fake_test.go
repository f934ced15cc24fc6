package acp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// fakeAgent is an in-process ACP v1 agent. Hooks left nil fall back to an
// echo agent that streams "😊 echo: <text>" as three chunks.
type fakeAgent struct {
	conn *acpsdk.AgentSideConnection

	initMeta   map[string]any
	onPrompt   func(ctx context.Context, a *fakeAgent, sid, text string) (acpsdk.PromptResponse, error)
	closeCap   bool
	maxPerSess atomic.Int32 // highest concurrent prompts seen on one session
	maxTotal   atomic.Int32 // highest concurrent prompts overall

	mu        sync.Mutex
	sessions  map[string]bool
	running   map[string]int
	total     int
	cancels   []string
	closed    []string
	prompts   []string
	newCount  int
	lostFirst bool // answer -32000 to the first prompt
}

func newFakeAgent() *fakeAgent {
	return &fakeAgent{sessions: map[string]bool{}, running: map[string]int{}, closeCap: true}
}

func echoReply(text string) string { return "😊 echo: " + text }

func (a *fakeAgent) chunk(ctx context.Context, sid, text string) error {
	return a.conn.SessionUpdate(ctx, acpsdk.SessionNotification{
		SessionId: acpsdk.SessionId(sid),
		Update:    acpsdk.UpdateAgentMessageText(text),
	})
}

func (a *fakeAgent) Initialize(context.Context, acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	r := acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentInfo:       &acpsdk.Implementation{Name: "fake", Version: "1"},
		AuthMethods:     []acpsdk.AuthMethod{},
		Meta:            a.initMeta,
	}
	if a.closeCap {
		r.AgentCapabilities.SessionCapabilities.Close = &acpsdk.SessionCloseCapabilities{}
	}
	return r, nil
}

func (a *fakeAgent) NewSession(context.Context, acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.newCount++
	sid := fmt.Sprintf("s%d", a.newCount)
	a.sessions[sid] = true
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(sid)}, nil
}

func (a *fakeAgent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	sid := string(p.SessionId)
	var text []string
	for _, b := range p.Prompt {
		if b.Text != nil {
			text = append(text, b.Text.Text)
		}
	}
	a.mu.Lock()
	if !a.sessions[sid] {
		a.mu.Unlock()
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32000, Message: "Session not found: " + sid}
	}
	if a.lostFirst {
		a.lostFirst = false
		delete(a.sessions, sid)
		a.mu.Unlock()
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32000, Message: "Session not found: " + sid}
	}
	a.prompts = append(a.prompts, strings.Join(text, "\n"))
	a.running[sid]++
	a.total++
	storeMax(&a.maxPerSess, int32(a.running[sid]))
	storeMax(&a.maxTotal, int32(a.total))
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running[sid]--
		a.total--
		a.mu.Unlock()
	}()
	if a.onPrompt != nil {
		return a.onPrompt(ctx, a, sid, strings.Join(text, "\n"))
	}
	reply := echoReply(strings.Join(text, "\n"))
	for _, part := range splitN(reply, 3) {
		if err := a.chunk(ctx, sid, part); err != nil {
			return acpsdk.PromptResponse{}, err
		}
	}
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
}

func storeMax(v *atomic.Int32, n int32) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// splitN splits s into n nearly equal rune slices.
func splitN(s string, n int) []string {
	r := []rune(s)
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}

func (a *fakeAgent) Cancel(_ context.Context, p acpsdk.CancelNotification) error {
	a.mu.Lock()
	a.cancels = append(a.cancels, string(p.SessionId))
	a.mu.Unlock()
	return nil
}

func (a *fakeAgent) CloseSession(_ context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	a.mu.Lock()
	a.closed = append(a.closed, string(p.SessionId))
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	return acpsdk.CloseSessionResponse{}, nil
}

func (a *fakeAgent) Authenticate(context.Context, acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return acpsdk.AuthenticateResponse{}, nil
}

func (a *fakeAgent) ListSessions(context.Context, acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	return acpsdk.ListSessionsResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionList)
}

func (a *fakeAgent) ResumeSession(context.Context, acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	return acpsdk.ResumeSessionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionResume)
}

func (a *fakeAgent) SetSessionConfigOption(context.Context, acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	return acpsdk.SetSessionConfigOptionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetConfigOption)
}

func (a *fakeAgent) SetSessionMode(context.Context, acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	return acpsdk.SetSessionModeResponse{}, nil
}

func (a *fakeAgent) snapshot() (cancels, closed, prompts []string, newCount int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.cancels...), append([]string(nil), a.closed...), append([]string(nil), a.prompts...), a.newCount
}

// testLogger returns an hclog logger whose output is shown only when the
// test fails. Goroutines may keep logging after the test ends (the SDK logs
// "connection closed" late), so it never writes to t directly.
func testLogger(t testing.TB) hclog.Logger {
	t.Helper()
	buf := &testkit.LogBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("log output:\n" + buf.String())
		}
	})
	return hclogFor(buf)
}

// hclogFor returns a trace-level logger writing to w.
func hclogFor(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: w})
}

// dialFake connects a Client to a in-process fake agent; cleanup closes the
// pipes and waits for both sides to finish.
func dialFake(t testing.TB, a *fakeAgent, cfg Config) *Client {
	t.Helper()
	return dialFakeAgent(t, a, a, cfg)
}

// dialFakeAgent is dialFake with impl (a wrapper around a) answering the
// connection.
func dialFakeAgent(t testing.TB, a *fakeAgent, impl acpsdk.Agent, cfg Config) *Client {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	a.conn = acpsdk.NewAgentSideConnection(impl, fromAgentW, toAgentR)
	a.conn.SetLogger(discardSlog())
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	if cfg.Command == "" {
		cfg.Command = "in-process"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg, toAgentW, fromAgentR)
	if err != nil {
		t.Fatalf("dial fake agent: %v", err)
	}
	t.Cleanup(func() {
		_ = toAgentW.Close()
		_ = fromAgentW.Close()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Error("client did not notice the closed connection")
		}
		select {
		case <-a.conn.Done():
		case <-time.After(5 * time.Second):
			t.Error("fake agent connection did not close")
		}
	})
	return c
}

// runPool starts p.Run and stops it at cleanup.
func runPool(t testing.TB, p *Pool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("pool.Run did not return")
		}
	})
}

// fakeClock is a manually advanced clockwork.Clock that records every
// wait asked of it, so tests can check the durations (backoff delays);
// After fires when Advance passes it.
type fakeClock struct {
	clockwork.Clock // the methods acp does not use: nil, never called

	mu        sync.Mutex
	now       time.Time
	waiters   []clockWaiter
	requested []time.Duration // every After duration, in call order
	// ignore is a duration whose timers never fire and are not recorded
	// (a timeout the test does not exercise, such as UnavailableGrace).
	ignore time.Duration
}

type clockWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if c.ignore != 0 && d == c.ignore {
		return ch
	}
	c.requested = append(c.requested, d)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{c.now.Add(d), ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// Requested returns the durations passed to After so far.
func (c *fakeClock) Requested() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.requested...)
}

// Pending reports how many After calls are waiting.
func (c *fakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

func discardSlog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
