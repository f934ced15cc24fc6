package demoagent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// waitLimit bounds every wait in these tests; nothing should come near it.
const waitLimit = 5 * time.Second

func TestMain(m *testing.M) {
	// Per-test checks (verifyNoLeaks) pinpoint the culprit; this one also
	// covers benchmarks.
	goleak.VerifyTestMain(m)
}

// verifyNoLeaks fails t if goroutines outlive it. Call it first: cleanups
// run last-in first-out, so the check runs after every other cleanup.
func verifyNoLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// within returns a context that ends after waitLimit.
func within(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	tb.Cleanup(cancel)
	return ctx
}

// testClient is the ACP client side: it records the session/update
// notifications the agent sends and fails the test on anything else the
// agent asks for.
type testClient struct {
	UnsupportedClient
	tb testing.TB

	mu      sync.Mutex
	chunks  map[acp.SessionId][]string // agent_message_chunk texts
	other   []acp.SessionNotification  // any other update
	changed chan struct{}              // closed and replaced on every update
}

var _ acp.Client = (*testClient)(nil)

func newTestClient(tb testing.TB) *testClient {
	refused := func(method string) { tb.Errorf("the demo agent called client method %s", method) }
	return &testClient{UnsupportedClient: UnsupportedClient{Called: refused}, tb: tb,
		chunks: make(map[acp.SessionId][]string), changed: make(chan struct{})}
}

func (c *testClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u := n.Update.AgentMessageChunk; u != nil && u.Content.Text != nil {
		c.chunks[n.SessionId] = append(c.chunks[n.SessionId], u.Content.Text.Text)
	} else {
		c.other = append(c.other, n)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	return nil
}

// chunksOf returns a copy of the chunks received so far for a session.
func (c *testClient) chunksOf(sid acp.SessionId) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.chunks[sid]...)
}

// otherUpdates returns the updates that were not agent message chunks.
func (c *testClient) otherUpdates() []acp.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.SessionNotification(nil), c.other...)
}

// waitChunks waits until the session has at least n chunks and returns
// them; it fails the test after waitLimit. Call it from the test goroutine.
func (c *testClient) waitChunks(sid acp.SessionId, n int) []string {
	c.tb.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		got := append([]string(nil), c.chunks[sid]...)
		changed := c.changed
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			c.tb.Fatalf("session %s: got %d chunks after %s, want %d", sid, len(got), waitLimit, n)
		}
	}
}

// harness is an in-process demo agent and an SDK client connected to it
// over two io.Pipe pairs.
type harness struct {
	tb     testing.TB
	conn   *acp.ClientSideConnection
	client *testClient

	toAgent   *io.PipeWriter // the client's writes; closing it is EOF for the agent
	fromAgent *io.PipeWriter // the agent's out
	cancel    context.CancelFunc
	served    chan error

	stopOnce sync.Once
	serveErr error
}

// startAgent runs serve with opts and h and connects a client to it. The
// agent is shut down (client closes its pipe) when the test ends, unless
// the test calls shutdown first.
func startAgent(tb testing.TB, opts Options, h hooks) *harness {
	tb.Helper()
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	hs := &harness{
		tb:        tb,
		client:    newTestClient(tb),
		toAgent:   toAgentW,
		fromAgent: fromAgentW,
		cancel:    cancel,
		served:    make(chan error, 1),
	}
	go func() { hs.served <- serve(ctx, toAgentR, fromAgentW, opts, h) }()
	hs.conn = acp.NewClientSideConnection(hs.client, toAgentW, fromAgentR)
	hs.conn.SetLogger(slog.New(slog.DiscardHandler))
	tb.Cleanup(func() { _ = hs.shutdown() })
	return hs
}

// shutdown closes the client's end like a departing peer, waits for Serve
// to return, then closes the agent's out so the client connection ends too.
// It returns Serve's result.
func (hs *harness) shutdown() error {
	hs.tb.Helper()
	hs.stopOnce.Do(func() {
		defer hs.cancel()
		_ = hs.toAgent.Close()
		hs.serveErr = await(hs.tb, hs.served, "Serve's return after the client closed its pipe")
		_ = hs.fromAgent.Close()
		await(hs.tb, hs.conn.Done(), "the client connection's end")
	})
	return hs.serveErr
}

// newSession creates a session and fails the test on error.
func (hs *harness) newSession() acp.SessionId {
	hs.tb.Helper()
	r, err := hs.conn.NewSession(within(hs.tb), acp.NewSessionRequest{Cwd: "/", McpServers: []acp.McpServer{}})
	if err != nil {
		hs.tb.Fatalf("session/new: %v", err)
	}
	return r.SessionId
}

// prompt sends one text prompt and waits for the turn's result.
func (hs *harness) prompt(ctx context.Context, sid acp.SessionId, text string) (acp.PromptResponse, error) {
	return hs.conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

// turnResult is a finished prompt.
type turnResult struct {
	resp acp.PromptResponse
	err  error
}

// promptAsync sends a prompt from a new goroutine; the result arrives on the
// returned channel.
func (hs *harness) promptAsync(ctx context.Context, sid acp.SessionId, text string) <-chan turnResult {
	ch := make(chan turnResult, 1)
	go func() {
		r, err := hs.prompt(ctx, sid, text)
		ch <- turnResult{r, err}
	}()
	return ch
}

// await receives from ch, failing the test if nothing comes within
// waitLimit; what names what it waits for.
func await[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	return testkit.Recv(tb, waitLimit, ch, what)
}

// holdTurn holds a hooked turn until release is closed (nil: never) or
// the turn's ctx ends; neither within waitLimit is a test error, msg.
func holdTurn(tb testing.TB, ctx context.Context, release <-chan struct{}, msg string) {
	select {
	case <-release:
	case <-ctx.Done():
	case <-time.After(waitLimit):
		tb.Error(msg)
	}
}

// rpcError returns err's JSON-RPC error, failing the test if it is not one.
func rpcError(tb testing.TB, err error) *acp.RequestError {
	tb.Helper()
	var re *acp.RequestError
	if !errors.As(err, &re) {
		tb.Fatalf("got error %v, want a JSON-RPC error", err)
	}
	return re
}
