package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// agentBaseline times prompt round trips against the demo agent alone
// (`<bin> acp -chunk-delay 0s` over its pipes, no bridge), so the bridge's
// added latency is the whole request minus this.
func agentBaseline(bin string, n int) ([]time.Duration, error) {
	cmd := exec.Command(bin, "acp", "-chunk-delay", "0s")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	conn := acpsdk.NewClientSideConnection(quietClient{}, stdin, stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		return nil, fmt.Errorf("initialize the demo agent: %w", err)
	}
	s, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: "/", McpServers: []acpsdk.McpServer{}})
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if _, err := conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("hello from bench")}}); err != nil {
			return nil, fmt.Errorf("prompt: %w", err)
		}
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	return lat, nil
}

// quietClient accepts session updates and refuses everything else.
type quietClient struct{}

var errUnsupported = errors.New("not supported by bridgebench")

func (quietClient) SessionUpdate(context.Context, acpsdk.SessionNotification) error { return nil }
func (quietClient) RequestPermission(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return acpsdk.RequestPermissionResponse{}, errUnsupported
}
func (quietClient) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, errUnsupported
}
func (quietClient) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, errUnsupported
}
func (quietClient) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errUnsupported
}
func (quietClient) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errUnsupported
}
func (quietClient) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errUnsupported
}
func (quietClient) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errUnsupported
}
func (quietClient) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errUnsupported
}
