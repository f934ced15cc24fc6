package bridgeapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
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
			if len(names) != 10 || !strings.Contains(strings.Join(names, " "), "look") {
				t.Fatalf("tools/list over the binary: %v, want the 10 tools", names)
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
