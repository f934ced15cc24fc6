// Command bridgebench measures a real zeroclaw-bridge binary with the
// built-in demo agent (standing in for `zeroclaw acp`, no chunk delay) and
// prints one table: start to healthy, idle and peak memory, voice turn
// latency (buffered and streaming, 1 and 16 concurrent sessions), the time
// from an agent crash to the next good turn, perception ingest with
// consumers attached, and SSE delivery latency with many feed clients.
// Two floors are measured in the same run, so the bridge's figures read
// as ratios on any machine: the demo agent alone over ACP, and an empty
// net/http handler in its own process answering the same requests.
//
// Usage:
//
//	go run ./cmd/bridgebench            # or: just bench
//	go run ./cmd/bridgebench -turns 2000 -sse 100
//
// After the table it prints the targets, each a ratio to a floor measured
// in the same run, one line each with its verdict.
//
// Numbers are wall-clock measurements on a shared machine: run it a few
// times and quote medians (docs/performance.md).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/benchkit"
)

type options struct {
	bin            string
	turns, conc    int
	events, sse    int
	cpuTurns       int
	sseRate        int
	skipPerception bool
	skipFloors     bool
}

func main() {
	maybeServeEmpty()
	var o options
	flag.StringVar(&o.bin, "bin", "", "bridge binary (default: go build ./cmd/zeroclaw-bridge)")
	flag.IntVar(&o.turns, "turns", 1000, "voice turns per latency row")
	flag.IntVar(&o.conc, "concurrency", 16, "concurrent sessions of the concurrent rows")
	flag.IntVar(&o.events, "events", 100000, "perception events of the ingest row")
	flag.IntVar(&o.cpuTurns, "cpu-turns", 4000, "lockstep turns of each CPU-per-turn row (CPU time is counted in 10 ms ticks: keep a few seconds' worth)")
	flag.IntVar(&o.sse, "sse", 64, "feed clients of the SSE delivery row (the bridge's default PERCEPTION_FEED_MAX_CLIENTS is 64)")
	flag.IntVar(&o.sseRate, "sse-rate", 500, "events per second of the SSE delivery row")
	flag.BoolVar(&o.skipPerception, "skip-perception", false, "skip the perception rows")
	flag.BoolVar(&o.skipFloors, "skip-floors", false, "skip the idle RSS floors (programs linking part of the bridge's libraries)")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bridgebench:", err)
		os.Exit(1)
	}
}

// row is one line of the report.
type row struct{ name, value, target string }

// ratio is one target read against a floor of the same run: value, the
// bridge's figure as that ratio (a multiple, µs or MiB over the floor, a
// percentage), met when it is on the right side of target. Missing says
// why it was not measured.
type ratio struct {
	name    string
	value   float64
	unit    string // "×", " µs", " %", " MiB"
	target  float64
	atLeast bool // met when value ≥ target (else ≤)
	missing string
}

func (r ratio) String() string {
	if r.missing != "" {
		return r.missing
	}
	op, met := "≤", r.value <= r.target
	if r.atLeast {
		op, met = "≥", r.value >= r.target
	}
	verdict := "missed"
	if met {
		verdict = "met"
	}
	return fmt.Sprintf("%-10s %s %s  %s", trimFloat(r.value)+r.unit, op, trimFloat(r.target)+r.unit, verdict)
}

// trimFloat prints f with one decimal, none when it is whole or large.
func trimFloat(f float64) string {
	if f == float64(int64(f)) || f >= 100 || f <= -100 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.1f", f)
}

func run(o options, out io.Writer) error {
	bin := o.bin
	if bin == "" {
		dir, err := os.MkdirTemp("", "bridgebench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "zeroclaw-bridge")
		// Built as a release is, so memory is the shipped binary's.
		if err := benchkit.Build(bin, true); err != nil {
			return err
		}
	}
	var rows []row
	add := func(name, value, target string) { rows = append(rows, row{name, value, target}) }
	// The targets, in the order; each is filled in where measured.
	cpuRatio := ratio{name: "bridge CPU per buffered turn ÷ the empty handler's CPU per request", unit: "×", target: 3, missing: "not measured"}
	bufferedOver := ratio{name: "buffered turn p50, over the empty handler", unit: " µs", target: 100, missing: "not measured"}
	finalOver := ratio{name: "streamed turn's final frame p50, over the empty handler", unit: " µs", target: 120, missing: "not measured"}
	ingestShare := ratio{name: "perception ingest, % of the empty handler's events/s", unit: " %", target: 80, atLeast: true, missing: "skipped (-skip-perception)"}
	rssOver := ratio{name: "idle RSS (existing brain.db) over the library floor (+ openai-go, SQLite, YAML)", unit: " MiB", target: 3, missing: "skipped (-skip-floors)"}

	agent, agentFirst, acpCPU, err := agentBaseline(bin, o.turns)
	if err != nil {
		return err
	}
	add("demo agent alone (ACP prompt round trip)", fmt.Sprintf("p50 %s  p99 %s  (the SDK client's CPU: %s per prompt)", us(pct(agent, .5)), us(pct(agent, .99)), us(acpCPU)), "")

	emptyURL, emptyPID, stopEmpty, err := startEmpty()
	if err != nil {
		return err
	}
	defer stopEmpty()
	emptyClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	floor, _, _, err := turns(emptyClient, emptyURL, o.turns, 1, false)
	if err != nil {
		return fmt.Errorf("empty handler: %w", err)
	}
	add("empty handler (net/http, own process), same request", fmt.Sprintf("p50 %s  p99 %s", us(pct(floor, .5)), us(pct(floor, .99))), "the HTTP floor")

	start := time.Now()
	b, err := benchkit.Start(bin, "ZEROCLAW_BIN="+bin, "ZEROCLAW_ARGS=-chunk-delay 0s", "ZEROCLAW_SESSION_MAX_TURNS=1000000",
		"ZEROCLAW_MAX_SESSIONS=64", fmt.Sprintf("PERCEPTION_FEED_MAX_CLIENTS=%d", max(o.sse, 1)))
	if err != nil {
		return err
	}
	defer b.Stop()
	listening := time.Since(start)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	if err := waitReady(client, b.URL, 30*time.Second); err != nil {
		return err
	}
	add("start to listening", ms(listening), "")
	add("start to healthy (agent initialised)", ms(time.Since(start)), "≤ 100 ms + agent init")
	time.Sleep(time.Second)
	rss, _ := benchkit.MemoryKB(b.PID)
	add("idle RSS (a new brain.db was created)", fmt.Sprintf("%.1f MiB", float64(rss)/1024), "")
	existing, err := idleWithExistingDB(bin, filepath.Join(b.Dir, "brain.db"))
	if err != nil {
		return err
	}
	add("idle RSS, existing brain.db (as in production)", fmt.Sprintf("%.1f MiB", float64(existing)/1024), "floor + 3 MiB (below)")
	if !o.skipFloors {
		floors, err := idleFloors()
		if err != nil {
			return err
		}
		for _, f := range floors {
			add("idle RSS floor: "+f.name, fmt.Sprintf("%.1f MiB", float64(f.rss)/1024), "")
		}
		rssOver.value, rssOver.missing = float64(existing-floors[len(floors)-1].rss)/1024, ""
	}

	for _, tt := range []struct {
		name   string
		stream bool
		conc   int
	}{
		{"buffered turn, 1 session", false, 1},
		{"streaming turn, 1 session", true, 1},
		{fmt.Sprintf("buffered turn, %d sessions", o.conc), false, o.conc},
		{fmt.Sprintf("streaming turn, %d sessions", o.conc), true, o.conc},
	} {
		lat, first, final, err := turns(client, b.URL, o.turns, tt.conc, tt.stream)
		if err != nil {
			return fmt.Errorf("%s: %w", tt.name, err)
		}
		if tt.stream && tt.conc == 1 {
			add("first chunk on the wire (streaming, 1 session)", fmt.Sprintf("p50 %s  → added p50 %s over the agent's first chunk", us(pct(first, .5)), us(pct(first, .5)-pct(agentFirst, .5))), "added ≤ 80 µs")
			// ZeroClawLLM stops reading at the final frame; the end of the
			// chunked body comes after the turn is recorded.
			over := pct(final, .5) - pct(agent, .5) - pct(floor, .5)
			add("final frame on the wire (streaming, 1 session)", fmt.Sprintf("p50 %s  p99 %s  → added p50 %s (%s over the empty handler)", us(pct(final, .5)), us(pct(final, .99)),
				us(pct(final, .5)-pct(agent, .5)), us(over)), "over the empty handler ≤ 120 µs")
			finalOver.value, finalOver.missing = float64(over.Microseconds()), ""
		}
		value := fmt.Sprintf("p50 %s  p99 %s", us(pct(lat, .5)), us(pct(lat, .99)))
		target := ""
		if tt.conc == 1 {
			// Added latency: the whole request minus the agent's own round
			// trip, at the median (differences of tails are not meaningful);
			// less the empty handler's, what the bridge itself costs.
			added := pct(lat, .5) - pct(agent, .5)
			value += fmt.Sprintf("  → added p50 %s (%s over the empty handler)", us(added), us(added-pct(floor, .5)))
			target = fmt.Sprintf("p99 ≤ agent p99 + 0.5 ms (%s)", us(pct(agent, .99)+500*time.Microsecond))
			if !tt.stream {
				target = "over the empty handler ≤ 100 µs; " + target
				bufferedOver.value, bufferedOver.missing = float64((added - pct(floor, .5)).Microseconds()), ""
			}
		}
		add(tt.name+" (whole request)", value, target)
	}

	// CPU per turn moves far less with the machine's noise than latency
	// percentiles do: turns in lockstep on one keep-alive connection while
	// /proc counts the process's CPU time.
	cpu0 := benchkit.CPUTime(emptyPID)
	if _, _, _, err := turns(emptyClient, emptyURL, o.cpuTurns, 1, false); err != nil {
		return fmt.Errorf("empty handler: %w", err)
	}
	emptyCPU := (benchkit.CPUTime(emptyPID) - cpu0) / time.Duration(o.cpuTurns)
	for _, stream := range []bool{false, true} {
		cpu0, t0 := benchkit.CPUTime(b.PID), time.Now()
		if _, _, _, err := turns(client, b.URL, o.cpuTurns, 1, stream); err != nil {
			return fmt.Errorf("lockstep turns: %w", err)
		}
		elapsed, cpu := time.Since(t0), (benchkit.CPUTime(b.PID)-cpu0)/time.Duration(o.cpuTurns)
		kind := "buffered"
		if stream {
			kind = "streamed"
		}
		target := ""
		if !stream {
			target = "≤ 3× the empty handler's"
			if emptyCPU > 0 {
				cpuRatio.value, cpuRatio.missing = float64(cpu)/float64(emptyCPU), ""
			} else {
				cpuRatio.missing = "the empty handler's CPU was below the clock's 10 ms tick: raise -cpu-turns"
			}
		}
		add(fmt.Sprintf("bridge CPU per %s turn, lockstep on one connection", kind), fmt.Sprintf("%s  (%.0f turns/s; the empty handler: %s per request; with the SDK client's per prompt: %s)", us(cpu), float64(o.cpuTurns)/elapsed.Seconds(), us(emptyCPU), us(emptyCPU+acpCPU)), target)
	}

	crash, err := crashToTurn(client, b.URL)
	if err != nil {
		return err
	}
	add("agent crash (SIGKILL) to next good turn", ms(crash), "≤ 1 s")

	barge, fresh, err := bargeIn(bin, 20)
	if err != nil {
		return err
	}
	add("barge-in → next turn's first chunk, same session", fmt.Sprintf("p50 %s  (a turn's first chunk alone: p50 %s)", ms(pct(barge, .5)), ms(pct(fresh, .5))), "cancel on the wire ≤ 5 ms")

	if !o.skipPerception {
		bodies := benchkit.EventBodies(4, 4096)
		if _, err := benchkit.Post(b.URL, bodies, 5000, 8, 1); err != nil {
			return err
		}
		if _, err := benchkit.Post(emptyURL, bodies, 5000, 8, 1); err != nil {
			return err
		}
		cpu0 := benchkit.CPUTime(emptyPID)
		floorRes, err := benchkit.Post(emptyURL, bodies, o.events, 8, 1)
		if err != nil {
			return fmt.Errorf("empty handler ingest: %w", err)
		}
		floorCPU := (benchkit.CPUTime(emptyPID) - cpu0) / time.Duration(max(floorRes.Sent, 1))
		floorRate := float64(floorRes.Sent) / floorRes.Elapsed.Seconds()
		add("empty handler ingest, 8 connections, 1 in flight each", fmt.Sprintf("%.0f events/s (p99 %s), %s CPU per event", floorRate, us(pct(floorRes.Lat, .99)), us1(floorCPU)), "the HTTP floor")
		cpu0 = benchkit.CPUTime(b.PID)
		res, err := benchkit.Post(b.URL, bodies, o.events, 8, 1)
		if err != nil {
			return err
		}
		evCPU := (benchkit.CPUTime(b.PID) - cpu0) / time.Duration(max(res.Sent, 1))
		rate := float64(res.Sent) / res.Elapsed.Seconds()
		add("perception ingest, 8 connections, consumers attached", fmt.Sprintf("%.0f events/s (p99 %s) = %.0f %% of the empty handler, %s CPU per event", rate, us(pct(res.Lat, .99)), 100*rate/floorRate, us1(evCPU)), "≥ 80 % of the empty handler")
		ingestShare.value, ingestShare.missing = float64(int(100*rate/floorRate+0.5)), ""
		res, err = benchkit.Post(b.URL, bodies, o.events, 8, 8)
		if err != nil {
			return err
		}
		add("perception ingest, 8 connections × 8 pipelined", fmt.Sprintf("%.0f events/s", float64(res.Sent)/res.Elapsed.Seconds()), "≥ 40 000 events/s")
		d, got, want, err := sseDelivery(b.URL, o.sse, o.sseRate)
		if err != nil {
			return err
		}
		add(fmt.Sprintf("SSE delivery, %d feed clients at %d events/s", o.sse, o.sseRate), fmt.Sprintf("p50 %s  p99 %s  (%d of %d frames)", us(pct(d, .5)), us(pct(d, .99)), got, want), "p99 ≤ 10 ms")
	}
	_, peak := benchkit.MemoryKB(b.PID)
	add("peak RSS (VmHWM)", fmt.Sprintf("%.1f MiB", float64(peak)/1024), "≤ 28 MiB")

	fmt.Fprintf(out, "zeroclaw-bridge bench — %s, %d CPUs, %s\n\n", time.Now().UTC().Format(time.RFC3339), numCPU(), goVersion(bin))
	w := 0
	for _, r := range rows {
		w = max(w, len([]rune(r.name)))
	}
	for _, r := range rows {
		fmt.Fprintf(out, "%-*s  %-58s %s\n", w, r.name, r.value, r.target)
	}
	fmt.Fprintf(out, "\ntargets, as ratios to the floors of this run\n\n")
	ratios := []ratio{cpuRatio, bufferedOver, finalOver, ingestShare, rssOver}
	w = 0
	for _, r := range ratios {
		w = max(w, len([]rune(r.name)))
	}
	for _, r := range ratios {
		fmt.Fprintf(out, "%-*s  %s\n", w, r.name, r)
	}
	return nil
}

// idleWithExistingDB starts a second bridge on the brain.db the first one
// created and returns its idle RSS (KiB): a production bridge opens
// ZeroClaw's database, it does not create one, and creating the schema
// runs (and maps) much of SQLite.
func idleWithExistingDB(bin, db string) (int64, error) {
	b, err := benchkit.Start(bin, "ZEROCLAW_BIN="+bin, "ZEROCLAW_ARGS=-chunk-delay 0s", "VOICE_MEMORY_DB="+db)
	if err != nil {
		return 0, err
	}
	defer b.Stop()
	if err := waitReady(&http.Client{Timeout: 5 * time.Second}, b.URL, 30*time.Second); err != nil {
		return 0, err
	}
	time.Sleep(time.Second)
	rss, _ := benchkit.MemoryKB(b.PID)
	return rss, nil
}

// rssFloor is one idle RSS floor: a program linking part of the bridge's
// libraries (cmd/internal/rssfloor), its RSS in KiB.
type rssFloor struct {
	name string
	rss  int64
}

// idleFloors builds cmd/internal/rssfloor as the bridge is built, once per
// set of libraries, and measures each one idle after a /health and a
// /metrics request, as the bridge's idle rows are.
func idleFloors() ([]rssFloor, error) {
	dir, err := os.MkdirTemp("", "bridgebench-floor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var out []rssFloor
	for i, v := range []struct{ name, tags string }{
		{"net/http alone", ""},
		{"+ echo, prometheus, hclog, ACP SDK, backoff", "libs"},
		{"+ openai-go, SQLite driver, YAML", "libs,extra"},
	} {
		bin := filepath.Join(dir, fmt.Sprintf("floor%d", i))
		build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-tags="+v.tags, "-o", bin, "github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/rssfloor")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build the RSS floor %q: %w", v.name, err)
		}
		rss, err := idleFloor(bin)
		if err != nil {
			return nil, fmt.Errorf("RSS floor %q: %w", v.name, err)
		}
		out = append(out, rssFloor{v.name, rss})
	}
	return out, nil
}

func idleFloor(bin string) (int64, error) {
	cmd := exec.Command(bin)
	addr, stop, err := startListening(cmd)
	if err != nil {
		return 0, err
	}
	defer stop()
	c := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/health", "/metrics"} {
		resp, err := c.Get("http://" + addr + path)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	time.Sleep(time.Second)
	rss, _ := benchkit.MemoryKB(cmd.Process.Pid)
	return rss, nil
}

// waitReady polls /health until the agent is ready.
func waitReady(c *http.Client, base string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if h, err := health(c, base); err == nil && h.Agent.State == "ready" {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("agent not ready within %v", d)
}

type healthBody struct {
	Agent struct {
		State string `json:"state"`
		PID   int    `json:"pid"`
	} `json:"agent"`
}

func health(c *http.Client, base string) (healthBody, error) {
	var h healthBody
	resp, err := c.Get(base + "/health")
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	return h, json.NewDecoder(resp.Body).Decode(&h)
}

// turns runs n voice turns from conc workers (one session each) and
// returns the sorted request latencies.
func turns(c *http.Client, base string, n, conc int, stream bool) (lat, first, final []time.Duration, err error) {
	path := "/api/message"
	if stream {
		path = "/api/message/stream"
	}
	var next atomic.Int64
	lats := make([][]time.Duration, conc)
	firsts := make([][]time.Duration, conc)
	finals := make([][]time.Duration, conc)
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := []byte(fmt.Sprintf(`{"content":"hello from bench","session_id":"bench-%d"}`, w))
			for next.Add(1) <= int64(n) {
				t := time.Now()
				resp, err := c.Post(base+path, "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				var raw []byte
				if stream { // time the first line and the final frame, then read the rest
					br := bufio.NewReader(resp.Body)
					for {
						line, err := br.ReadBytes('\n')
						if len(raw) == 0 {
							firsts[w] = append(firsts[w], time.Since(t))
						}
						raw = append(raw, line...)
						if bytes.Contains(line, []byte(`"type":"final"`)) {
							finals[w] = append(finals[w], time.Since(t))
						}
						if err != nil {
							break
						}
					}
				} else {
					raw, _ = io.ReadAll(resp.Body)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 || !bytes.Contains(raw, []byte("hello from bench")) {
					errs <- fmt.Errorf("turn: %d %.200s", resp.StatusCode, raw)
					return
				}
				lats[w] = append(lats[w], time.Since(t))
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, nil, nil, err
	}
	for w := range lats {
		lat, first, final = append(lat, lats[w]...), append(first, firsts[w]...), append(final, finals[w]...)
	}
	slices.Sort(lat)
	slices.Sort(first)
	slices.Sort(final)
	return lat, first, final, nil
}

// crashToTurn kills the agent child and times the next good turn.
func crashToTurn(c *http.Client, base string) (time.Duration, error) {
	h, err := health(c, base)
	if err != nil || h.Agent.PID == 0 {
		return 0, fmt.Errorf("no agent pid on /health: %v", err)
	}
	start := time.Now()
	if err := syscall.Kill(h.Agent.PID, syscall.SIGKILL); err != nil {
		return 0, err
	}
	for time.Since(start) < 30*time.Second {
		resp, err := c.Post(base+"/api/message", "application/json", strings.NewReader(`{"content":"are you back","session_id":"crash"}`))
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && bytes.Contains(raw, []byte("are you back")) {
				return time.Since(start), nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("no good turn within 30 s of the crash")
}

// sseDelivery attaches n feed clients, posts events stamped with their
// send time at rate per second for two seconds, and returns every frame's
// delivery delay (receive time − ts).
func sseDelivery(base string, n, rate int) ([]time.Duration, int, int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var delays []time.Duration
	var wg sync.WaitGroup
	for range n {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/perception/feed", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, 0, 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok || !strings.Contains(line, `"name":"bench_tick"`) {
					continue
				}
				now := time.Now()
				var ev struct{ TS float64 }
				if json.Unmarshal([]byte(line), &ev) == nil {
					sent := time.Unix(0, int64(ev.TS*1e9))
					mu.Lock()
					delays = append(delays, now.Sub(sent))
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	total := 2 * rate
	c := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for i := 0; i < total; i++ {
		<-tick.C
		body := fmt.Sprintf(`{"device_id":"bench","ts":%.6f,"name":"bench_tick","data":{"i":%d}}`, float64(time.Now().UnixNano())/1e9, i)
		resp, err := c.Post(base+"/api/perception/event", "application/json", strings.NewReader(body))
		if err != nil {
			tick.Stop()
			return nil, 0, 0, err
		}
		resp.Body.Close()
	}
	tick.Stop()
	time.Sleep(500 * time.Millisecond)
	cancel()
	wg.Wait()
	slices.Sort(delays)
	return delays, len(delays), total * n, nil
}

func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

func us(d time.Duration) string  { return fmt.Sprintf("%d µs", d.Microseconds()) }
func us1(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000) }
func ms(d time.Duration) string  { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return max(1, strings.Count(string(b), "processor\t:"))
}

func goVersion(bin string) string {
	out, err := exec.Command("go", "version", bin).Output()
	if err != nil {
		return "unknown Go"
	}
	f := strings.Fields(string(out))
	return f[len(f)-1]
}

// bargeIn starts a second bridge whose demo agent streams slowly (40 ms
// between chunks), then n times: opens a streaming turn, hangs up at its
// first chunk, and times the next turn on the same session to its first
// chunk. A cancel that reached the agent at once makes that time about a
// fresh turn's first-chunk time (also returned); one that did not adds
// the rest of the interrupted reply.
func bargeIn(bin string, n int) (barge, fresh []time.Duration, err error) {
	b, err := benchkit.Start(bin, "ZEROCLAW_BIN="+bin, "ZEROCLAW_ARGS=-chunk-delay 40ms", "ZEROCLAW_SESSION_MAX_TURNS=1000000")
	if err != nil {
		return nil, nil, err
	}
	defer b.Stop()
	c := &http.Client{Timeout: 30 * time.Second}
	if err := waitReady(c, b.URL, 30*time.Second); err != nil {
		return nil, nil, err
	}
	firstChunk := func(session string, hangUp bool) (time.Duration, error) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.URL+"/api/message/stream",
			strings.NewReader(`{"content":"tell me a long story please","session_id":"`+session+`"}`))
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"type":"chunk"`) {
				d := time.Since(start)
				if !hangUp {
					_, _ = io.Copy(io.Discard, resp.Body) // let the turn finish
				}
				return d, nil
			}
		}
		return 0, fmt.Errorf("stream ended without a chunk")
	}
	for i := range n {
		session := fmt.Sprintf("barge-%d", i)
		d, err := firstChunk(session, false) // a whole turn: the session exists
		if err != nil {
			return nil, nil, err
		}
		fresh = append(fresh, d)
		if _, err := firstChunk(session, true); err != nil { // hang up at the first chunk
			return nil, nil, err
		}
		d, err = firstChunk(session, false)
		if err != nil {
			return nil, nil, err
		}
		barge = append(barge, d)
	}
	slices.Sort(barge)
	slices.Sort(fresh)
	return barge, fresh, nil
}
