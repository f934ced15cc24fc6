package demoagent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"
)

// client records the chunks the agent streams, per session.
type client struct {
	mu     sync.Mutex
	chunks map[string][]string
	first  chan struct{} // closed at the first chunk
	once   sync.Once
}

func newClient() *client {
	return &client{chunks: map[string][]string{}, first: make(chan struct{})}
}

func (c *client) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	if u := n.Update.AgentMessageChunk; u != nil && u.Content.Text != nil {
		c.mu.Lock()
		c.chunks[string(n.SessionId)] = append(c.chunks[string(n.SessionId)], u.Content.Text.Text)
		c.mu.Unlock()
		c.once.Do(func() { close(c.first) })
	}
	return nil
}

func (c *client) got(sid acpsdk.SessionId) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.chunks[string(sid)]...)
}

func (c *client) RequestPermission(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return acpsdk.RequestPermissionResponse{}, errors.New("the demo agent must not ask for permissions")
}
func (c *client) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, errors.New("unexpected")
}
func (c *client) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, errors.New("unexpected")
}
func (c *client) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errors.New("unexpected")
}
func (c *client) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errors.New("unexpected")
}
func (c *client) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errors.New("unexpected")
}
func (c *client) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errors.New("unexpected")
}
func (c *client) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errors.New("unexpected")
}

// serve starts Serve over pipes and returns the client side connection.
func serve(t testing.TB, opts Options) (*acpsdk.ClientSideConnection, *client, func() error) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, toAgentR, fromAgentW, opts)
		_ = fromAgentW.Close()
	}()
	cl := newClient()
	conn := acpsdk.NewClientSideConnection(cl, toAgentW, fromAgentR)
	conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	stopped := false
	var serveErr error
	stop := func() error {
		if stopped {
			return serveErr
		}
		stopped = true
		_ = toAgentW.Close()
		select {
		case serveErr = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Serve did not return after the client closed")
		}
		select {
		case <-conn.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("client connection did not close")
		}
		cancel()
		return serveErr
	}
	t.Cleanup(func() { _ = stop() })
	return conn, cl, stop
}

func newSession(t testing.TB, conn *acpsdk.ClientSideConnection) acpsdk.SessionId {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: "/tmp", McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return r.SessionId
}

func prompt(ctx context.Context, conn *acpsdk.ClientSideConnection, sid acpsdk.SessionId, text string) (acpsdk.PromptResponse, error) {
	return conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
}

func TestInitializeAndSessions(t *testing.T) {
	defer goleak.VerifyNone(t)
	conn, _, stop := serve(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	if err != nil {
		t.Fatal(err)
	}
	if r.ProtocolVersion != 1 || r.AgentInfo == nil || r.AgentInfo.Name != "zeroclaw-bridge-demo" ||
		r.AgentCapabilities.SessionCapabilities.Close == nil || r.AuthMethods == nil {
		t.Errorf("initialize %+v", r)
	}
	if a, b := newSession(t, conn), newSession(t, conn); a == b || !strings.HasPrefix(string(a), "demo-") {
		t.Errorf("session ids %q %q", a, b)
	}
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestPromptStreamsReply(t *testing.T) {
	defer goleak.VerifyNone(t)
	conn, cl, stop := serve(t, Options{ChunkDelay: time.Millisecond})
	sid := newSession(t, conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	text := "[Context] be nice\n\n[User] hello robot"
	r, err := prompt(ctx, conn, sid, text)
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", r, err)
	}
	chunks := cl.got(sid)
	full := strings.Join(chunks, "")
	if len(chunks) < 3 || full != Reply(text) {
		t.Errorf("chunks %q, want ≥ 3 joining to %q", chunks, Reply(text))
	}
	emoji, rest, _ := strings.Cut(full, " ")
	if !slices.Contains(Emoji, emoji) || !strings.Contains(rest, `"hello robot"`) {
		t.Errorf("reply %q: want an allowed emoji, a space and the quoted user line", full)
	}
	_ = stop()
}

func TestUserLine(t *testing.T) {
	long := strings.Repeat("é", 500)
	tests := []struct{ name, in, want string }{
		{"plain", "hello", "hello"},
		{"trimmed", "  hi there \n", "hi there"},
		{"user marker", "[Context] persona\n\n[User] what's up?", "what's up?"},
		{"last user marker wins", "[User] first\n[User] second\nmore", "second"},
		{"directives after the user text", "[channel=dotty voice-TTS]\ntell me a joke\n[Context: Monday]\nBegin your reply now.\n[Reply rules]", "Begin your reply now."},
		{"only directives", "[a]\n[b]", "[b]"},
		{"blank", " \n\t\n", "(nothing)"},
		{"capped", long, strings.Repeat("é", 119) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UserLine(tt.in)
			if got != tt.want {
				t.Errorf("UserLine = %q, want %q", got, tt.want)
			}
			if utf8.RuneCountInString(got) > quoteCap {
				t.Errorf("line of %d runes exceeds the cap", utf8.RuneCountInString(got))
			}
			r := Reply(tt.in)
			emoji, _, _ := strings.Cut(r, " ")
			if !slices.Contains(Emoji, emoji) || Reply(tt.in) != r {
				t.Errorf("Reply %q: emoji not allowed or not deterministic", r)
			}
			if c := Chunks(r); len(c) < 3 || len(c) > 8 || strings.Join(c, "") != r {
				t.Errorf("Chunks %q", c)
			}
		})
	}
}

func TestCancelStopsTurnAndSessionStaysUsable(t *testing.T) {
	defer goleak.VerifyNone(t)
	conn, cl, stop := serve(t, Options{ChunkDelay: 200 * time.Millisecond})
	sid := newSession(t, conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		r   acpsdk.PromptResponse
		err error
	}
	res := make(chan result, 1)
	go func() {
		r, err := prompt(ctx, conn, sid, "tell me a long story")
		res <- result{r, err}
	}()
	select {
	case <-cl.first:
	case <-time.After(5 * time.Second):
		t.Fatal("no first chunk")
	}
	start := time.Now()
	if err := conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.err != nil || r.r.StopReason != acpsdk.StopReasonCancelled {
			t.Fatalf("cancelled prompt: %+v %v", r.r, r.err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("cancel took %s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("prompt did not end after cancel")
	}
	if n := len(cl.got(sid)); n >= len(Chunks(Reply("tell me a long story"))) {
		t.Errorf("all %d chunks sent despite the cancel", n)
	}
	r, err := prompt(ctx, conn, sid, "again")
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after cancel: %+v %v", r, err)
	}
	_ = stop()
}

func TestBusyAndUnknownSessions(t *testing.T) {
	defer goleak.VerifyNone(t)
	conn, cl, stop := serve(t, Options{ChunkDelay: 100 * time.Millisecond})
	sid := newSession(t, conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := make(chan acpsdk.PromptResponse, 1)
	go func() {
		r, _ := prompt(ctx, conn, sid, "first")
		first <- r
	}()
	<-cl.first
	_, err := prompt(ctx, conn, sid, "second")
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32002 {
		t.Errorf("second prompt err = %v, want -32002", err)
	}
	if r := <-first; r.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("first turn ended %q, want end_turn (the rejected prompt must not cancel it)", r.StopReason)
	}
	if got := strings.Join(cl.got(sid), ""); got != Reply("first") {
		t.Errorf("first turn streamed %q", got)
	}
	_, err = prompt(ctx, conn, "nope", "x")
	if !errors.As(err, &re) || re.Code != -32000 {
		t.Errorf("unknown session err = %v, want -32000", err)
	}
	_ = stop()
}

func TestServeReturnsOnContextCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	toAgentR, toAgentW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, toAgentR, io.Discard, Options{}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve ignored ctx")
	}
	_ = toAgentW.Close()
}

func BenchmarkTurn(b *testing.B) {
	conn, _, _ := serve(b, Options{})
	sid := newSession(b, conn)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := prompt(ctx, conn, sid, "hello robot"); err != nil {
			b.Fatal(err)
		}
	}
}
