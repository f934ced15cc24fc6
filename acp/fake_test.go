package acp

import (
	"cmp"
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acpclient"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
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
	return hclogFor(acptest.Logs(t))
}

// hclogFor returns a trace-level logger writing to w.
func hclogFor(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: w})
}

// dialCfg is what a test sets for an in-process client: the supervisor's
// cancel grace (default 2 s) and the permission answerer.
type dialCfg struct {
	CancelGrace time.Duration
	Permissions agentconn.Permissioner
}

// dialFake connects a Client to a in-process fake agent; cleanup closes the
// pipes and waits for both sides to finish.
func dialFake(t testing.TB, a *fakeAgent, cfg dialCfg) *acpclient.Client {
	t.Helper()
	return dialFakeAgent(t, a, a, cfg)
}

// dialFakeAgent is dialFake with impl (a wrapper around a) answering the
// connection.
func dialFakeAgent(t testing.TB, a *fakeAgent, impl acpsdk.Agent, cfg dialCfg) *acpclient.Client {
	t.Helper()
	toAgent, fromAgent, onDone := a.Link(t, impl)
	def := DefaultConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := acpclient.Dial(ctx, acpclient.Config{Permissions: cfg.Permissions}, agentconn.Child{
		Stdin: toAgent, Stdout: fromAgent, Log: testLogger(t),
		InitTimeout: def.InitTimeout, CancelGrace: cmp.Or(cfg.CancelGrace, def.CancelGrace)})
	if err != nil {
		t.Fatalf("dial fake agent: %v", err)
	}
	onDone(c.Done())
	return c
}
