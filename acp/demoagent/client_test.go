package demoagent

import (
	"context"
	"errors"
	"slices"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// UnsupportedClient refuses every client method with "method not found",
// telling Called first.
func TestUnsupportedClient(t *testing.T) {
	var called []string
	u := UnsupportedClient{Called: func(m string) { called = append(called, m) }}
	ctx := context.Background()
	errs := []error{}
	add := func(_ any, err error) { errs = append(errs, err) }
	add(u.RequestPermission(ctx, acp.RequestPermissionRequest{}))
	add(u.ReadTextFile(ctx, acp.ReadTextFileRequest{}))
	add(u.WriteTextFile(ctx, acp.WriteTextFileRequest{}))
	add(u.CreateTerminal(ctx, acp.CreateTerminalRequest{}))
	add(u.KillTerminal(ctx, acp.KillTerminalRequest{}))
	add(u.TerminalOutput(ctx, acp.TerminalOutputRequest{}))
	add(u.ReleaseTerminal(ctx, acp.ReleaseTerminalRequest{}))
	add(u.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{}))
	want := []string{"session/request_permission", "fs/read_text_file", "fs/write_text_file", "terminal/create",
		"terminal/kill", "terminal/output", "terminal/release", "terminal/wait_for_exit"}
	if !slices.Equal(called, want) {
		t.Errorf("Called with %q, want %q", called, want)
	}
	for i, err := range errs {
		var re *acp.RequestError
		if !errors.As(err, &re) || re.Code != -32601 {
			t.Errorf("%s: %v, want method not found (-32601)", want[i], err)
		}
	}
	// Without Called, the refusal alone.
	if _, err := (UnsupportedClient{}).KillTerminal(ctx, acp.KillTerminalRequest{}); err == nil {
		t.Error("KillTerminal without Called: no error")
	}
}
