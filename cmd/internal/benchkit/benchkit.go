// Package benchkit holds what the load tools share: starting a bridge
// binary with its files in a temporary directory, a cheap raw HTTP/1.1
// load generator, realistic perception events and /proc readings.
package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Result is one load run.
type Result struct {
	Sent, Errors int
	Elapsed      time.Duration
	// Lat holds every request latency, sorted.
	Lat []time.Duration
}

// Post sends n events from c workers, each on its own keep-alive
// connection speaking plain HTTP/1.1 (a request, then its response), and
// records each request's latency. A raw client keeps the load generator's
// own CPU cost low, so the bridge, not the client, is what is measured on
// a small machine.
func Post(base string, bodies [][]byte, n, c, depth int) (Result, error) {
	depth = max(depth, 1)
	host := strings.TrimPrefix(base, "http://")
	reqs := make([][]byte, len(bodies))
	for i, b := range bodies {
		reqs[i] = append(fmt.Appendf(nil, "POST /api/perception/event HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", host, len(b)), b...)
	}
	var next, failed atomic.Int64
	lats := make([][]time.Duration, c)
	errs := make(chan error, c)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range c {
		lats[w] = make([]time.Duration, 0, n/c+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", host)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			r := bufio.NewReader(conn)
			// Up to depth requests are in flight on the connection (1: a
			// request, then its response, as the relay does).
			sent := make(chan time.Time, depth)
			window := make(chan struct{}, depth)
			wdone := make(chan struct{})
			go func() {
				defer close(sent)
				for {
					select {
					case window <- struct{}{}:
					case <-wdone:
						return
					}
					// Both cases can be ready once the reader has
					// gone; stop then rather than claim a request
					// no one will read the answer to.
					select {
					case <-wdone:
						return
					default:
					}
					i := next.Add(1) - 1
					if i >= int64(n) {
						return
					}
					sent <- time.Now() // never blocks: the window holds depth

					if _, err := conn.Write(reqs[i%int64(len(reqs))]); err != nil {
						return
					}
				}
			}()
			defer close(wdone)
			for t := range sent {
				resp, err := http.ReadResponse(r, nil)
				if err != nil {
					errs <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					failed.Add(1)
				}
				lats[w] = append(lats[w], time.Since(t))
				<-window
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return Result{}, err
	}
	r := Result{Sent: n, Errors: int(failed.Load()), Elapsed: time.Since(start)}
	for _, l := range lats {
		r.Lat = append(r.Lat, l...)
	}
	slices.Sort(r.Lat)
	if r.Errors > 0 {
		return r, fmt.Errorf("%d of %d posts were not answered 204", r.Errors, n)
	}
	return r, nil
}

// Hammer POSTs the bodies next returns to path on one raw keep-alive
// HTTP/1.1 connection, a request then its response, until ctx ends, and
// hands each response's status to status. When the bridge closes the
// connection it dials again. It returns nil when ctx ends.
func Hammer(ctx context.Context, host, path string, next func() []byte, status func(int)) error {
	for ctx.Err() == nil {
		d := net.Dialer{Timeout: 5 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
		r := bufio.NewReader(conn)
		for ctx.Err() == nil {
			b := next()
			req := append(fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, host, len(b)), b...)
			if _, err := conn.Write(req); err != nil {
				break
			}
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				break
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status(resp.StatusCode)
			if resp.Close {
				break
			}
		}
		stop()
		conn.Close()
	}
	return nil
}

// EventBodies is a realistic mix of firmware events.
func EventBodies(devices, n int) [][]byte {
	r := rand.New(rand.NewPCG(7, 11))
	dirs := []string{"left", "centre", "right"}
	out := make([][]byte, n)
	for i := range out {
		dev := fmt.Sprintf("dotty-aa:bb:cc:dd:ee:%02x", r.IntN(devices))
		ts := float64(time.Now().UnixNano())/1e9 + float64(i)/1000
		var name, data string
		switch p := r.IntN(100); {
		case p < 50:
			name = "sound_event"
			data = fmt.Sprintf(`{"direction":%q,"energy":%.3f,"balance":%.3f,"firmware_ts_ms":%d}`, dirs[r.IntN(3)], r.Float64(), r.Float64()*2-1, 1000+i)
		case p < 70:
			name, data = "face_detected", fmt.Sprintf(`{"firmware_ts_ms":%d}`, 1000+i)
		case p < 85:
			name, data = "face_lost", fmt.Sprintf(`{"firmware_ts_ms":%d}`, 1000+i)
		case p < 95:
			name, data = "state_changed", fmt.Sprintf(`{"state":%q,"firmware_ts_ms":%d}`, []string{"idle", "talk", "story_time"}[r.IntN(3)], 1000+i)
		case p < 98:
			name, data = "chat_status", fmt.Sprintf(`{"listening":%v}`, r.IntN(2) == 1)
		case p < 99:
			name, data = "head_pet_started", `{}`
		default:
			name, data = "wake_word_detected", fmt.Sprintf(`{"direction":%q,"phrase":"hey dotty"}`, dirs[r.IntN(3)])
		}
		out[i] = fmt.Appendf(nil, `{"device_id":%q,"ts":%f,"name":%q,"data":%s}`, dev, ts, name, data)
	}
	return out
}

// Bridge is a started bridge process.
type Bridge struct {
	URL string // http://host:port
	PID int
	// Stop sends SIGTERM, waits (SIGKILL after 10 s) and removes the files.
	Stop func()
	// Dir holds the bridge's files.
	Dir string
}

var listening = regexp.MustCompile(`http server listening: addr=(\S+)`)

// bridgePackage is the bridge's main package.
const bridgePackage = "github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/zeroclaw-bridge"

// Build builds the bridge binary into bin, from any directory of the
// module; every tool and test that needs the binary builds it here.
// release builds it as a release is (static, stripped, -trimpath), so
// its memory is the shipped binary's.
func Build(bin string, release bool) error {
	args := []string{"build", "-o", bin}
	if release {
		args = append(args, "-trimpath", "-ldflags=-s -w")
	}
	cmd := exec.Command("go", append(args, bridgePackage)...)
	if release {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the bridge: %w\n%s", err, out)
	}
	return nil
}

// Start builds (unless bin is given) and
// starts a bridge on a free loopback port with its files in a temporary
// directory, plus extra environment variables.
func Start(bin string, extra ...string) (*Bridge, error) {
	dir, err := os.MkdirTemp("", "bridge-bench-")
	if err != nil {
		return nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	if bin == "" {
		bin = filepath.Join(dir, "zeroclaw-bridge")
		if err := Build(bin, false); err != nil {
			cleanup()
			return nil, err
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + dir, "HOME=" + dir, "BRIDGE_HOST=127.0.0.1", "PORT=0", "LOG_LEVEL=info", "WEATHER_LOCATION=-",
		"CONVO_LOG_DIR=" + filepath.Join(dir, "logs"), "DOTTY_KID_MODE_STATE=" + filepath.Join(dir, "kid"),
		"DOTTY_SMART_MODE_STATE=" + filepath.Join(dir, "smart"), "VOICE_MEMORY_DB=" + filepath.Join(dir, "brain.db"),
		"HOUSEHOLD_YAML_PATH=" + filepath.Join(dir, "household.yaml"), "GREETER_STATE_PATH=" + filepath.Join(dir, "greeter_state.json")}
	cmd.Env = append(cmd.Env, extra...)
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS"} { // runtime tuning passes through
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cleanup()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cleanup()
		return nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		Reap(cmd, 10*time.Second)
		cleanup()
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return &Bridge{URL: "http://" + a, PID: cmd.Process.Pid, Stop: stop, Dir: dir}, nil
	case <-time.After(30 * time.Second):
		stop()
		return nil, errors.New("the bridge did not listen within 30 s")
	}
}

// Reap waits up to grace for cmd, told to stop, to exit, then kills it
// and waits for it.
func Reap(cmd *exec.Cmd, grace time.Duration) {
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// CPUTime is the process's user+system CPU time (0 when unknown).
func CPUTime(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// Memory reports the process's resident and peak memory.
func Memory(pid int) string {
	rss, hwm := MemoryKB(pid)
	if rss == 0 {
		return "memory unknown"
	}
	return fmt.Sprintf("VmRSS: %d kB, VmHWM: %d kB", rss, hwm)
}

// MemoryKB returns the process's resident and peak resident memory in KiB
// (0 when unknown).
func MemoryKB(pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	return rss, hwm
}
