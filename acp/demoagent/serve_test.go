package demoagent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"
)

func TestServeReturnsNilAtEOF(t *testing.T) {
	verifyNoLeaks(t)
	hs := startAgent(t, Options{}, hooks{})
	sid := hs.newSession()
	if _, err := hs.prompt(within(t), sid, "hi"); err != nil {
		t.Fatal(err)
	}
	if err := hs.shutdown(); err != nil {
		t.Errorf("Serve = %v, want nil at EOF", err)
	}
}

func TestServeReturnsAtEOFDuringTurn(t *testing.T) {
	verifyNoLeaks(t)
	hs := startAgent(t, Options{ChunkDelay: time.Minute}, hooks{})
	sid := hs.newSession()
	res := hs.promptAsync(within(t), sid, "never finishes on its own")
	hs.client.waitChunks(sid, 1)
	if err := hs.shutdown(); err != nil { // fails the test unless Serve returns promptly
		t.Errorf("Serve = %v, want nil", err)
	}
	// The client went away mid-turn; its call ends one way or another.
	await(t, res, "the prompt's result")
}

func TestServeStopsWhenContextEnds(t *testing.T) {
	verifyNoLeaks(t)
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, toAgentR, fromAgentW, Options{ChunkDelay: time.Minute}) }()
	cl := newTestClient(t)
	conn := acp.NewClientSideConnection(cl, toAgentW, fromAgentR)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	defer func() {
		_ = fromAgentW.Close()
		select {
		case <-conn.Done():
		case <-time.After(waitLimit):
			t.Error("client connection did not end")
		}
	}()
	r, err := conn.NewSession(within(t), acp.NewSessionRequest{Cwd: "/", McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := conn.Prompt(within(t), acp.PromptRequest{SessionId: r.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}})
		res <- err
	}()
	cl.waitChunks(r.SessionId, 1)

	cancel()
	if err := await(t, served, "Serve's return"); err != nil {
		t.Errorf("Serve = %v, want nil when ctx ends", err)
	}
	// Serve closed its input to stop the reader.
	if _, err := toAgentW.Write([]byte("{}\n")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("writing to the agent after Serve returned: %v, want io.ErrClosedPipe", err)
	}
	_ = fromAgentW.Close()
	select {
	case <-res:
	case <-time.After(waitLimit):
		t.Error("the client's prompt call never ended")
	}
}

func TestServeWithEndedContext(t *testing.T) {
	verifyNoLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in, w := io.Pipe()
	defer w.Close()
	var out bytes.Buffer
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, in, &out, Options{}) }()
	if err := await(t, served, "Serve's return"); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	if out.Len() != 0 {
		t.Errorf("Serve wrote %q without any request", out.String())
	}
}

// stuckReader blocks every Read until released; it cannot be interrupted.
type stuckReader struct{ release chan struct{} }

func (r stuckReader) Read([]byte) (int, error) {
	<-r.release
	return 0, io.EOF
}

func TestServeAbandonsUninterruptibleRead(t *testing.T) {
	verifyNoLeaks(t)
	in := stuckReader{release: make(chan struct{})}
	defer close(in.release) // lets the abandoned read finish before the leak check
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, in, io.Discard, Options{}) }()
	cancel()
	if err := await(t, served, "Serve's return"); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

func TestServeReportsReadError(t *testing.T) {
	verifyNoLeaks(t)
	boom := errors.New("boom")
	served := make(chan error, 1)
	go func() { served <- Serve(context.Background(), iotest.ErrReader(boom), io.Discard, Options{}) }()
	if err := await(t, served, "Serve's return"); !errors.Is(err, boom) {
		t.Errorf("Serve = %v, want an error wrapping %v", err, boom)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use that can wait for
// text to appear.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
	}
	b.changed = make(chan struct{})
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor reports whether text appears in the buffer within waitLimit.
func (b *syncBuffer) waitFor(text string) bool {
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		found := strings.Contains(b.buf.String(), text)
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

func TestLogsGoToTheLogger(t *testing.T) {
	verifyNoLeaks(t)
	var logs syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Name: "demo", Level: hclog.Debug, Output: &logs})
	hs := startAgent(t, Options{Logger: log}, hooks{})
	sid := hs.newSession()
	if _, err := hs.prompt(within(t), sid, "log me"); err != nil {
		t.Fatal(err)
	}
	if err := hs.shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"[DEBUG] demo: prompt: session=" + string(sid), // one Debug line per prompt
		// The SDK's diagnostics, via slog. The SDK logs this just after it
		// reports the disconnect, so it may follow Serve's return.
		"[INFO]  demo.acp: connection closed",
	} {
		if !logs.waitFor(want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}

func TestSlogHandlerFlattensAttrs(t *testing.T) {
	var logs syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})
	sl := slog.New(newSlogHandler(log)).With("conn", 1).WithGroup("req")
	sl.Debug("hidden")
	sl.Info("hello", "id", 7, slog.Group("sub", "k", "v"))
	sl.Error("bad")
	got := logs.String()
	if strings.Contains(got, "hidden") {
		t.Errorf("Debug passed an Info logger:\n%s", got)
	}
	for _, want := range []string{"[INFO]  hello: conn=1 req.id=7 req.sub.k=v", "[ERROR] bad: conn=1"} {
		if !strings.Contains(got, want) {
			t.Errorf("logs lack %q:\n%s", want, got)
		}
	}
}
