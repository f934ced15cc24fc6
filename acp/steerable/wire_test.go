package steerable

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// wire is a connection over in-process pipes, with the test playing the
// sidecar.
type wire struct {
	t       *testing.T
	c       agentconn.ChildConn
	toSide  *bufio.Scanner // what the bridge wrote
	fromW   *io.PipeWriter // what the sidecar writes
	metrics *acp.Metrics
	noise   []string
	mu      sync.Mutex
	wg      sync.WaitGroup
}

func newWire(t *testing.T, cfg Config) *wire {
	t.Helper()
	toR, toW := io.Pipe()
	fromR, fromW := io.Pipe()
	w := &wire{t: t, toSide: bufio.NewScanner(toR), fromW: fromW, metrics: acp.NewMetrics(prometheus.NewRegistry())}
	cfg.MaxLine = 1 << 10
	c, err := New(cfg).Open(agentconn.Child{
		Gen: 1, Stdin: toW, Stdout: fromR, Log: hclog.NewNullLogger(),
		InitTimeout: 2 * time.Second, CancelGrace: time.Second, StopGrace: time.Second, Metrics: &w.metrics.Metrics,
		Noise: func(l string) { w.mu.Lock(); w.noise = append(w.noise, l); w.mu.Unlock() },
		Go:    func(f func()) { w.wg.Add(1); go func() { defer w.wg.Done(); f() }() },
	})
	if err != nil {
		t.Fatal(err)
	}
	w.c = c
	t.Cleanup(func() {
		_ = fromW.Close()
		_ = toR.Close()
		c.Abort(agentconn.ErrAgentGone)
		w.wg.Wait()
		c.Wait()
	})
	return w
}

func (w *wire) write(lines ...string) {
	w.t.Helper()
	for _, l := range lines {
		if _, err := w.fromW.Write([]byte(l + "\n")); err != nil {
			w.t.Fatal(err)
		}
	}
}

// read returns the next frame the bridge wrote.
func (w *wire) read() map[string]any {
	w.t.Helper()
	got := make(chan map[string]any, 1)
	go func() {
		var f map[string]any
		if w.toSide.Scan() {
			_ = json.Unmarshal(w.toSide.Bytes(), &f)
		}
		got <- f
	}()
	select {
	case f := <-got:
		return f
	case <-time.After(5 * time.Second):
		w.t.Fatal("the bridge wrote nothing")
		return nil
	}
}

// The reader survives what a sidecar should not send, and goes on.
func TestReaderToleratesHostileLines(t *testing.T) {
	w := newWire(t, Config{PingInterval: time.Hour})
	w.write(
		"not json at all",
		`{"jsonrpc":"2.0","method":"lifecycle.ready","params":{"version":"9","protocolVersion":"0.1.0","extra":[1,2]}}`,
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Handshake(ctx); err != nil {
		t.Fatal(err)
	}
	if ping := w.read(); ping["method"] != "system.ping" {
		t.Fatalf("first frame %v, want the health ping", ping)
	}
	// An oversize line, an error for an unreadable request, a frame with
	// neither id nor method, a request from the sidecar, and a response
	// nobody waits for.
	w.write(
		`{"jsonrpc":"2.0","method":"stream.chunk","params":{"streamId":"s","delta":"`+strings.Repeat("x", 2000)+`"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":"r1","method":"ui.confirm","params":{}}`,
		`{"jsonrpc":"2.0","id":999,"result":{}}`,
	)
	if f := w.read(); f["id"] != "r1" || f["error"].(map[string]any)["code"] != float64(-32601) {
		t.Errorf("answer to the sidecar's request %v", f)
	}
	testkit.WaitFor(t, 5*time.Second, "the oversize line counted", func() bool {
		return testutil.ToFloat64(w.metrics.DroppedUpdates.WithLabelValues("oversize")) == 1
	})
	w.mu.Lock()
	noise := append([]string(nil), w.noise...)
	w.mu.Unlock()
	if len(noise) != 1 || noise[0] != "not json at all" {
		t.Errorf("noise %q", noise)
	}
	if err := w.c.Err(); err != nil {
		t.Errorf("connection died: %v", err)
	}
	if i := w.c.Info(); i.Version != "9" || i.Dialect != "steerable" {
		t.Errorf("info %+v", i)
	}
}
