package ui

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// writeTree writes files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hostOf is the host object of GET /ui/api/status.
func hostOf(t *testing.T, url string) hostStatus {
	t.Helper()
	resp, body := get(t, url+"/ui/api/status", "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	var got struct {
		Host hostStatus `json:"host"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	return got.Host
}

// TestHostFromFixtures reads the host view from a fixture /proc and /sys:
// the CPU's thermal zone is chosen over another, and figures that cannot
// be read are null and logged once, except a missing thermal zone, which
// is unknown without a warning.
func TestHostFromFixtures(t *testing.T) {
	root := t.TempDir()
	proc, sys := filepath.Join(root, "proc"), filepath.Join(root, "sys")
	writeTree(t, root, map[string]string{
		"proc/loadavg": "0.52 1.07 2.00 2/345 6789\n",
		"proc/meminfo": "MemTotal:        8000000 kB\nMemFree:          500000 kB\nMemAvailable:    2000000 kB\nBuffers:  1 kB\n",
		"proc/uptime":  "93784.25 180000.00\n",
		// zone0 is the ACPI's; zone1 the CPU package's, which counts.
		"sys/class/thermal/thermal_zone0/type": "acpitz\n",
		"sys/class/thermal/thermal_zone0/temp": "27800\n",
		"sys/class/thermal/thermal_zone1/type": "x86_pkg_temp\n",
		"sys/class/thermal/thermal_zone1/temp": "48312\n",
	})
	var logs testkit.LogBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
	e := newEnv(t, Config{ProcDir: proc, SysDir: sys, StateDir: root, RobotsSeen: func() int { return 3 }, Logger: logger})
	got := hostOf(t, e.url)
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil {
		t.Fatal(err)
	}
	temp, load, up, robots := 48.312, [3]float64{0.52, 1.07, 2.00}, 93784.25, 3
	want := hostStatus{CPUTempC: &temp, Load: &load, CPUs: runtime.NumCPU(), UptimeS: &up, RobotsSeen: &robots,
		Memory: &hostMemory{TotalBytes: 8000000 * 1024, AvailableBytes: 2000000 * 1024, UsedPercent: 75},
		Disk:   &hostDisk{Path: root, TotalBytes: st.Blocks * uint64(st.Bsize)}}
	if got.Disk != nil { // free space moves with the machine's other writers
		if got.Disk.FreeBytes > got.Disk.TotalBytes || got.Disk.UsedPercent < 0 || got.Disk.UsedPercent > 100 {
			t.Errorf("disk %+v", got.Disk)
		}
		want.Disk.FreeBytes, want.Disk.UsedPercent = got.Disk.FreeBytes, got.Disk.UsedPercent
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("host (-got +want):\n%s", d)
	}

	// No thermal zone (a VM), a broken meminfo, no uptime: unknown.
	if err := os.RemoveAll(filepath.Join(sys, "class")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"proc/meminfo": "garbage\n"})
	if err := os.Remove(filepath.Join(proc, "uptime")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got = hostOf(t, e.url)
		if got.CPUTempC != nil || got.Memory != nil || got.UptimeS != nil || got.Load == nil {
			t.Fatalf("degraded host %+v", got)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "memory unknown"); n != 1 {
		t.Errorf("%d warnings about memory in three reads, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "uptime unknown"); n != 1 {
		t.Errorf("%d warnings about uptime, want 1:\n%s", n, out)
	}
	if strings.Contains(out, "temperature") {
		t.Errorf("a host without a thermal zone is not a failure:\n%s", out)
	}
	// Without perception, the robots seen are unknown.
	if got := hostOf(t, newEnv(t, Config{ProcDir: proc, SysDir: sys}).url); got.RobotsSeen != nil || got.Disk != nil {
		t.Errorf("no perception, no state directory: %+v", got)
	}
}

// procFields reads a /proc file's fields.
func procFields(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// memTotalKB is /proc/meminfo's MemTotal.
func memTotalKB(t *testing.T) uint64 {
	t.Helper()
	f := procFields(t, "meminfo")
	for i, v := range f {
		if v == "MemTotal:" {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// TestHostMatchesProc compares the host view of this machine with /proc
// read by the test before and after: the fixed figures are equal, the
// moving ones lie between the two readings.
func TestHostMatchesProc(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, Config{StateDir: dir})
	loadBefore := strings.Join(procFields(t, "loadavg")[:3], " ")
	upBefore, _ := strconv.ParseFloat(procFields(t, "uptime")[0], 64)
	got := hostOf(t, e.url)
	upAfter, _ := strconv.ParseFloat(procFields(t, "uptime")[0], 64)
	loadAfter := strings.Join(procFields(t, "loadavg")[:3], " ")

	if got.Memory == nil || got.Memory.TotalBytes != memTotalKB(t)*1024 || got.Memory.AvailableBytes > got.Memory.TotalBytes {
		t.Errorf("memory %+v, /proc/meminfo MemTotal %d kB", got.Memory, memTotalKB(t))
	}
	if got.Load == nil {
		t.Fatal("no load")
	}
	// The kernel updates the averages every 5 s: the view's are the
	// reading before or the one after.
	l := *got.Load
	if s := strconv.FormatFloat(l[0], 'f', 2, 64) + " " + strconv.FormatFloat(l[1], 'f', 2, 64) + " " +
		strconv.FormatFloat(l[2], 'f', 2, 64); s != loadBefore && s != loadAfter {
		t.Errorf("load %s, /proc/loadavg %s then %s", s, loadBefore, loadAfter)
	}
	if got.UptimeS == nil || *got.UptimeS < upBefore || *got.UptimeS > upAfter {
		t.Errorf("uptime %v, /proc/uptime %v then %v", got.UptimeS, upBefore, upAfter)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if got.Disk == nil || got.Disk.Path != dir || got.Disk.TotalBytes != st.Blocks*uint64(st.Bsize) {
		t.Errorf("disk %+v, statfs %d blocks of %d", got.Disk, st.Blocks, st.Bsize)
	}
	t.Logf("host: temp %v, load %v, memory %+v, disk %+v, up %v s", got.CPUTempC, l, *got.Memory, *got.Disk, *got.UptimeS)
}

// xiaozhiPorts stands in for xiaozhi's two ports: an HTTP port that
// accepts (open until the test ends) and a WebSocket port that refuses.
func xiaozhiPorts(t *testing.T) (httpLn net.Listener, wsPort int) {
	t.Helper()
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { httpLn.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wsPort = closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	return httpLn, wsPort
}

// TestXiaozhiPortsProbedOncePerTTL: a flood of status polls dials each of
// xiaozhi's ports once per probeTTL; the answers follow the ports.
func TestXiaozhiPortsProbedOncePerTTL(t *testing.T) {
	httpLn, wsPort := xiaozhiPorts(t)
	clock := clockwork.NewFakeClock()
	e := newEnv(t, Config{Clock: clock, XiaozhiHost: "127.0.0.1", XiaozhiHTTPPort: httpLn.Addr().(*net.TCPAddr).Port, XiaozhiWSPort: wsPort})
	var dials atomic.Int32
	e.ui.ports.dial = func(ctx context.Context, addr string) bool { dials.Add(1); return tcpOpen(ctx, addr) }

	var wg sync.WaitGroup
	hosts := make([]hostStatus, 40)
	for i := range hosts {
		wg.Add(1)
		go func() { defer wg.Done(); hosts[i] = hostOf(t, e.url) }()
	}
	wg.Wait()
	want := hostPorts{Host: "127.0.0.1", HTTPPort: httpLn.Addr().(*net.TCPAddr).Port, HTTP: true, WSPort: wsPort}
	for _, h := range hosts {
		if h.Xiaozhi != want {
			t.Fatalf("ports %+v, want %+v", h.Xiaozhi, want)
		}
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("40 polls dialled %d times, want once per port", n)
	}
	httpLn.Close()
	clock.Advance(probeTTL - time.Millisecond)
	if h := hostOf(t, e.url); !h.Xiaozhi.HTTP || dials.Load() != 2 {
		t.Errorf("within the TTL: %+v after %d dials", h.Xiaozhi, dials.Load())
	}
	clock.Advance(time.Millisecond)
	if h := hostOf(t, e.url); h.Xiaozhi.HTTP || dials.Load() != 4 {
		t.Errorf("after the TTL: %+v after %d dials", h.Xiaozhi, dials.Load())
	}
	if got := hostOf(t, newEnv(t, Config{XiaozhiHTTPPort: 8003, XiaozhiWSPort: 8000}).url).Xiaozhi; got != (hostPorts{HTTPPort: 8003, WSPort: 8000}) {
		t.Errorf("no XIAOZHI_HOST: %+v", got)
	}
}

// TestProbeWaitersShareTheDial: a caller arriving during a dial waits for
// its answer, and one whose request ends meanwhile gets false at once
// without cutting the dial short for the others.
func TestProbeWaitersShareTheDial(t *testing.T) {
	p := newPortProber(clockwork.NewFakeClock())
	entered, release := make(chan struct{}), make(chan struct{})
	var dials atomic.Int32
	p.dial = func(ctx context.Context, _ string) bool {
		dials.Add(1)
		close(entered)
		<-release
		return ctx.Err() == nil
	}
	first := make(chan bool, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { first <- p.open(ctx, "x:1") }()
	testkit.Recv(t, 5*time.Second, entered, "no dial")
	gone, leave := context.WithCancel(context.Background())
	leave()
	if p.open(gone, "x:1") {
		t.Error("a caller that left got an answer")
	}
	second := make(chan bool, 1)
	go func() { second <- p.open(context.Background(), "x:1") }()
	cancel() // the first caller leaves: the dial goes on for the second
	close(release)
	for _, c := range []chan bool{first, second} {
		if open := testkit.Recv(t, 5*time.Second, c, "a waiter did not get the answer"); !open {
			t.Error("the shared dial was cut short")
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials, want 1", n)
	}
}
