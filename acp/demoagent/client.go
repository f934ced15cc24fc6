package demoagent

import (
	"context"

	acp "github.com/coder/acp-go-sdk"
)

// UnsupportedClient answers the ACP client methods an agent may call of
// its client (permission, files, terminals) with "method not found": the
// client side of Unsupported, for the SDK clients that talk to the demo
// agent (its tests, bridgebench's baseline). Such a client embeds it and
// implements SessionUpdate. Called, when set, is told each refused method
// first (a test fails on it: the demo agent calls none of them).
type UnsupportedClient struct {
	Called func(method string)
}

func (u UnsupportedClient) refuse(method string) error {
	if u.Called != nil {
		u.Called(method)
	}
	return acp.NewMethodNotFound(method)
}

// RequestPermission is refused.
func (u UnsupportedClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{}, u.refuse(acp.ClientMethodSessionRequestPermission)
}

// ReadTextFile is refused.
func (u UnsupportedClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, u.refuse(acp.ClientMethodFsReadTextFile)
}

// WriteTextFile is refused.
func (u UnsupportedClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, u.refuse(acp.ClientMethodFsWriteTextFile)
}

// CreateTerminal is refused.
func (u UnsupportedClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, u.refuse(acp.ClientMethodTerminalCreate)
}

// KillTerminal is refused.
func (u UnsupportedClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, u.refuse(acp.ClientMethodTerminalKill)
}

// TerminalOutput is refused.
func (u UnsupportedClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, u.refuse(acp.ClientMethodTerminalOutput)
}

// ReleaseTerminal is refused.
func (u UnsupportedClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, u.refuse(acp.ClientMethodTerminalRelease)
}

// WaitForTerminalExit is refused.
func (u UnsupportedClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, u.refuse(acp.ClientMethodTerminalWaitForExit)
}
