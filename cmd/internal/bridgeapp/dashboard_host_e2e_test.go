package bridgeapp

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDashboardHostViewAndTodaysErrorsOnTheBinary: the binary's
// /ui/api/status carries the host view (this machine's memory, the log
// directory's disk, the robots perception has seen), and a failed turn
// is in /ui/api/errors/today, also after the bridge restarts over the
// same log directory.
func TestDashboardHostViewAndTodaysErrorsOnTheBinary(t *testing.T) {
	dayBefore := time.Now().UTC().Format(time.DateOnly)
	p := startBridge(t, "ZEROCLAW_BIN=/nonexistent/zeroclaw", "TZ=UTC")
	logs := filepath.Join(p.stateDir, "logs")
	if code, out := p.post("/api/perception/event", `{"device_id":"dotty-e2e","name":"face_detected","data":{}}`); code != 204 {
		t.Fatalf("event: %d %s", code, out)
	}
	// The agent's binary is missing: the turn fails and is logged so.
	if code, out := p.post("/api/message", `{"content":"[User] what's a comet?","channel":"dotty"}`); code != 200 {
		t.Fatalf("turn: %d %s", code, out)
	}
	type errorsToday struct {
		Date   string            `json:"date"`
		Count  int               `json:"count"`
		Errors []json.RawMessage `json:"errors"`
	}
	read := func(p *bridgeProc) errorsToday {
		t.Helper()
		var got errorsToday
		code, body := p.get("/ui/api/errors/today")
		if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil {
			t.Fatalf("errors today: %d %s", code, body)
		}
		return got
	}
	testkit.WaitFor(t, 10*time.Second, "the failed turn in today's errors", func() bool { return read(p).Count == 1 })
	first := read(p)
	if dayAfter := time.Now().UTC().Format(time.DateOnly); (first.Date != dayBefore && first.Date != dayAfter) || len(first.Errors) != 1 ||
		!strings.Contains(string(first.Errors[0]), `"request_text":"what's a comet?"`) || !strings.Contains(string(first.Errors[0]), `"error":"binary_missing"`) {
		t.Errorf("errors today %+v (%s)", first, first.Errors)
	}

	var status struct {
		Host struct {
			Memory *struct {
				TotalBytes uint64 `json:"total_bytes"`
			} `json:"memory"`
			Disk *struct {
				Path       string `json:"path"`
				TotalBytes uint64 `json:"total_bytes"`
			} `json:"disk"`
			UptimeS    *float64 `json:"uptime_s"`
			RobotsSeen *int     `json:"robots_seen"`
		} `json:"host"`
	}
	code, body := p.get("/ui/api/status")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &status) != nil {
		t.Fatalf("status: %d %s", code, body)
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(meminfo)) // MemTotal: N kB first
	total, _ := strconv.ParseUint(f[1], 10, 64)
	var st syscall.Statfs_t
	if err := syscall.Statfs(logs, &st); err != nil {
		t.Fatal(err)
	}
	h := status.Host
	if f[0] != "MemTotal:" || h.Memory == nil || h.Memory.TotalBytes != total*1024 {
		t.Errorf("memory %+v, /proc/meminfo %v", h.Memory, f[:3])
	}
	if h.Disk == nil || h.Disk.Path != logs || h.Disk.TotalBytes != st.Blocks*uint64(st.Bsize) {
		t.Errorf("disk %+v, want %s's", h.Disk, logs)
	}
	if h.RobotsSeen == nil || *h.RobotsSeen != 1 || h.UptimeS == nil {
		t.Errorf("host %s", body)
	}

	// A restart: the new process reads the day's errors from the log.
	if took, err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v after %s", err, took)
	}
	again := startBridge(t, "ZEROCLAW_BIN=/nonexistent/zeroclaw", "TZ=UTC", "CONVO_LOG_DIR="+logs)
	got := read(again)
	if got.Date != first.Date {
		t.Skipf("midnight fell within the test (%s, then %s): the day's errors start again", first.Date, got.Date)
	}
	if got.Count != 1 || len(got.Errors) != 1 || string(got.Errors[0]) != string(first.Errors[0]) {
		t.Errorf("after a restart: %+v, want %+v", got, first)
	}
	if code, turns := again.get("/ui/api/turns"); code != 200 || turns != "[]" {
		t.Errorf("the new process's turn ring: %d %s", code, turns)
	}
}
