package acptest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

// sdkAgent is the fake v1 agent on the SDK's agent side.
type sdkAgent struct {
	demoagent.Unsupported

	mode  string
	crash bool // crash-after-init: this run crashes at session/new
	// out is stdout: the SDK's messages and flood's bursts, each one
	// whole Write.
	out *jsonrpc.LockedWriter

	mu       sync.Mutex
	conn     *acpsdk.AgentSideConnection
	sessions map[string]bool
	prompted bool // lost-session and busy fire once per process
}

func runSDK(mode string) int {
	a := &sdkAgent{mode: mode, sessions: map[string]bool{}, out: &jsonrpc.LockedWriter{W: os.Stdout}}
	switch mode {
	case "echo", "slow-chunks", "crash-after-init", "crash-mid-turn", "hang", "ignore-sigterm",
		"spam-stderr", "flood", "bigline", "lost-session", "busy", "perm", "perm-hold", "slow-new", "ansi-stderr", "grandchild", "close-stdout", "term-grandchild":
	default:
		fmt.Fprintf(os.Stderr, "acptest: unknown mode %q\n", mode)
		return 2
	}
	if mode == "crash-after-init" {
		a.crash = bumpCounter("runs")
	}
	if mode == "ignore-sigterm" {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	}
	if mode == "spam-stderr" {
		w := bufio.NewWriterSize(os.Stderr, 64<<10)
		for i := 0; i < envInt("ZCB_ACPTEST_LINES", 5000); i++ {
			fmt.Fprintf(w, "spam line %d\n", i)
		}
		_, _ = w.WriteString("thread 'main' panicked at src/main.rs:1:1: boom\n")
		_ = w.Flush()
	}
	if mode == "grandchild" || mode == "term-grandchild" {
		// A helper in the agent's process group. grandchild's ignores
		// SIGTERM and stdin EOF: only a SIGKILL to the group ends it.
		// term-grandchild's logs a SIGTERM and exits; the agent, which
		// ignores stdin EOF, then waits for it before exiting itself, so
		// the line is written before the ladder's SIGKILL.
		gcMode := "ignore-sigterm"
		if mode == "term-grandchild" {
			gcMode = "term-logger"
		}
		self, _ := os.Executable()
		gc := exec.Command(self)
		gc.Env = append(os.Environ(), ModeEnv+"="+gcMode)
		gc.Stderr = os.Stderr
		if err := gc.Start(); err == nil {
			fmt.Fprintf(os.Stderr, "acptest: grandchild %d\n", gc.Process.Pid)
			if mode == "term-grandchild" {
				term := make(chan os.Signal, 1)
				signal.Notify(term, syscall.SIGTERM)
				go func() {
					<-term
					_ = gc.Wait()
					os.Exit(0)
				}()
			}
		}
	}
	if mode == "ansi-stderr" {
		// A tracing subscriber's coloured line, a bell, a carriage return
		// and a tab, as real agents print them to a non-terminal.
		_, _ = os.Stderr.WriteString("\x1b[2m2026-05-22T10:00:00Z\x1b[0m \x1b[32m INFO\x1b[0m zeroclaw::acp:\tready\a\r\n")
	}
	var in io.Reader = os.Stdin
	if mode == "slow-chunks" {
		// Reported as each line is read, not from the SDK's handler: the
		// handler may still be queued when stdin ends and the fake exits.
		in = &cancelTap{r: os.Stdin}
	}
	conn := newAgentConn(a, a.out, in, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	a.mu.Lock()
	a.conn = conn
	a.mu.Unlock()
	<-conn.Done()
	if mode == "ignore-sigterm" || mode == "close-stdout" || mode == "term-grandchild" {
		blockForever() // only SIGKILL ends it
	}
	return 0
}

func (a *sdkAgent) Initialize(context.Context, acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	if gate := os.Getenv("ZCB_ACPTEST_INIT_GATE"); gate != "" {
		// A slow start: answered once the test says so.
		fmt.Fprintf(os.Stderr, "acptest: initialize waits for %s\n", gate)
		for !fileExists(gate) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	r := acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentInfo:       &acpsdk.Implementation{Name: "acptest-" + a.mode, Version: "1"},
		AuthMethods:     []acpsdk.AuthMethod{},
	}
	r.AgentCapabilities.SessionCapabilities.Close = &acpsdk.SessionCloseCapabilities{}
	return r, nil
}

func (a *sdkAgent) NewSession(context.Context, acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	if a.crash {
		os.Exit(3)
	}
	if a.mode == "close-stdout" {
		// A wedged agent: its connection is gone but the process lives on
		// and ignores the polite steps of the stop ladder.
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		_ = os.Stdout.Close()
		blockForever()
	}
	if a.mode == "slow-new" {
		// Like a real agent, it finishes creating the session even when
		// the client abandons the request.
		if gate := os.Getenv("ZCB_ACPTEST_GATE"); gate != "" {
			// Answered once the test has seen the client give up: late,
			// however slow the machine is.
			for !fileExists(gate) {
				time.Sleep(5 * time.Millisecond)
			}
		} else {
			time.Sleep(envDuration("ZCB_ACPTEST_DELAY", 300*time.Millisecond))
		}
	}
	sid := newSessionID()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions[sid] = true
	if a.mode == "slow-new" {
		fmt.Fprintf(os.Stderr, "acptest: session/new %s\n", sid)
	}
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(sid)}, nil
}

func (a *sdkAgent) CloseSession(_ context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	a.mu.Lock()
	known := a.sessions[string(p.SessionId)]
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	fmt.Fprintf(os.Stderr, "acptest: session/close %s\n", p.SessionId)
	if !known {
		return acpsdk.CloseSessionResponse{}, sessionNotFound(p.SessionId)
	}
	return acpsdk.CloseSessionResponse{}, nil
}

// Cancel needs no work: the SDK cancels the session's prompt ctx.
// slow-chunks reports each session/cancel on stderr as it reads it
// (cancelTap), so a test of the bridge can see its turns cancelled in
// protocol.
func (a *sdkAgent) Cancel(context.Context, acpsdk.CancelNotification) error { return nil }

// cancelTap passes stdin through and reports every session/cancel line on
// stderr as it is read, before the SDK dispatches it.
type cancelTap struct {
	r    io.Reader
	line []byte
}

func (t *cancelTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	for _, b := range p[:n] {
		if b != '\n' {
			t.line = append(t.line, b)
			continue
		}
		var m struct {
			Method string `json:"method"`
			Params struct {
				SessionID string `json:"sessionId"`
			} `json:"params"`
		}
		if json.Unmarshal(t.line, &m) == nil && m.Method == "session/cancel" {
			fmt.Fprintf(os.Stderr, "acptest: session/cancel %s\n", m.Params.SessionID)
		}
		t.line = t.line[:0]
	}
	return n, err
}

// awaitFile waits until the file exists (true) or ctx ends (false).
func awaitFile(ctx context.Context, name string) bool {
	for !fileExists(name) {
		if !demoagent.Pause(ctx, 5*time.Millisecond) {
			return false
		}
	}
	return true
}

func (a *sdkAgent) c() *acpsdk.AgentSideConnection {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

func (a *sdkAgent) chunk(ctx context.Context, sid acpsdk.SessionId, text string) error {
	return a.c().SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: sid, Update: acpsdk.UpdateAgentMessageText(text)})
}

var (
	cancelled = acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}
	endTurn   = acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}
)

// recordPrompt appends text, JSON-encoded on one line, to the file
// ZCB_ACPTEST_PROMPT_LOG names, so a test reads back exactly what the
// agent was asked; without it, nothing. A failed write is reported on
// stderr.
func (a *sdkAgent) recordPrompt(text string) {
	path := os.Getenv("ZCB_ACPTEST_PROMPT_LOG")
	if path == "" {
		return
	}
	line, _ := json.Marshal(text) // a string always encodes
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		_, err = f.Write(append(line, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "acptest: prompt log:", err)
	}
}

func (a *sdkAgent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	sid := p.SessionId
	var parts []string
	for _, b := range p.Prompt {
		if b.Text != nil {
			parts = append(parts, b.Text.Text)
		}
	}
	text := strings.Join(parts, "\n")
	a.recordPrompt(text)

	a.mu.Lock()
	known := a.sessions[string(sid)]
	first := !a.prompted
	a.prompted = true
	if first && a.mode == "lost-session" {
		delete(a.sessions, string(sid))
		known = false
	}
	a.mu.Unlock()
	if !known {
		return acpsdk.PromptResponse{}, sessionNotFound(sid)
	}
	if first && a.mode == "busy" {
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32002, Message: "Session already has an active prompt turn: " + string(sid)}
	}
	if strings.Contains(text, "FAIL") {
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32603, Message: "Agent turn failed: requested"}
	}

	switch a.mode {
	case "slow-chunks":
		n, d := envInt("ZCB_ACPTEST_CHUNKS", 20), envDuration("ZCB_ACPTEST_DELAY", 50*time.Millisecond)
		gate := os.Getenv("ZCB_ACPTEST_GATE")
		for i := 0; i < n; i++ {
			if err := a.chunk(ctx, sid, fmt.Sprintf("c%d ", i)); err != nil || !demoagent.Pause(ctx, d) {
				return cancelled, nil
			}
			if i == 0 && gate != "" && !awaitFile(ctx, gate) {
				return cancelled, nil
			}
		}
		return endTurn, nil
	case "crash-mid-turn":
		if bumpCounter("prompts") {
			_ = a.chunk(ctx, sid, "😊 about to")
			os.Exit(4)
		}
	case "hang":
		select {} // ignores cancellation; the process ends at stdin EOF
	case "flood":
		if err := a.flood(sid, envInt("ZCB_ACPTEST_FLOOD", 3000)); err != nil {
			return acpsdk.PromptResponse{}, err
		}
		return endTurn, nil
	case "bigline":
		if err := a.bigline(sid); err != nil {
			return acpsdk.PromptResponse{}, err
		}
		if err := a.chunk(ctx, sid, "😊 small"); err != nil {
			return cancelled, nil
		}
		return endTurn, nil
	case "perm", "perm-hold":
		return a.permTurn(ctx, sid, text)
	}
	for _, part := range Thirds(Echo(text)) {
		if err := a.chunk(ctx, sid, part); err != nil {
			return cancelled, nil
		}
	}
	if ctx.Err() != nil {
		return cancelled, nil
	}
	return endTurn, nil
}

// shapeNames name the Shapes in "tools:" prompts.
var shapeNames = map[string]Shape{"zeroclaw": ZeroClaw, "zeroclaw-may": ZeroClawMay, "codex": Codex, "claude": Claude, "gemini": Gemini}

// toolsTurn plays a "tools:<shape>[/<locale>]:<tool>[|<title>],…" prompt
// and replies "😊 <tool>=<outcome> …", one entry per permission request.
func (a *sdkAgent) toolsTurn(ctx context.Context, sid acpsdk.SessionId, spec string) (acpsdk.PromptResponse, error) {
	head, list, _ := strings.Cut(spec, ":")
	name, locale, _ := strings.Cut(head, "/")
	shape, ok := shapeNames[name]
	if !ok {
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32602, Message: "unknown shape " + name}
	}
	var tools []Tool
	for _, t := range strings.Split(list, ",") {
		n, title, _ := strings.Cut(t, "|")
		tools = append(tools, Tool{Name: n, Title: title})
	}
	var mu sync.Mutex
	var seq int
	var parts []string
	p := &toolPlayer{conn: a.c(), raw: func(b []byte) error { _, err := a.out.Write(b); return err },
		sid: string(sid), shape: shape, locale: locale, seq: &seq, mu: &mu,
		asked: func(x Asked) { parts = append(parts, x.Tool+"="+x.Outcome) }}
	stopped, err := p.play(ctx, tools)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	if stopped {
		return cancelled, nil
	}
	if err := a.chunk(ctx, sid, "😊 "+strings.Join(parts, " ")); err != nil || ctx.Err() != nil {
		return cancelled, nil
	}
	return endTurn, nil
}

// permTurn asks for a permission the way ZeroClaw does and reports the outcome.
func (a *sdkAgent) permTurn(ctx context.Context, sid acpsdk.SessionId, text string) (acpsdk.PromptResponse, error) {
	if spec, ok := strings.CutPrefix(text, "tools:"); ok {
		return a.toolsTurn(ctx, sid, spec)
	}
	req := acpsdk.RequestPermissionRequest{SessionId: sid}
	if q, ok := strings.CutPrefix(text, "ask:"); ok {
		req.ToolCall = acpsdk.ToolCallUpdate{ToolCallId: "ask-user-1", Title: acpsdk.Ptr(q),
			Kind: acpsdk.Ptr(acpsdk.ToolKindOther), Status: acpsdk.Ptr(acpsdk.ToolCallStatusPending)}
		req.Options = []acpsdk.PermissionOption{
			{OptionId: "choice-0", Name: "Yes", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "choice-1", Name: "No", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Skip", Kind: acpsdk.PermissionOptionKindRejectOnce},
		}
	} else if cmd, ok := strings.CutPrefix(text, "cmd:"); ok {
		// A codex-style request: the command as the title, no tool name.
		req.ToolCall = acpsdk.ToolCallUpdate{ToolCallId: "cmd-1", Title: acpsdk.Ptr(cmd),
			Status: acpsdk.Ptr(acpsdk.ToolCallStatusPending)}
		req.Options = []acpsdk.PermissionOption{
			{OptionId: "allow-once", Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "reject-once", Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
		}
	} else {
		tool, ok := strings.CutPrefix(text, "tool:")
		if !ok || tool == "" {
			tool = "shell"
		}
		if err := a.c().SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: sid,
			Update: acpsdk.StartToolCall("call-1", tool, acpsdk.WithStartStatus(acpsdk.ToolCallStatusPending))}); err != nil {
			return cancelled, nil
		}
		req.ToolCall = acpsdk.ToolCallUpdate{ToolCallId: "approval-1", Title: acpsdk.Ptr("Approve " + tool + "?"),
			Kind: acpsdk.Ptr(acpsdk.ToolKindOther), Status: acpsdk.Ptr(acpsdk.ToolCallStatusPending)}
		req.Options = []acpsdk.PermissionOption{
			{OptionId: "allow-once", Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "allow-always", Name: "Always allow", Kind: acpsdk.PermissionOptionKindAllowAlways},
			{OptionId: "reject-with-edit", Name: "Reject with edit", Kind: "reject_with_edit"},
			{OptionId: "reject-once", Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
		}
	}
	permCtx := ctx
	if a.mode == "perm-hold" {
		permCtx = context.Background() // the approval gate ignores cancellation
	}
	resp, err := a.c().RequestPermission(permCtx, req)
	if ctx.Err() != nil {
		return cancelled, nil
	}
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	outcome := "cancelled"
	if s := resp.Outcome.Selected; s != nil {
		outcome = string(s.OptionId)
	}
	if err := a.chunk(ctx, sid, "😊 outcome="+outcome); err != nil || ctx.Err() != nil {
		return cancelled, nil
	}
	return endTurn, nil
}

// flood writes n agent_message_chunk notifications "x" as one burst of
// pre-encoded lines: one Write through the stdout lock the SDK writes
// under, so no message of the SDK's lands inside it.
func (a *sdkAgent) flood(sid acpsdk.SessionId, n int) error {
	line, err := jsonrpc.EncodeNotification(acpsdk.ClientMethodSessionUpdate,
		acpsdk.SessionNotification{SessionId: sid, Update: acpsdk.UpdateAgentMessageText("x")})
	if err != nil {
		return err
	}
	var burst bytes.Buffer
	burst.Grow(n * (len(line) + 1))
	for i := 0; i < n; i++ {
		burst.Write(line)
		burst.WriteByte('\n')
	}
	_, err = a.out.Write(burst.Bytes())
	return err
}

// bigline writes one agent_message_chunk notification whose text is 12 MiB
// of "a", assembled by hand: encoding it with encoding/json takes seconds
// under the race detector.
func (a *sdkAgent) bigline(sid acpsdk.SessionId) error {
	head, err := jsonrpc.EncodeNotification(acpsdk.ClientMethodSessionUpdate,
		acpsdk.SessionNotification{SessionId: sid, Update: acpsdk.UpdateAgentMessageText("PAD")})
	if err != nil {
		return err
	}
	before, after, _ := strings.Cut(string(head), "PAD")
	_, err = a.out.Write([]byte(before + strings.Repeat("a", 12<<20) + after + "\n"))
	return err
}

func sessionNotFound(sid acpsdk.SessionId) error {
	return &acpsdk.RequestError{Code: -32000, Message: "Session not found: " + string(sid)}
}

// newSessionID returns a random UUID-shaped session id.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// runTermLogger waits for SIGTERM, reports it on stderr and exits.
func runTermLogger() int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Fprintf(os.Stderr, "acptest: term-logger ready %d\n", os.Getpid())
	<-term
	fmt.Fprintf(os.Stderr, "acptest: SIGTERM %d\n", os.Getpid())
	return 0
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
