package bridgeapp

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBinaryStartBannerAndPortInUse runs the binary twice on one port: the
// first prints the short start banner (address, dashboard, agent, files,
// docs); the second says once that the port is taken, names bridge.py as
// the likely cause and exits 1 before starting an agent.
func TestBinaryStartBannerAndPortInUse(t *testing.T) {
	p := startBridge(t)
	log := p.log()
	for _, want := range []string{
		"listening: addr=" + p.addr + " dashboard=http://" + p.addr + "/ui",
		`agent: command="the built-in demo agent (install ZeroClaw or set ZEROCLAW_BIN for real answers)" protocol=acp`,
		"files: logs=" + filepath.Join(p.stateDir, "logs"),
		"docs: https://",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("banner lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "starting: version=") {
		t.Error("the old one-line configuration dump is back at Info")
	}

	_, port, _ := net.SplitHostPort(p.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bridgeBinary(t))
	cmd.Env = []string{"PATH=" + t.TempDir(), "BRIDGE_HOST=127.0.0.1", "PORT=" + port, "WEATHER_LOCATION=-",
		"XDG_STATE_HOME=" + t.TempDir(), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second bridge: %v, want exit status 1\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "zeroclaw-bridge: port "+port+" is in use — is bridge.py still running?") {
		t.Errorf("last line %q", last)
	}
	if n := strings.Count(string(out), "is bridge.py still running?"); n != 1 || !strings.HasSuffix(last, "(listen on 127.0.0.1:"+port+": address already in use)") {
		t.Errorf("the cause said %d times:\n%s", n, out)
	}
	for _, bad := range []string{"agent started", "[ERROR]", "shutting down"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("second bridge output has %q:\n%s", bad, out)
		}
	}
}
