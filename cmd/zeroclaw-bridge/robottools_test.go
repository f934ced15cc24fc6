package main

import (
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// The tools' listener serves on loopback at the URL handed to agents; off,
// there is none; a port that cannot be bound is one logged reason and the
// bridge goes on without the tools.
func TestListenTools(t *testing.T) {
	var logs testkit.LogBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	c := defaultMCPConfig()
	tl := listenTools(c, log)
	if tl == nil {
		t.Fatalf("no listener on %s: %s", c.Listen, logs.String())
	}
	defer tl.close()
	if !strings.HasPrefix(tl.url, "http://127.0.0.1:") || !strings.HasSuffix(tl.url, "/mcp") {
		t.Errorf("url %q, want http://127.0.0.1:<port>/mcp", tl.url)
	}

	c.Enabled = false
	if off := listenTools(c, log); off != nil {
		off.close()
		t.Error("a listener with DOTTY_MCP_ENABLED off")
	}

	c.Enabled, c.Listen = true, tl.ln.Addr().(*net.TCPAddr).AddrPort().String() // taken
	if taken := listenTools(c, log); taken != nil {
		taken.close()
		t.Fatal("bound a taken port")
	}
	if n := strings.Count(logs.String(), "the robot's tools are not served"); n != 1 {
		t.Errorf("%d reasons logged for the taken port, want 1:\n%s", n, logs.String())
	}
}
