package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/robottools"
)

// robotToolsServer serves robottools on 127.0.0.1 with the recording
// xiaozhi as the robot; it returns the server, its /mcp URL and the robot.
func robotToolsServer(t *testing.T) (*robottools.Server, string, *xiaozhitest.Server) {
	t.Helper()
	robot := xiaozhitest.New(t)
	host, port := robot.HostPort()
	cfg := robottools.DefaultConfig()
	cfg.Robot = xiaozhi.New(xiaozhi.Config{Host: host, Port: port})
	srv, err := robottools.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return srv, ts.URL + "/mcp", robot
}

// relayProcess starts the built binary's `mcp` subcommand with env as an
// MCP client's child process and connects to it over its stdin/stdout.
func relayProcess(t *testing.T, env ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bridgeBinary(t), "mcp")
	cmd.Env = append([]string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir()}, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("start `zeroclaw-bridge mcp`: %v", err)
	}
	return cs, cmd
}

// TestMCPRelayBinary: `zeroclaw-bridge mcp` relays to a bridge's MCP
// endpoint, with the token in its environment or in the bridge's token
// file: the tool list is the server's, "look left" reaches the robot, and
// the process exits 0 once its stdin closes.
func TestMCPRelayBinary(t *testing.T) {
	srv, url, robot := robotToolsServer(t)
	token := srv.Mint("k1")
	srv.SetDevice("k1", "dev-1")
	// ZeroClaw's way: the bridge writes the token file beside brain.db and
	// /admin/mcp-server registers `<binary> mcp` reading it.
	db := filepath.Join(t.TempDir(), "memory", "brain.db")
	defer startStandingToken(srv, url, db, health.New(), hclog.NewNullLogger())()
	entry := zeroclawMCPEntry(bridgeBinary(t), db, "")
	if entry.Command != bridgeBinary(t) || entry.Name != "dotty-robot" {
		t.Errorf("ZeroClaw's entry %+v: want the running binary as dotty-robot", entry)
	}
	file := entry.TokenFile
	for _, tc := range []struct {
		name string
		env  []string
		yaw  int
	}{
		{"URL and token", []string{envMCPURL + "=" + url, envMCPToken + "=" + token}, -45},
		{"token file", []string{envMCPTokenFile + "=" + file}, -30},
		{"default token file beside VOICE_MEMORY_DB", []string{"VOICE_MEMORY_DB=" + db}, -15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, cmd := relayProcess(t, tc.env...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list over the binary: %v", err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			if len(names) != 9 || !strings.Contains(strings.Join(names, " "), "look") {
				t.Fatalf("tools/list over the binary: %v, want the 9 tools", names)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "look", Arguments: map[string]any{"yaw": tc.yaw, "pitch": 0}})
			if err != nil || res.IsError {
				t.Fatalf("look over the binary: %v %+v", err, res)
			}
			t.Logf("list and call through the relay took %s", time.Since(start))
			calls := robot.CallsTo("/xiaozhi/admin/set-head-angles")
			if len(calls) == 0 || calls[len(calls)-1].Body["device_id"] != "dev-1" || calls[len(calls)-1].Body["yaw"] != float64(tc.yaw) {
				t.Errorf("xiaozhi's last set-head-angles %+v, want dev-1 at yaw %d", calls, tc.yaw)
			}
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
				t.Errorf("relay after its stdin closed: %v, want exit status 0", cmd.ProcessState)
			}
		})
	}
}

// TestMCPRelayBadEnv: a relay environment it cannot use exits 2 with one
// line naming the variable.
func TestMCPRelayBadEnv(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{envMCPURL + "=http://192.0.2.1:8080/mcp", envMCPToken + "=t"}, "invalid DOTTY_MCP_URL"},
		{[]string{envMCPToken + "=t"}, "DOTTY_MCP_TOKEN is set without DOTTY_MCP_URL"},
		{[]string{envMCPURL + "=http://127.0.0.1:1/mcp"}, "DOTTY_MCP_URL is set without DOTTY_MCP_TOKEN"},
		{[]string{envMCPTokenFile + "=relative.json"}, "invalid DOTTY_MCP_TOKEN_FILE"},
	} {
		cmd := exec.Command(bridgeBinary(t), "mcp")
		cmd.Env = append([]string{"PATH=" + t.TempDir()}, tc.env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		err := testkit.Recv(t, 10*time.Second, done, fmt.Sprintf("%v: still running", tc.env))
		var exit *exec.ExitError
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%v: %v, stderr %q; want exit status 2 and one line saying %q", tc.env, err, stderr.String(), tc.want)
		}
	}
}
