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
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/benchkit"
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
		var extra []string
		if o.soundTurner {
			extra = append(extra, "DOTTY_SOUND_TURNER_ENABLED=1")
		}
		b, err := benchkit.Start(o.bin, extra...)
		if err != nil {
			return err
		}
		defer b.Stop()
		base, pid = b.URL, b.PID
	}
	client := &http.Client{Timeout: 10 * time.Second}
	bodies := benchkit.EventBodies(o.devices, 4096)
	if _, err := benchkit.Post(base, bodies, o.warmup, o.c, o.pipeline); err != nil {
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
	cpu0 := benchkit.CPUTime(pid)
	res, err := benchkit.Post(base, bodies, o.n, o.c, o.pipeline)
	if err != nil {
		return err
	}
	cpu := benchkit.CPUTime(pid) - cpu0
	time.Sleep(500 * time.Millisecond) // let the feeds drain
	after, err := scrape(client, base)
	if err != nil {
		return err
	}
	cancel()
	report(out, o, res, before, after, feeds, pid, cpu)
	return nil
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

func report(w io.Writer, o options, r benchkit.Result, before, after map[string]float64, feeds []*feed, pid int, cpu time.Duration) {
	pct := func(q float64) time.Duration { return r.Lat[min(len(r.Lat)-1, int(q*float64(len(r.Lat))))] }
	rate := float64(r.Sent) / r.Elapsed.Seconds()
	fmt.Fprintf(w, "events sent      %d (%d failed) over %d connections, %d in flight each, in %v\n", r.Sent, r.Errors, o.c, max(o.pipeline, 1), r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "throughput       %.0f events/s\n", rate)
	fmt.Fprintf(w, "latency          p50 %v  p90 %v  p99 %v  max %v\n", pct(0.5), pct(0.9), pct(0.99), r.Lat[len(r.Lat)-1])
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
		fmt.Fprintf(w, "  %-26s %6.2f%%  (%.0f dropped)\n", k, 100*(1-dropped/float64(r.Sent)), dropped)
	}
	for i, f := range feeds {
		state := "kept up"
		if f.evicted.Load() {
			state = "evicted (fell_behind)"
		}
		fmt.Fprintf(w, "  feed client %-14d %6.2f%%  (%d frames, %s)\n", i+1, 100*float64(f.frames.Load())/float64(r.Sent), f.frames.Load(), state)
	}
	if pid > 0 {
		fmt.Fprintf(w, "bridge process   cpu %v (%.1f µs/event), %s\n", cpu.Round(time.Millisecond), float64(cpu.Microseconds())/float64(r.Sent), benchkit.Memory(pid))
	}
}
