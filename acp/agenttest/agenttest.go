// Package agenttest connects the test agent (acptest.Agent) or the
// built-in demo agent to a real acp.Pool over in-process pipes, so other
// packages' tests drive the real pool, SDK and dispatcher without a child
// process. It is apart from acptest because it imports acp, which acp's
// own tests, users of acptest, cannot.
package agenttest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acpclient"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// Pool connects a to a new acp.Pool over in-process pipes and runs the
// pool until the test ends. Zero configs get test-friendly defaults.
func Pool(t testing.TB, a *acptest.Agent, cfg acpclient.Config, pcfg acp.PoolConfig) *acp.Pool {
	t.Helper()
	toAgent, fromAgent, onDone := a.Link(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := acpclient.Dial(ctx, cfg, child(toAgent, fromAgent, time.Second))
	if err != nil {
		t.Fatalf("agenttest: dial: %v", err)
	}
	onDone(c.Done()) // after the pool's own cleanup below
	if pcfg.Logger == nil {
		pcfg.Logger = hclog.NewNullLogger()
	}
	p := acp.NewPool(pcfg, c)
	testkit.Run(t, p, 10*time.Second)
	return p
}

// Driver drives turns on p, each bounded by timeout, and waits for s's
// agent to be ready.
func Driver(t testing.TB, s *acp.Supervisor, p *acp.Pool, timeout time.Duration) acptest.Driver[acp.AgentHealth, acp.TurnResult] {
	return acptest.Driver[acp.AgentHealth, acp.TurnResult]{T: t, Timeout: timeout,
		Run: func(ctx context.Context, key, prompt string, onChunk func(string)) (acp.TurnResult, error) {
			return p.Turn(ctx, acp.TurnRequest{Key: key, Prompt: func(int) string { return prompt }, OnChunk: onChunk})
		},
		Acquire: func(ctx context.Context) error { _, err := s.Acquire(ctx); return err }, Health: s.Health}
}

// DemoPool returns a pool with pcfg on an in-process built-in demo agent
// with no chunk delay (for benchmarks; a zero SessionMaxTurns is
// unbounded); it is shut down when the test ends.
func DemoPool(t testing.TB, pcfg acp.PoolConfig) *acp.Pool {
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
	c, err := acpclient.Dial(context.Background(), acpclient.Config{}, child(toAgentW, fromAgentR, acp.DefaultConfig().CancelGrace))
	if err != nil {
		t.Fatalf("agenttest: dial demo agent: %v", err)
	}
	t.Cleanup(func() {
		_ = toAgentW.Close()
		<-served
		cancel()
	})
	if pcfg.SessionMaxTurns == 0 {
		pcfg.SessionMaxTurns = 1 << 30
	}
	return acp.NewPool(pcfg, c)
}

// child is an in-process agent's side of the pipes, with the supervisor's
// default init timeout and the given cancel grace.
func child(w io.Writer, r io.Reader, cancelGrace time.Duration) agentconn.Child {
	return agentconn.Child{Stdin: w, Stdout: r, Log: hclog.NewNullLogger(),
		InitTimeout: acp.DefaultConfig().InitTimeout, CancelGrace: cancelGrace}
}
