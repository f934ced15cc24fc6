package bridgeapp

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/benchkit"
)

// floodBoundary is the multipart boundary of the flood's uploads.
const floodBoundary = "floodfloodflood"

// TestUploadFloodStaysInMemoryBound: 200 clients each send an 8 MB photo
// to /api/vision/explain and hold its last byte back, as the attack of
// issue 30 did (RSS went from 24 to 1 695 MiB). The upload budget (8 MiB)
// reads one of them at a time; the others wait without being read and get a 503
// with a Retry-After when their body deadline passes. The bridge's peak
// RSS (VmHWM, read from /proc) stays under 100 MiB: a memory bound, not a
// timing one. A robot's photo is described during the flood (it is under
// the budget's free size) and a larger one after it.
func TestUploadFloodStaysInMemoryBound(t *testing.T) {
	vlm := llmtest.New(t, "A robot on a desk.")
	// A 12 s upload deadline keeps the test short: the held uploads are
	// cut, and the waiting ones refused, 12 s after they began.
	p := startBridge(t, append(visionEnv(vlm), "BRIDGE_UPLOAD_TIMEOUT=12")...)
	pid := p.cmd.Process.Pid
	rssBefore, _ := benchkit.MemoryKB(pid)

	const clients, size = 200, 8_000_000
	photo := make([]byte, size) // shared, read only
	head := "--" + floodBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"flood.jpg\"\r\n" +
		"Content-Type: image/jpeg\r\n\r\n"
	tail := "\r\n--" + floodBoundary + "--\r\n"
	length := len(head) + size + len(tail)

	var sampled sync.WaitGroup
	stopSampling := make(chan struct{})
	var rssPeakKB int64
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				rss, _ := benchkit.MemoryKB(pid)
				rssPeakKB = max(rssPeakKB, rss)
			}
		}
	}()

	type outcome struct {
		status       int // 0: the connection ended without an answer
		retry, body  string
		sent, dialed bool
	}
	outcomes := make([]outcome, clients)
	var sentHeads sync.WaitGroup
	var done sync.WaitGroup
	for i := range clients {
		sentHeads.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			o := &outcomes[i]
			conn, err := net.DialTimeout("tcp", p.addr, 10*time.Second)
			if err != nil {
				sentHeads.Done()
				return
			}
			defer conn.Close()
			o.dialed = true
			// Every wait is bounded; the bridge answers within its 12 s.
			_ = conn.SetDeadline(time.Now().Add(40 * time.Second))
			_, err = fmt.Fprintf(conn, "POST /api/vision/explain HTTP/1.1\r\nHost: %s\r\ndevice-id: flood-%d\r\n"+
				"Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s",
				p.addr, i, floodBoundary, length, head)
			o.sent = err == nil
			sentHeads.Done()
			// All but the last byte, from a writer of its own: the write
			// blocks once the bridge stops reading, and ends when the
			// connection closes.
			go func() { _, _ = conn.Write(photo[:size-1]) }()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			o.status, o.retry, o.body = resp.StatusCode, resp.Header.Get("Retry-After"), strings.TrimSpace(string(b))
		}()
	}
	sentHeads.Wait()

	// During the flood: the budget is spent and uploads wait for it, and a
	// robot's photo (under the budget's free 16 KiB) is described.
	var waiting, inUse float64
	testkit.WaitFor(t, 15*time.Second, "uploads waiting for the upload budget", func() bool {
		_, m := p.get("/metrics")
		waiting, inUse = metricValue(t, m, "dotty_http_upload_budget_waiting"), metricValue(t, m, "dotty_http_upload_budget_in_use_bytes")
		return waiting > 0
	})
	if inUse > 8<<20 {
		t.Errorf("%.0f bytes of the upload budget in use, over its 8 MiB", inUse)
	}
	if code, body := explainPhoto(t, p, "dotty-during", 12<<10); code != http.StatusOK || body != `{"description":"A robot on a desk."}` {
		t.Errorf("a robot's photo during the flood: %d %s", code, body)
	}
	done.Wait()
	close(stopSampling)
	sampled.Wait()

	// After it: a larger photo, which reserves from the budget, too.
	if code, body := explainPhoto(t, p, "dotty-after", 200<<10); code != http.StatusOK || body != `{"description":"A robot on a desk."}` {
		t.Errorf("a photo after the flood: %d %s", code, body)
	}
	rss, hwm := benchkit.MemoryKB(pid)
	rssPeakKB = max(rssPeakKB, hwm)

	counts := map[string]int{}
	for i, o := range outcomes {
		switch {
		case !o.dialed || !o.sent:
			t.Errorf("flood client %d could not send its request", i)
		case o.status == 0:
			counts["no answer (connection cut)"]++
		default:
			counts[strconv.Itoa(o.status)]++
		}
		if o.status == http.StatusServiceUnavailable &&
			(o.retry != "5" || o.body != `{"detail":"too many uploads in flight; try again later"}`) {
			t.Errorf("flood client %d: 503 with Retry-After %q and %s", i, o.retry, o.body)
		}
		if o.status != 0 && o.status != http.StatusServiceUnavailable && o.status != http.StatusBadRequest {
			t.Errorf("flood client %d: %d %s; a held upload is refused (503) or cut (400 or a closed connection)", i, o.status, o.body)
		}
	}
	if counts["503"] == 0 {
		t.Errorf("no flood client was refused with a 503: %v", counts)
	}
	_, m := p.get("/metrics")
	refused := metricValue(t, m, "dotty_http_upload_budget_refused_total")
	if refused < float64(counts["503"]) {
		t.Errorf("dotty_http_upload_budget_refused_total %v, below the %d answered 503", refused, counts["503"])
	}
	if left := metricValue(t, m, "dotty_http_upload_budget_in_use_bytes"); left != 0 {
		t.Errorf("%v bytes of the budget still in use after the flood", left)
	}
	if code, _ := p.get("/health"); code != http.StatusOK {
		t.Errorf("/health after the flood: %d", code)
	}
	var summary []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		summary = append(summary, fmt.Sprintf("%s×%d", k, counts[k]))
	}
	t.Logf("%d clients × %d-byte uploads held open: %s; refused (metric) %v; waiting during the flood %v, %.1f MiB of the budget in use",
		clients, size, strings.Join(summary, ", "), refused, waiting, inUse/(1<<20))
	t.Logf("bridge RSS: %.1f MiB before, %.1f MiB after, peak (VmHWM) %.1f MiB, limit 100 MiB",
		float64(rssBefore)/1024, float64(rss)/1024, float64(rssPeakKB)/1024)
	if peak := float64(rssPeakKB) / 1024; peak >= 100 {
		t.Errorf("peak RSS %.1f MiB under the upload flood, want under 100 MiB", peak)
	}
}

// explainPhoto posts a photo of n bytes to /api/vision/explain for device
// and returns the status and body.
func explainPhoto(t *testing.T, p *bridgeProc, device string, n int) (int, string) {
	t.Helper()
	return p.explain(device, "What do you see?", append([]byte("\xff\xd8\xff\xe0"), make([]byte, n-4)...))
}
