// Command perception-load measures the perception ingest of a running or
// freshly started bridge over loopback: it posts events from parallel
// keep-alive connections while SSE clients follow /api/perception/feed,
// then prints events/s, request latency percentiles, and how many events
// each consumer (from the bridge's dotty_perception_dropped_total) and each
// feed client received.
//
// Usage:
//
//	go run ./cmd/perception-load                 # builds and starts the bridge itself
//	go run ./cmd/perception-load -url http://127.0.0.1:8080 -n 200000 -c 8
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
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

type options struct {
	url, bin          string
	n, c, warmup, sse int
	pipeline          int
	soundTurner       bool
	devices           int
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "bridge base URL; empty builds and starts one")
	flag.StringVar(&o.bin, "bin", "", "bridge binary to start (default: go build ./cmd/zeroclaw-bridge)")
	flag.IntVar(&o.n, "n", 200000, "events to post (measured)")
	flag.IntVar(&o.c, "c", 8, "parallel connections")
	flag.IntVar(&o.warmup, "warmup", 5000, "events posted before measuring")
	flag.IntVar(&o.sse, "sse", 1, "feed clients")
	flag.IntVar(&o.pipeline, "pipeline", 1, "requests in flight per connection (HTTP/1.1 pipelining; 1 = like the relay)")
	flag.IntVar(&o.devices, "devices", 4, "distinct device ids")
	flag.BoolVar(&o.soundTurner, "sound-turner", true, "start the bridge with the sound turner on, so all six consumers run")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "perception-load:", err)
		os.Exit(1)
	}
}

func run(o options, out io.Writer) error {
	base, pid := o.url, 0
	if base == "" {
		b, stop, err := startBridge(o.bin, o.soundTurner)
		if err != nil {
			return err
		}
		defer stop()
		base, pid = b.url, b.pid
	}
	client := &http.Client{Timeout: 10 * time.Second}
	bodies := makeBodies(o.devices, 4096)
	if _, err := post(base, bodies, o.warmup, o.c, o.pipeline); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	before, err := scrape(client, base)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	feeds := make([]*feed, o.sse)
	for i := range feeds {
		if feeds[i], err = follow(ctx, base); err != nil {
			return err
		}
	}
	cpu0 := cpuTime(pid)
	res, err := post(base, bodies, o.n, o.c, o.pipeline)
	if err != nil {
		return err
	}
	cpu := cpuTime(pid) - cpu0
	time.Sleep(500 * time.Millisecond) // let the feeds drain
	after, err := scrape(client, base)
	if err != nil {
		return err
	}
	cancel()
	report(out, o, res, before, after, feeds, pid, cpu)
	return nil
}

type result struct {
	sent, errors int
	elapsed      time.Duration
	lat          []time.Duration
}

// post sends n events from c workers, each on its own keep-alive
// connection speaking plain HTTP/1.1 (a request, then its response), and
// records each request's latency. A raw client keeps the load generator's
// own CPU cost low, so the bridge, not the client, is what is measured on
// a small machine.
func post(base string, bodies [][]byte, n, c, depth int) (result, error) {
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
		return result{}, err
	}
	r := result{sent: n, errors: int(failed.Load()), elapsed: time.Since(start)}
	for _, l := range lats {
		r.lat = append(r.lat, l...)
	}
	slices.Sort(r.lat)
	if r.errors > 0 {
		return r, fmt.Errorf("%d of %d posts were not answered 204", r.errors, n)
	}
	return r, nil
}

// makeBodies is a realistic mix of firmware events.
func makeBodies(devices, n int) [][]byte {
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

// feed counts the data frames of one SSE client.
type feed struct {
	frames  atomic.Int64
	evicted atomic.Bool
}

func follow(ctx context.Context, base string) (*feed, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/perception/feed", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	f := &feed{}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "data: ") {
				if strings.Contains(line, `"name":"fell_behind"`) {
					f.evicted.Store(true)
					return
				}
				f.frames.Add(1)
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // subscribed before the run starts
	return f, nil
}

var sample = regexp.MustCompile(`^(dotty_perception_dropped_total\{consumer="([^"]+)"\}|dotty_sse_evictions_total) (\S+)$`)

// scrape reads the perception counters from /metrics.
func scrape(client *http.Client, base string) (map[string]float64, error) {
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if g := sample.FindStringSubmatch(sc.Text()); g != nil {
			key := g[2]
			if key == "" {
				key = "sse_evictions"
			}
			v, _ := strconv.ParseFloat(g[3], 64)
			m[key] = v
		}
	}
	return m, sc.Err()
}

func report(w io.Writer, o options, r result, before, after map[string]float64, feeds []*feed, pid int, cpu time.Duration) {
	pct := func(q float64) time.Duration { return r.lat[min(len(r.lat)-1, int(q*float64(len(r.lat))))] }
	rate := float64(r.sent) / r.elapsed.Seconds()
	fmt.Fprintf(w, "events sent      %d (%d failed) over %d connections, %d in flight each, in %v\n", r.sent, r.errors, o.c, max(o.pipeline, 1), r.elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "throughput       %.0f events/s\n", rate)
	fmt.Fprintf(w, "latency          p50 %v  p90 %v  p99 %v  max %v\n", pct(0.5), pct(0.9), pct(0.99), r.lat[len(r.lat)-1])
	fmt.Fprintln(w, "delivered        (every consumer subscribes to every event)")
	var names []string
	for k := range after {
		if k != "sse_evictions" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		dropped := after[k] - before[k]
		fmt.Fprintf(w, "  %-26s %6.2f%%  (%.0f dropped)\n", k, 100*(1-dropped/float64(r.sent)), dropped)
	}
	for i, f := range feeds {
		state := "kept up"
		if f.evicted.Load() {
			state = "evicted (fell_behind)"
		}
		fmt.Fprintf(w, "  feed client %-14d %6.2f%%  (%d frames, %s)\n", i+1, 100*float64(f.frames.Load())/float64(r.sent), f.frames.Load(), state)
	}
	if pid > 0 {
		fmt.Fprintf(w, "bridge process   cpu %v (%.1f µs/event), %s\n", cpu.Round(time.Millisecond), float64(cpu.Microseconds())/float64(r.sent), memory(pid))
	}
}

type bridge struct {
	url string
	pid int
}

var listening = regexp.MustCompile(`http server listening: addr=(\S+)`)

// startBridge builds (unless bin is given) and starts a bridge on a free
// loopback port with its files in a temporary directory.
func startBridge(bin string, soundTurner bool) (bridge, func(), error) {
	dir, err := os.MkdirTemp("", "perception-load-")
	if err != nil {
		return bridge{}, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	if bin == "" {
		bin = filepath.Join(dir, "zeroclaw-bridge")
		build := exec.Command("go", "build", "-o", bin, "./cmd/zeroclaw-bridge")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			cleanup()
			return bridge{}, nil, fmt.Errorf("build the bridge (run from the repository root): %w", err)
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + dir, "HOME=" + dir, "BRIDGE_HOST=127.0.0.1", "PORT=0", "LOG_LEVEL=info", "WEATHER_LOCATION=-",
		"CONVO_LOG_DIR=" + filepath.Join(dir, "logs"), "DOTTY_KID_MODE_STATE=" + filepath.Join(dir, "kid"),
		"DOTTY_SMART_MODE_STATE=" + filepath.Join(dir, "smart"), "VOICE_MEMORY_DB=" + filepath.Join(dir, "brain.db"),
		"HOUSEHOLD_YAML_PATH=" + filepath.Join(dir, "household.yaml")}
	if soundTurner {
		cmd.Env = append(cmd.Env, "DOTTY_SOUND_TURNER_ENABLED=1")
	}
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS"} { // runtime tuning passes through
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cleanup()
		return bridge{}, nil, err
	}
	if err := cmd.Start(); err != nil {
		cleanup()
		return bridge{}, nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
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
		return bridge{url: "http://" + a, pid: cmd.Process.Pid}, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return bridge{}, nil, errors.New("the bridge did not listen within 30 s")
	}
}

// cpuTime is the process's user+system CPU time (0 when unknown).
func cpuTime(pid int) time.Duration {
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

// memory reports the process's resident and peak memory.
func memory(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "memory unknown"
	}
	var parts []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") || strings.HasPrefix(line, "VmHWM:") {
			parts = append(parts, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(parts, ", ")
}
