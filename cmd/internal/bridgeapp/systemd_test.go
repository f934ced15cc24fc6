package bridgeapp

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSystemdNotify runs the binary as systemd would start a Type=notify
// service with a watchdog and reads what it says on the notify socket.
func TestSystemdNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	next := func(want string) string {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("socket closed before %q", want)
				}
				if strings.Contains(m, want) {
					return m
				}
			case <-deadline:
				t.Fatalf("no %q on the notify socket within 10 s", want)
			}
		}
	}
	p := startBridge(t, "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=300000")
	ready := next("READY=1")
	if !strings.Contains(ready, "serving on "+p.addr) || !strings.Contains(ready, "agent v1 ready") {
		t.Errorf("ready message %q", ready)
	}
	_, h := p.health("ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })
	if h["acp_running"] != true {
		t.Error("READY=1 before the agent was ready")
	}
	next("WATCHDOG=1")
	next("WATCHDOG=1")
	if _, err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit: %v", err)
	}
	next("STOPPING=1")
}
