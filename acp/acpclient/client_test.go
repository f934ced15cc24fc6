package acpclient

import (
	"context"
	"fmt"
	"io"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
)

// poolOn dials a Client to the in-process agent a and runs a pool on it
// until the test ends.
func poolOn(t *testing.T, a *acptest.Agent) (*Client, *acp.Pool) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	conn := a.Serve(a, fromAgentW, toAgentR)
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: acptest.Logs(t)})
	def := acp.DefaultConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{}, agentconn.Child{Stdin: toAgentW, Stdout: fromAgentR, Log: log,
		InitTimeout: def.InitTimeout, CancelGrace: def.CancelGrace})
	if err != nil {
		t.Fatalf("dial fake agent: %v", err)
	}
	p := acp.NewPool(acp.PoolConfig{Logger: log}, c)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		acptest.WaitClosed(t, "pool.Run", done)
		_ = toAgentW.Close()
		_ = fromAgentW.Close()
		acptest.WaitClosed(t, "the client's connection", c.Done())
		acptest.WaitClosed(t, "the fake agent's connection", conn.Done())
	})
	return c, p
}

// An agent announcing tool calls for sessions it never created, or more
// than the table holds, cannot grow the client's tool-call table: only
// sessions in a turn are remembered, at most toolCallCap calls in all, and
// a turn's calls are forgotten when it ends.
func TestToolTableBounded(t *testing.T) {
	a := &acptest.Agent{Name: "fake", SessionPrefix: "s"}
	a.OnPrompt = func(ctx context.Context, a *acptest.Agent, sid, text string) (acpsdk.PromptResponse, error) {
		for i := range 300 {
			_ = a.Conn().SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(fmt.Sprint("ghost-", i)),
				Update: acpsdk.StartToolCall(acpsdk.ToolCallId(fmt.Sprint("ghost-call-", i)), "shell")})
		}
		for i := range 2 * toolCallCap {
			_ = a.Conn().SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(sid),
				Update: acpsdk.StartToolCall(acpsdk.ToolCallId(fmt.Sprint("call-", i)), "shell")})
		}
		_ = a.Chunk(ctx, sid, "😊 ok") // handled after every update above
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	c, p := poolOn(t, a)
	during := -1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := p.Turn(ctx, acp.TurnRequest{Key: "k", Prompt: func(int) string { return "hi" }, OnChunk: func(string) {
		c.mu.Lock()
		during = c.calls.len()
		c.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if during != toolCallCap {
		t.Errorf("tool-call table held %d calls during the turn, want the cap %d", during, toolCallCap)
	}
	c.mu.Lock()
	n := c.calls.len()
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("tool-call table holds %d calls after the turn, want 0", n)
	}
}
