package acp

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	exampleOnce sync.Once
	examplePath string
	exampleErr  error
)

// sdkExampleAgent builds acp-go-sdk's example agent, a third-party ACP v1
// peer with scripted ~5 s turns, permission requests and cancel support.
func sdkExampleAgent(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("the SDK example agent takes about 5 s per turn")
	}
	exampleOnce.Do(func() {
		dir, err := mkdirTemp()
		if err != nil {
			exampleErr = err
			return
		}
		examplePath = filepath.Join(dir, "acp-example-agent")
		out, err := exec.Command("go", "build", "-o", examplePath, "github.com/coder/acp-go-sdk/example/agent").CombinedOutput()
		if err != nil {
			exampleErr = errors.New(string(out))
		}
	})
	if exampleErr != nil {
		t.Fatalf("build SDK example agent: %v", exampleErr)
	}
	return examplePath
}

func TestSDKExampleAgentTurn(t *testing.T) {
	path := sdkExampleAgent(t)
	// Run without arguments: the example treats them as a client to spawn.
	h := startHarness(t, Config{Command: path, Args: []string{}}, PoolConfig{})
	health := h.WaitReady()
	if health.Dialect != "v1" {
		t.Fatalf("health %+v", health)
	}
	res, chunks := h.MustTurn("k", "hello")
	if !strings.Contains(res.Text, "successfully updated") || len(chunks) < 3 || res.StopReason != "end_turn" {
		t.Errorf("text %q (%d chunks, %s): the permission request should have been allowed", res.Text, len(chunks), res.StopReason)
	}
}

func TestSDKExampleAgentCancel(t *testing.T) {
	path := sdkExampleAgent(t)
	h := startHarness(t, Config{Command: path, Args: []string{}}, PoolConfig{})
	h.WaitReady()
	if _, err := h.BargeIn("k", "hi"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	res, _ := h.MustTurn("k", "again")
	if res.TurnIndex != 0 || !res.Phases.Reused {
		t.Errorf("turn after cancel %+v: want the same session, cancelled turn not counted", res)
	}
}

func mkdirTemp() (string, error) { return os.MkdirTemp("", "zcb-sdk-agent-") }
