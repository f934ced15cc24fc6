package demoagent

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

func TestInitializeAndNewSession(t *testing.T) {
	verifyNoLeaks(t)
	hs := startAgent(t, Options{}, hooks{})

	r, err := hs.conn.Initialize(within(t), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if r.ProtocolVersion != 1 {
		t.Errorf("protocolVersion = %d, want 1", r.ProtocolVersion)
	}
	if i := r.AgentInfo; i == nil || i.Name != "zeroclaw-bridge-demo" || i.Title == nil ||
		*i.Title != "zeroclaw-bridge demo agent" || i.Version != "1" {
		t.Errorf("agentInfo = %+v", i)
	}
	caps := r.AgentCapabilities
	if caps.LoadSession || caps.SessionCapabilities.Close == nil {
		t.Errorf("agentCapabilities = %+v, want loadSession false and sessionCapabilities.close", caps)
	}
	if len(r.AuthMethods) != 0 || r.Meta != nil {
		t.Errorf("authMethods = %v, _meta = %v; want none", r.AuthMethods, r.Meta)
	}

	seen := map[acp.SessionId]bool{}
	for range 5 {
		sid := hs.newSession()
		if !strings.HasPrefix(string(sid), "demo-") || len(sid) <= len("demo-") {
			t.Errorf("session id %q, want demo-<hex>", sid)
		}
		if seen[sid] {
			t.Errorf("session id %q handed out twice", sid)
		}
		seen[sid] = true
	}
	if err := hs.shutdown(); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

// TestWireFormat speaks raw JSON lines to the agent, as the bridge does, and
// checks what the SDK types cannot show: authMethods is [] (not null or
// absent), there is no _meta, and out carries nothing but JSON-RPC messages.
func TestWireFormat(t *testing.T) {
	verifyNoLeaks(t)
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- Serve(context.Background(), toAgentR, fromAgentW, Options{}) }()
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(fromAgentR)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	send := func(line string) {
		t.Helper()
		done := make(chan error, 1)
		go func() { _, err := io.WriteString(toAgentW, line+"\n"); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("write: %v", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("agent does not read its input")
		}
	}
	// next reads the agent's next line; every line must be JSON-RPC 2.0.
	next := func() jsonrpc.Message {
		t.Helper()
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("agent closed its output")
			}
			var m jsonrpc.Message
			if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
				t.Fatalf("agent wrote %q: not a JSON-RPC 2.0 message (%v)", line, err)
			}
			return m
		case <-time.After(waitLimit):
			t.Fatal("no message from the agent")
			return jsonrpc.Message{}
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	m := next()
	var init map[string]json.RawMessage
	if err := json.Unmarshal(m.Result, &init); err != nil || string(m.ID) != "1" {
		t.Fatalf("initialize answered %+v (%v)", m, err)
	}
	if got := string(init["authMethods"]); got != "[]" {
		t.Errorf("authMethods = %s, want []", got)
	}
	if _, ok := init["_meta"]; ok {
		t.Errorf("initialize result has _meta: %s", init["_meta"])
	}
	var caps struct {
		LoadSession         *bool                      `json:"loadSession"`
		SessionCapabilities map[string]json.RawMessage `json:"sessionCapabilities"`
	}
	if err := json.Unmarshal(init["agentCapabilities"], &caps); err != nil {
		t.Fatalf("agentCapabilities: %v", err)
	}
	if caps.LoadSession != nil && *caps.LoadSession {
		t.Error("loadSession advertised")
	}
	if got := string(caps.SessionCapabilities["close"]); got != "{}" {
		t.Errorf("sessionCapabilities.close = %q, want {}", got)
	}
	if got, want := string(init["agentInfo"]), `{"name":"zeroclaw-bridge-demo","title":"zeroclaw-bridge demo agent","version":"1"}`; got != want {
		t.Errorf("agentInfo = %s, want %s", got, want)
	}
	if got := string(init["protocolVersion"]); got != "1" {
		t.Errorf("protocolVersion = %s, want 1", got)
	}

	send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if m := next(); json.Unmarshal(m.Result, &created) != nil || created.SessionID == "" {
		t.Fatalf("session/new answered %+v", m)
	}

	text := "[User] hi from the wire"
	send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + created.SessionID +
		`","prompt":[{"type":"text","text":"` + text + `"}]}}`)
	var streamed strings.Builder
	for {
		m := next()
		if m.Method == "session/update" {
			var p struct {
				SessionID string `json:"sessionId"`
				Update    struct {
					SessionUpdate string `json:"sessionUpdate"`
					Content       struct {
						Type string `json:"type"`
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			}
			if err := json.Unmarshal(m.Params, &p); err != nil || p.SessionID != created.SessionID ||
				p.Update.SessionUpdate != "agent_message_chunk" || p.Update.Content.Type != "text" {
				t.Fatalf("unexpected update %s (%v)", m.Params, err)
			}
			streamed.WriteString(p.Update.Content.Text)
			continue
		}
		if string(m.ID) != "3" || string(m.Result) != `{"stopReason":"end_turn"}` {
			t.Fatalf("prompt answered %+v, want stopReason end_turn", m)
		}
		break
	}
	if got := streamed.String(); got != Reply(text) {
		t.Errorf("streamed %q, want %q", got, Reply(text))
	}

	_ = toAgentW.Close()
	if err := await(t, served, "Serve's return at EOF"); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	_ = fromAgentW.Close()
	for range lines {
		t.Error("agent wrote after its last response")
	}
}

func TestPromptStreamsReply(t *testing.T) {
	verifyNoLeaks(t)
	hs := startAgent(t, Options{ChunkDelay: time.Millisecond}, hooks{})
	sid := hs.newSession()
	text := "[Context] be nice\n\n[User] hello robot"

	r, err := hs.prompt(within(t), sid, text)
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v; want end_turn", r, err)
	}
	chunks := hs.client.chunksOf(sid)
	reply := strings.Join(chunks, "")
	if len(chunks) < 3 {
		t.Errorf("%d chunks %q, want at least 3", len(chunks), chunks)
	}
	if want := Reply(text); reply != want {
		t.Errorf("chunks join to %q, want Reply = %q", reply, want)
	}
	emoji, rest, _ := strings.Cut(reply, " ")
	if !slices.Contains(Emoji(), emoji) {
		t.Errorf("reply %q does not start with an allowed emoji and a space", reply)
	}
	if !strings.Contains(rest, "hello robot") || strings.Contains(rest, "be nice") {
		t.Errorf("reply %q should quote the user's line and only it", reply)
	}
	if o := hs.client.otherUpdates(); len(o) != 0 {
		t.Errorf("unexpected non-chunk updates: %+v", o)
	}
}

func TestPromptJoinsTextBlocks(t *testing.T) {
	verifyNoLeaks(t)
	hs := startAgent(t, Options{}, hooks{})
	sid := hs.newSession()
	blocks := []acp.ContentBlock{
		acp.TextBlock("[Context] persona"),
		acp.ImageBlock("aGk=", "image/png"), // ignored: not text
		acp.TextBlock("[User] second block\n[Reply rules] be brief"),
	}
	r, err := hs.conn.Prompt(within(t), acp.PromptRequest{SessionId: sid, Prompt: blocks})
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	want := Reply("[Context] persona\n[User] second block\n[Reply rules] be brief")
	if got := strings.Join(hs.client.chunksOf(sid), ""); got != want || !strings.Contains(got, `"second block"`) {
		t.Errorf("reply %q, want %q", got, want)
	}
}

// A cancel ends the prompt between chunks: an ignored cancel would end it
// with end_turn after every chunk, which the checks below refuse; how soon
// it ended is printed.
func TestCancelAfterFirstChunk(t *testing.T) {
	verifyNoLeaks(t)
	hs := startAgent(t, Options{ChunkDelay: 200 * time.Millisecond}, hooks{})
	sid := hs.newSession()
	const text = "tell me a long story about robots"
	ctx := within(t)

	res := hs.promptAsync(ctx, sid, text)
	hs.client.waitChunks(sid, 1)
	cancelled := time.Now()
	if err := hs.conn.Cancel(ctx, acp.CancelNotification{SessionId: sid}); err != nil {
		t.Fatalf("session/cancel: %v", err)
	}
	r := await(t, res, "the prompt's result")
	t.Logf("prompt ended %s after session/cancel", time.Since(cancelled).Round(time.Millisecond))
	if r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("cancelled prompt = %+v, %v; want stopReason cancelled", r.resp, r.err)
	}
	sent := len(hs.client.chunksOf(sid))
	if total := len(Chunks(Reply(text))); sent >= total {
		t.Errorf("all %d chunks were streamed despite the cancel", sent)
	}

	// The session stays usable.
	r2, err := hs.prompt(ctx, sid, "again")
	if err != nil || r2.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt after cancel = %+v, %v; want end_turn", r2, err)
	}
	if got := strings.Join(hs.client.chunksOf(sid)[sent:], ""); got != Reply("again") {
		t.Errorf("second turn streamed %q, want %q", got, Reply("again"))
	}
}

func TestCancelBeforeFirstChunk(t *testing.T) {
	verifyNoLeaks(t)
	started := make(chan struct{})
	var first atomic.Bool
	first.Store(true)
	h := hooks{turnStarted: func(ctx context.Context, _ acp.SessionId) {
		if !first.CompareAndSwap(true, false) {
			return
		}
		close(started)
		// Hold the first turn before its first chunk until it is cancelled.
		holdTurn(t, ctx, nil, "turn was not cancelled")
	}}
	hs := startAgent(t, Options{}, h)
	sid := hs.newSession()
	ctx := within(t)

	res := hs.promptAsync(ctx, sid, "hello")
	await(t, started, "the turn's start")
	if err := hs.conn.Cancel(ctx, acp.CancelNotification{SessionId: sid}); err != nil {
		t.Fatalf("session/cancel: %v", err)
	}
	r := await(t, res, "the prompt's result")
	if r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("prompt = %+v, %v; want stopReason cancelled", r.resp, r.err)
	}
	if c := hs.client.chunksOf(sid); len(c) != 0 {
		t.Errorf("a turn cancelled before its first chunk streamed %q", c)
	}
	if r, err := hs.prompt(ctx, sid, "hello again"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Errorf("next prompt = %+v, %v; want end_turn", r, err)
	}
}

// TestBusySession checks that a second prompt on a session with a running
// turn is rejected with -32002 and that the rejection leaves the running
// turn alone, although the SDK cancels the first prompt's context when the
// second one arrives.
func TestBusySession(t *testing.T) {
	verifyNoLeaks(t)
	started := make(chan acp.SessionId, 4)
	release := make(chan struct{})
	h := hooks{turnStarted: func(ctx context.Context, sid acp.SessionId) {
		started <- sid
		holdTurn(t, ctx, release, "turn was never released")
	}}
	hs := startAgent(t, Options{ChunkDelay: time.Millisecond}, h)
	sid := hs.newSession()
	ctx := within(t)

	res := hs.promptAsync(ctx, sid, "first")
	await(t, started, "the first turn's start")
	_, err := hs.prompt(ctx, sid, "second")
	re := rpcError(t, err)
	if want := "Session already has an active prompt turn: " + string(sid); re.Code != -32002 || re.Message != want {
		t.Errorf("second prompt error = %d %q, want -32002 %q", re.Code, re.Message, want)
	}
	close(release)
	r := await(t, res, "the prompt's result")
	if r.err != nil || r.resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("first prompt = %+v, %v; want end_turn (the rejected prompt must not cancel it)", r.resp, r.err)
	}
	if got := strings.Join(hs.client.chunksOf(sid), ""); got != Reply("first") {
		t.Errorf("session streamed %q, want only %q", got, Reply("first"))
	}
	if len(started) != 0 {
		t.Error("the rejected prompt started a turn")
	}
}

func TestConcurrentSessions(t *testing.T) {
	verifyNoLeaks(t)
	const n = 4
	var (
		mu      sync.Mutex
		count   int
		barrier = make(chan struct{})
	)
	// Each turn waits until all n have started: this passes only if the
	// turns run at the same time.
	h := hooks{turnStarted: func(ctx context.Context, _ acp.SessionId) {
		mu.Lock()
		count++
		if count == n {
			close(barrier)
		}
		mu.Unlock()
		holdTurn(t, ctx, barrier, "turns did not run concurrently")
	}}
	hs := startAgent(t, Options{ChunkDelay: time.Millisecond}, h)
	ctx := within(t)
	sids := make([]acp.SessionId, n)
	results := make([]<-chan turnResult, n)
	for i := range n {
		sids[i] = hs.newSession()
	}
	for i, sid := range sids {
		results[i] = hs.promptAsync(ctx, sid, "[User] I am caller "+string(rune('A'+i)))
	}
	for i, sid := range sids {
		r := await(t, results[i], "the prompt's result")
		if r.err != nil || r.resp.StopReason != acp.StopReasonEndTurn {
			t.Errorf("session %d: %+v, %v", i, r.resp, r.err)
		}
		if got, want := strings.Join(hs.client.chunksOf(sid), ""), Reply("[User] I am caller "+string(rune('A'+i))); got != want {
			t.Errorf("session %d streamed %q, want %q", i, got, want)
		}
	}
}

func TestUnknownSession(t *testing.T) {
	verifyNoLeaks(t)
	hs := startAgent(t, Options{}, hooks{})
	ctx := within(t)

	_, err := hs.prompt(ctx, "nope", "hello")
	if re := rpcError(t, err); re.Code != -32000 || re.Message != "Session not found: nope" {
		t.Errorf("prompt on an unknown session: %d %q, want -32000 %q", re.Code, re.Message, "Session not found: nope")
	}
	_, err = hs.conn.CloseSession(ctx, acp.CloseSessionRequest{SessionId: "nope"})
	if re := rpcError(t, err); re.Code != -32000 {
		t.Errorf("session/close of an unknown session: %d %q, want -32000", re.Code, re.Message)
	}
	// session/cancel is a notification: an unknown session is ignored.
	if err := hs.conn.Cancel(ctx, acp.CancelNotification{SessionId: "nope"}); err != nil {
		t.Errorf("session/cancel: %v", err)
	}
	sid := hs.newSession()
	if r, err := hs.prompt(ctx, sid, "still alive?"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Errorf("prompt = %+v, %v", r, err)
	}
}

func TestCloseSessionCancelsTurn(t *testing.T) {
	verifyNoLeaks(t)
	hs := startAgent(t, Options{ChunkDelay: time.Minute}, hooks{})
	sid := hs.newSession()
	ctx := within(t)

	res := hs.promptAsync(ctx, sid, "a long one")
	hs.client.waitChunks(sid, 1)
	if _, err := hs.conn.CloseSession(ctx, acp.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	if r := await(t, res, "the prompt's result"); r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Errorf("prompt on the closed session = %+v, %v; want cancelled", r.resp, r.err)
	}
	_, err := hs.prompt(ctx, sid, "hello?")
	if re := rpcError(t, err); re.Code != -32000 {
		t.Errorf("prompt after session/close: %d %q, want -32000", re.Code, re.Message)
	}
}

func TestUnsupportedMethods(t *testing.T) {
	verifyNoLeaks(t)
	hs := startAgent(t, Options{}, hooks{})
	sid := hs.newSession()
	ctx := within(t)
	calls := map[string]func() error{
		"authenticate": func() error {
			_, err := hs.conn.Authenticate(ctx, acp.AuthenticateRequest{MethodId: "x"})
			return err
		},
		"session/list": func() error {
			_, err := hs.conn.ListSessions(ctx, acp.ListSessionsRequest{})
			return err
		},
		"session/load": func() error {
			_, err := hs.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: sid, Cwd: "/", McpServers: []acp.McpServer{}})
			return err
		},
		"session/resume": func() error {
			_, err := hs.conn.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: sid, Cwd: "/"})
			return err
		},
		"session/set_mode": func() error {
			_, err := hs.conn.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: sid, ModeId: "x"})
			return err
		},
	}
	for method, call := range calls {
		if re := rpcError(t, call()); re.Code != -32601 {
			t.Errorf("%s: %d %q, want -32601 method not found", method, re.Code, re.Message)
		}
	}
}
