package acpclient

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
)

// dialAgent dials a Client to the in-process agent a, with the
// supervisor's default timings, until the test ends.
func dialAgent(t *testing.T, a *acptest.Agent) *Client {
	t.Helper()
	c, _ := dialAgentWith(t, a, Config{})
	return c
}

// dialAgentWith is dialAgent with cfg; it also returns the agent's output,
// whose closing ends the connection as the agent's death would.
func dialAgentWith(t *testing.T, a *acptest.Agent, cfg Config) (*Client, io.Closer) {
	t.Helper()
	toAgent, fromAgent, onDone := a.Link(t, a)
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: acptest.Logs(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg, agentconn.Child{Stdin: toAgent, Stdout: fromAgent, Log: log,
		InitTimeout: 10 * time.Second, CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatalf("dial fake agent: %v", err)
	}
	onDone(c.Done())
	return c, fromAgent.(io.Closer)
}

// dialSession dials a Client to a and opens a session on it; ctx bounds
// the test's requests.
func dialSession(t *testing.T, a *acptest.Agent) (*Client, context.Context, string) {
	t.Helper()
	c := dialAgent(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	sid, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c, ctx, sid
}

// An agent announcing tool calls for sessions it never created, or more
// than the table holds, cannot grow the client's tool-call table: only
// sessions in a turn are remembered, at most toolCallCap calls in all, and
// a turn's calls are forgotten when it ends.
func TestToolTableBounded(t *testing.T) {
	a := &acptest.Agent{Name: "fake", SessionPrefix: "s"}
	a.OnPrompt = func(ctx context.Context, a *acptest.Agent, sid, text string) (acp.PromptResponse, error) {
		for i := range 300 {
			_ = a.Conn().SessionUpdate(ctx, acp.SessionNotification{SessionId: acp.SessionId(fmt.Sprint("ghost-", i)),
				Update: acp.StartToolCall(acp.ToolCallId(fmt.Sprint("ghost-call-", i)), "shell")})
		}
		for i := range 2 * toolCallCap {
			_ = a.Conn().SessionUpdate(ctx, acp.SessionNotification{SessionId: acp.SessionId(sid),
				Update: acp.StartToolCall(acp.ToolCallId(fmt.Sprint("call-", i)), "shell")})
		}
		_ = a.Chunk(ctx, sid, "😊 ok") // handled after every update above
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	}
	c, ctx, sid := dialSession(t, a)
	m := agentconn.NewMailbox(sid)
	c.BeginTurn(m)
	if _, err := c.Prompt(ctx, sid, "hi"); err != nil {
		t.Fatal(err)
	}
	if got := m.Drain(); len(got) != 1 || got[0] != "😊 ok" {
		t.Errorf("turn text %q, want the chunk sent after every update", got)
	}
	c.mu.Lock()
	during := c.calls.len()
	c.mu.Unlock()
	c.EndTurn(m)
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

// An agent sending more notifications at once than the SDK's queue holds
// (1 024) keeps its connection: the guard handles each before reading the
// next, so the turn gets its text, in order, and the next turn runs.
func TestNotificationFloodKeepsConnection(t *testing.T) {
	const flood = 3000
	a := &acptest.Agent{Name: "fake", SessionPrefix: "s"}
	a.OnPrompt = func(ctx context.Context, a *acptest.Agent, sid, text string) (acp.PromptResponse, error) {
		for i := range flood {
			_ = a.Conn().SessionUpdate(ctx, acp.SessionNotification{SessionId: acp.SessionId(fmt.Sprint("other-", i)),
				Update: acp.UpdateAgentMessageText("ignored")})
		}
		_ = a.Chunk(ctx, sid, "😊 "+text)
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	}
	c, ctx, sid := dialSession(t, a)
	for _, text := range []string{"one", "two"} {
		m := agentconn.NewMailbox(sid)
		c.BeginTurn(m)
		if _, err := c.Prompt(ctx, sid, text); err != nil {
			t.Fatalf("turn %q after a flood of %d notifications: %v", text, flood, err)
		}
		if got := m.Drain(); len(got) != 1 || got[0] != "😊 "+text {
			t.Errorf("turn %q text %q, want its one chunk", text, got)
		}
		c.EndTurn(m)
	}
	if err := c.Err(); err != nil {
		t.Errorf("connection ended: %v", err)
	}
}
