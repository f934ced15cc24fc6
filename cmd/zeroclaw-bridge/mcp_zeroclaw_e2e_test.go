package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/robottools"
)

// ZeroClaw's way to the robot's tools, on the real binary: the bridge
// writes its token file beside brain.db, /admin/mcp-server registers
// `<the binary> mcp` reading it in config.toml, and that command, run as
// ZeroClaw runs it, turns the head of the robot of the latest turn; after
// the bridge stops, a call is a tool error the model can read.
func TestZeroClawGetsTheToolsThroughItsConfig(t *testing.T) {
	xz := xiaozhitest.New(t)
	p := startBridge(t, xiaozhiEnv(xz)...)
	file := filepath.Join(p.stateDir, "memory", mcpTokenFile)
	testkit.WaitFor(t, 10*time.Second, "the token file", func() bool { _, err := robottools.ReadCredentials(file); return err == nil })
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", fi, err)
	}

	cfg := filepath.Join(p.stateDir, "config.toml")
	if err := os.WriteFile(cfg, []byte("# the voice agent\n[agents.default]\nmodel_provider = \"local\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := p.post("/admin/mcp-server", `{"restart":false}`); code != http.StatusOK {
		t.Fatalf("/admin/mcp-server: %d %s", code, out)
	}
	var got struct {
		MCP struct {
			Servers []struct {
				Name, Command string
				Args          []string
				Env           map[string]string
			} `toml:"servers"`
		} `toml:"mcp"`
	}
	if _, err := toml.DecodeFile(cfg, &got); err != nil || len(got.MCP.Servers) != 1 {
		t.Fatalf("config.toml after the call: %+v %v", got, err)
	}
	server := got.MCP.Servers[0]
	if server.Name != "dotty-robot" || server.Command != bridgeBinary(t) || server.Env["DOTTY_MCP_TOKEN_FILE"] != file {
		t.Fatalf("the registered server %+v: want the binary reading %s", server, file)
	}

	// A spoken turn on dotty-z: the standing token acts on its robot.
	code, out := p.requestWithin(30*time.Second, http.MethodPost, "/api/message",
		`{"content":"hello","session_id":"z","metadata":{"device_id":"dotty-z"}}`, "Content-Type", "application/json")
	if code != http.StatusOK {
		t.Fatalf("voice turn: %d %s", code, out)
	}
	cmd := exec.Command(server.Command, server.Args...) // as ZeroClaw runs it
	cmd.Env = []string{"PATH=" + t.TempDir(), "DOTTY_MCP_TOKEN_FILE=" + server.Env["DOTTY_MCP_TOKEN_FILE"]}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "zeroclaw", Version: "1"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "look", Arguments: map[string]any{"yaw": 30, "pitch": 0}})
	if err != nil || res.IsError {
		t.Fatalf("look through ZeroClaw's relay: %v %+v", err, res)
	}
	if got := headTurns(xz); len(got) != 1 || got[0] != "dotty-z yaw=30" {
		t.Errorf("set-head-angles calls %v, want dotty-z yaw=30", got)
	}

	if _, err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "look", Arguments: map[string]any{"yaw": 0, "pitch": 0}})
	if err != nil || !res.IsError {
		t.Fatalf("look after the bridge stopped: %v %+v, want a tool error", err, res)
	}
	t.Logf("after the stop the model reads: %v", res.Content[0].(*mcp.TextContent).Text)
}
