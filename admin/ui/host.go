package ui

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
)

// The host view: what /ui/api/status reports about the machine the bridge
// runs on, read from /proc, /sys and statfs (no commands are run).

const (
	// probeTTL is how long a port probe's answer is reused: the page
	// polls every 5 s per tab, and the probes must not follow it.
	probeTTL = 8 * time.Second
	// probeTimeout bounds one TCP dial.
	probeTimeout = 2 * time.Second
	// maxProcFile bounds what is read of one /proc or /sys file.
	maxProcFile = 64 << 10
)

// hostStatus is the "host" object of GET /ui/api/status. A value that
// cannot be read is null (the page shows "unknown").
type hostStatus struct {
	// CPUTempC is the CPU's temperature in °C; null without a thermal zone.
	CPUTempC *float64 `json:"cpu_temp_c"`
	// Load is the 1, 5 and 15 minute load averages.
	Load   *[3]float64 `json:"load"`
	CPUs   int         `json:"cpus"`
	Memory *hostMemory `json:"memory"`
	Disk   *hostDisk   `json:"disk"`
	// UptimeS is how long the host has been up, in seconds.
	UptimeS *float64 `json:"uptime_s"`
	// Xiaozhi is whether xiaozhi's ports accept TCP connections.
	Xiaozhi hostPorts `json:"xiaozhi"`
	// RobotsSeen is the number of robots perception has seen (its device
	// table); null when perception is not wired.
	RobotsSeen *int `json:"robots_seen"`
}

// hostMemory is /proc/meminfo's MemTotal and MemAvailable, in bytes.
type hostMemory struct {
	TotalBytes     uint64  `json:"total_bytes"`
	AvailableBytes uint64  `json:"available_bytes"`
	UsedPercent    float64 `json:"used_percent"`
}

// hostDisk is the file system holding the state directory, as df counts
// it: used is what is taken, free what an unprivileged writer can still
// use, and the percentage is used of used+free.
type hostDisk struct {
	Path        string  `json:"path"`
	TotalBytes  uint64  `json:"total_bytes"`
	FreeBytes   uint64  `json:"free_bytes"`
	UsedPercent float64 `json:"used_percent"`
}

// hostPorts is the probe of xiaozhi's HTTP (admin, OTA) and WebSocket
// ports; a port not configured is 0 and reported closed.
type hostPorts struct {
	Host      string `json:"host"`
	HTTPPort  int    `json:"http_port"`
	HTTP      bool   `json:"http"`
	WSPort    int    `json:"ws_port"`
	WebSocket bool   `json:"websocket"`
}

// hostReader reads the host's figures from a /proc and a /sys tree (the
// real ones, or a test's fixtures). A file that cannot be read leaves its
// figure null and is logged once per cause; a missing thermal zone is not
// a failure.
type hostReader struct {
	proc, sys, stateDir string
	log                 hclog.Logger

	mu     sync.Mutex
	warned map[string]string // figure → the last reason logged
}

func newHostReader(proc, sys, stateDir string, log hclog.Logger) *hostReader {
	if proc == "" {
		proc = "/proc"
	}
	if sys == "" {
		sys = "/sys"
	}
	return &hostReader{proc: proc, sys: sys, stateDir: stateDir, log: log, warned: map[string]string{}}
}

// read returns the host's figures now (Xiaozhi and RobotsSeen are the
// caller's).
func (h *hostReader) read() hostStatus {
	var s hostStatus
	s.CPUs = runtime.NumCPU()
	if t, err := h.cpuTemp(); err != nil {
		h.fail("cpu temperature", err)
	} else {
		s.CPUTempC = t
	}
	s.Load = figure(h, "load", h.load)
	s.Memory = figure(h, "memory", h.memory)
	if h.stateDir != "" {
		s.Disk = figure(h, "disk", func() (hostDisk, error) { return diskOf(h.stateDir) })
	}
	s.UptimeS = figure(h, "uptime", h.uptime)
	return s
}

// figure reads one figure of the host view; nil, with the reason logged
// (fail), when it cannot be read.
func figure[T any](h *hostReader, name string, read func() (T, error)) *T {
	v, err := read()
	if err != nil {
		h.fail(name, err)
		return nil
	}
	return &v
}

// fail logs why a figure is unknown, once per figure and reason.
func (h *hostReader) fail(figure string, err error) {
	h.mu.Lock()
	seen := h.warned[figure] == err.Error()
	h.warned[figure] = err.Error()
	h.mu.Unlock()
	if !seen {
		h.log.Warn("dashboard host view: "+figure+" unknown", "error", err)
	}
}

// readSmall reads at most maxProcFile bytes of path.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path) // #nosec G304 -- a fixed name under the configured /proc or /sys
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxProcFile))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// cpuTemp is the CPU's thermal zone's temperature: the first zone whose
// type names the CPU or the SoC (cpu-thermal, x86_pkg_temp, soc_thermal),
// else the first zone. Nil, nil when the host has no thermal zone (a VM,
// a container without /sys).
func (h *hostReader) cpuTemp() (*float64, error) {
	zones, err := filepath.Glob(filepath.Join(h.sys, "class", "thermal", "thermal_zone*"))
	if err != nil || len(zones) == 0 {
		return nil, nil
	}
	sort.Strings(zones)
	pick := zones[0]
	for _, z := range zones {
		typ, err := readSmall(filepath.Join(z, "type"))
		if err != nil {
			continue
		}
		t := strings.ToLower(string(bytes.TrimSpace(typ)))
		if strings.Contains(t, "cpu") || strings.Contains(t, "pkg") || strings.Contains(t, "soc") {
			pick = z
			break
		}
	}
	raw, err := readSmall(filepath.Join(pick, "temp"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	milli, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(pick, "temp"), err)
	}
	c := float64(milli) / 1000
	return &c, nil
}

// load is /proc/loadavg's first three fields.
func (h *hostReader) load() ([3]float64, error) {
	var l [3]float64
	path := filepath.Join(h.proc, "loadavg")
	raw, err := readSmall(path)
	if err != nil {
		return l, err
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return l, fmt.Errorf("%s: want three load averages, got %q", path, raw)
	}
	for i := range l {
		if l[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return l, fmt.Errorf("%s: %w", path, err)
		}
	}
	return l, nil
}

// memory is /proc/meminfo's MemTotal and MemAvailable (MemFree on a
// kernel older than 3.14, which has no MemAvailable).
func (h *hostReader) memory() (hostMemory, error) {
	path := filepath.Join(h.proc, "meminfo")
	raw, err := readSmall(path)
	if err != nil {
		return hostMemory{}, err
	}
	kb := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			kb[name] = v
		}
	}
	total, ok := kb["MemTotal"]
	if !ok || total == 0 {
		return hostMemory{}, fmt.Errorf("%s: no MemTotal", path)
	}
	avail, ok := kb["MemAvailable"]
	if !ok {
		avail = kb["MemFree"]
	}
	avail = min(avail, total)
	return hostMemory{TotalBytes: total * 1024, AvailableBytes: avail * 1024,
		UsedPercent: percent(total-avail, total)}, nil
}

// uptime is /proc/uptime's first field.
func (h *hostReader) uptime() (float64, error) {
	path := filepath.Join(h.proc, "uptime")
	raw, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0, fmt.Errorf("%s is empty", path)
	}
	u, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// diskOf is statfs of dir's file system.
func diskOf(dir string) (hostDisk, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return hostDisk{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bsize := uint64(st.Bsize) // #nosec G115 -- a block size is positive
	used := (st.Blocks - st.Bfree) * bsize
	free := st.Bavail * bsize
	return hostDisk{Path: dir, TotalBytes: st.Blocks * bsize, FreeBytes: free, UsedPercent: percent(used, used+free)}, nil
}

// percent is part of whole in per cent, to one decimal.
func percent(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return math.Round(float64(part)/float64(whole)*1000) / 10
}

// portProber answers whether a TCP port accepts connections, dialling at
// most once per probeTTL per address: callers within that time get the
// last answer, and callers during a dial wait for it (within their own
// deadline) rather than dialling too. Its addresses are the configured
// ones, never a caller's, so the cache cannot grow.
type portProber struct {
	clock clockwork.Clock
	dial  func(ctx context.Context, addr string) bool

	mu    sync.Mutex
	cache map[string]*probe
}

// probe is one address's last answer, or the dial under way (done open).
type probe struct {
	done chan struct{} // closed when the dial has answered
	at   time.Time
	open bool
}

func newPortProber(clock clockwork.Clock) *portProber {
	return &portProber{clock: clock, dial: tcpOpen, cache: map[string]*probe{}}
}

// open reports whether addr accepts TCP, from a probe at most probeTTL
// old. A caller whose ctx ends while it waits gets false.
func (p *portProber) open(ctx context.Context, addr string) bool {
	p.mu.Lock()
	pr := p.cache[addr]
	fresh := pr != nil && (!isDone(pr.done) || p.clock.Since(pr.at) < probeTTL)
	if !fresh {
		pr = &probe{done: make(chan struct{})}
		p.cache[addr] = pr
		p.mu.Unlock()
		// The dial is the probe's, not this request's: a client that
		// leaves does not cut it short for the others waiting.
		open := p.dial(context.WithoutCancel(ctx), addr)
		p.mu.Lock()
		pr.open, pr.at = open, p.clock.Now()
		close(pr.done)
		p.mu.Unlock()
		return open
	}
	p.mu.Unlock()
	select {
	case <-pr.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return pr.open
	case <-ctx.Done():
		return false
	}
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// tcpOpen reports whether addr accepts a TCP connection within
// probeTimeout.
func tcpOpen(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// xiaozhiPorts probes xiaozhi's configured ports (both at once).
func (u *UI) xiaozhiPorts(ctx context.Context) hostPorts {
	hp := hostPorts{Host: u.cfg.XiaozhiHost, HTTPPort: u.cfg.XiaozhiHTTPPort, WSPort: u.cfg.XiaozhiWSPort}
	if hp.Host == "" {
		return hp
	}
	var wg sync.WaitGroup
	for _, p := range []struct {
		port int
		out  *bool
	}{{hp.HTTPPort, &hp.HTTP}, {hp.WSPort, &hp.WebSocket}} {
		if p.port <= 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			*p.out = u.ports.open(ctx, net.JoinHostPort(hp.Host, strconv.Itoa(p.port)))
		}()
	}
	wg.Wait()
	return hp
}

// host is the status's host object.
func (u *UI) host(ports hostPorts) hostStatus {
	s := u.hostInfo.read()
	s.Xiaozhi = ports
	if u.cfg.RobotsSeen != nil {
		n := u.cfg.RobotsSeen()
		s.RobotsSeen = &n
	}
	return s
}
