package acp

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// fakeAgent is the test agent (acptest.Agent), named for these tests.
type fakeAgent = acptest.Agent

// newFakeAgent is an echo agent with sessions s1, s2, …
func newFakeAgent() *fakeAgent { return &acptest.Agent{Name: "fake", SessionPrefix: "s"} }

func echoReply(text string) string { return acptest.Echo(text) }

// snapshot is what a has seen: cancels, closes, prompt texts and the
// number of sessions created.
func snapshot(a *fakeAgent) (cancels, closed, prompts []string, newCount int) {
	for _, p := range a.Prompts() {
		prompts = append(prompts, p.Text)
	}
	return a.Cancels(), a.Closed(), prompts, a.NewSessions()
}

// storeMax raises v to n if n is higher.
func storeMax(v *atomic.Int32, n int32) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
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
	conn := a.Serve(impl, fromAgentW, toAgentR)
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
		case <-conn.Done():
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

// NewTicker is a real ticker: the pool's reaper runs on it, and the tests
// drive idleness through Now instead.
func (c *fakeClock) NewTicker(d time.Duration) clockwork.Ticker {
	return clockwork.NewRealClock().NewTicker(d)
}

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
