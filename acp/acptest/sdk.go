package acptest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// sdkAgent is the fake v1 agent on the SDK's agent side.
type sdkAgent struct {
	mode  string
	crash bool // crash-after-init: this run crashes at session/new

	mu       sync.Mutex
	conn     *acpsdk.AgentSideConnection
	sessions map[string]bool
	n        int
	prompted bool // lost-session and busy fire once per process
}

func runSDK(mode string) int {
	a := &sdkAgent{mode: mode, sessions: map[string]bool{}}
	switch mode {
	case "echo", "slow-chunks", "crash-after-init", "crash-mid-turn", "hang", "ignore-sigterm",
		"spam-stderr", "flood", "bigline", "lost-session", "busy", "perm", "perm-hold":
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
		w := os.Stderr
		lines := envInt("ZCB_ACPTEST_LINES", 5000)
		var b strings.Builder
		for i := 0; i < lines; i++ {
			fmt.Fprintf(&b, "spam line %d\n", i)
		}
		b.WriteString("thread 'main' panicked at src/main.rs:1:1: boom\n")
		_, _ = io.WriteString(w, b.String())
	}
	conn := acpsdk.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	conn.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	a.mu.Lock()
	a.conn = conn
	a.mu.Unlock()
	<-conn.Done()
	if mode == "ignore-sigterm" {
		select {} // only SIGKILL ends it
	}
	return 0
}

func (a *sdkAgent) Initialize(context.Context, acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
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
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	sid := fmt.Sprintf("%s-%d-%d", a.mode, os.Getpid(), a.n)
	a.sessions[sid] = true
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(sid)}, nil
}

func (a *sdkAgent) CloseSession(_ context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	a.mu.Lock()
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	fmt.Fprintf(os.Stderr, "acptest: session/close %s\n", p.SessionId)
	return acpsdk.CloseSessionResponse{}, nil
}

// Cancel needs no work: the SDK cancels the session's prompt ctx.
func (a *sdkAgent) Cancel(context.Context, acpsdk.CancelNotification) error { return nil }

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

func (a *sdkAgent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	sid := p.SessionId
	var parts []string
	for _, b := range p.Prompt {
		if b.Text != nil {
			parts = append(parts, b.Text.Text)
		}
	}
	text := strings.Join(parts, "\n")

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
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32000, Message: "Session not found: " + string(sid)}
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
		for i := 0; i < n; i++ {
			if err := a.chunk(ctx, sid, fmt.Sprintf("c%d ", i)); err != nil || sleep(ctx, d) != nil {
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
		select {}
	case "flood":
		for i := 0; i < envInt("ZCB_ACPTEST_FLOOD", 3000); i++ {
			if err := a.chunk(ctx, sid, "x"); err != nil {
				return cancelled, nil
			}
		}
		return endTurn, nil
	case "bigline":
		_ = a.chunk(ctx, sid, strings.Repeat("a", 12<<20))
		_ = a.chunk(ctx, sid, "😊 small")
		return endTurn, nil
	case "perm", "perm-hold":
		return a.permTurn(ctx, sid, text)
	}
	for _, part := range thirds(echoReply(text)) {
		if err := a.chunk(ctx, sid, part); err != nil {
			return cancelled, nil
		}
	}
	if ctx.Err() != nil {
		return cancelled, nil
	}
	return endTurn, nil
}

// permTurn asks for a permission the way ZeroClaw does and reports the outcome.
func (a *sdkAgent) permTurn(ctx context.Context, sid acpsdk.SessionId, text string) (acpsdk.PromptResponse, error) {
	req := acpsdk.RequestPermissionRequest{SessionId: sid}
	if q, ok := strings.CutPrefix(text, "ask:"); ok {
		req.ToolCall = acpsdk.ToolCallUpdate{ToolCallId: "ask-user-1", Title: acpsdk.Ptr(q), Kind: acpsdk.Ptr(acpsdk.ToolKindOther)}
		req.Options = []acpsdk.PermissionOption{
			{OptionId: "choice-0", Name: "Yes", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "choice-1", Name: "No", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Skip", Kind: acpsdk.PermissionOptionKindRejectOnce},
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

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (a *sdkAgent) Authenticate(context.Context, acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return acpsdk.AuthenticateResponse{}, nil
}

func (a *sdkAgent) ListSessions(context.Context, acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	return acpsdk.ListSessionsResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionList)
}

func (a *sdkAgent) ResumeSession(context.Context, acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	return acpsdk.ResumeSessionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionResume)
}

func (a *sdkAgent) SetSessionConfigOption(context.Context, acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	return acpsdk.SetSessionConfigOptionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetConfigOption)
}

func (a *sdkAgent) SetSessionMode(context.Context, acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	return acpsdk.SetSessionModeResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetMode)
}
