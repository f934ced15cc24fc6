package steerable_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerable"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerabletest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestMain(m *testing.M) {
	steerabletest.MaybeRunHelper()
	// Panic on an exec.Cmd that is started but never waited for.
	_ = os.Setenv("GODEBUG", "execwait=2")
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// setup is one harness's configuration; zero fields get test defaults.
type setup struct {
	mode string
	env  []string
	cfg  acp.Config
	scfg steerable.Config
	pcfg acp.PoolConfig
	// noModel leaves scfg.Model empty (it is "test-model" otherwise: the
	// fake, as the sidecar, refuses chats without one).
	noModel bool
}

// harness runs a real Supervisor and Pool over the steerable protocol
// against a fake sidecar child.
type harness struct {
	t       *testing.T
	sup     *acp.Supervisor
	pool    *acp.Pool
	proto   *steerable.Protocol
	metrics *acp.Metrics
	logs    *testkit.LogBuffer
	record  string // the fake's record of frames received
	stop    func() time.Duration
}

// start runs s's sidecar; everything is stopped, and checked for leaked
// goroutines and processes, when the test ends.
func start(t *testing.T, s setup) *harness {
	t.Helper()
	h := &harness{t: t, logs: &testkit.LogBuffer{}, record: filepath.Join(t.TempDir(), "frames")}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("log output:\n" + h.logs.String())
		}
	})
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: h.logs})
	h.metrics = acp.NewMetrics(prometheus.NewRegistry())
	path, args, env := steerabletest.Command(s.mode, append([]string{"ZCB_STEERTEST_RECORD=" + h.record}, s.env...)...)
	cfg := s.cfg
	cfg.Command, cfg.Args, cfg.Env = path, args, env
	if cfg.BackoffInitial == 0 {
		cfg.BackoffInitial = 20 * time.Millisecond
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 500 * time.Millisecond
	}
	// Bounds only a hang reaches, as in acp's harness: on a loaded machine
	// a race-built sidecar takes seconds to start, and a restart must not
	// outlast the grace nor a handshake its timeout.
	if cfg.UnavailableGrace == 0 {
		cfg.UnavailableGrace = time.Minute
	}
	if cfg.InitTimeout == 0 {
		cfg.InitTimeout = time.Minute
	}
	if s.scfg.Model == "" && !s.noModel {
		s.scfg.Model = "test-model"
	}
	h.proto = steerable.New(s.scfg)
	cfg.Protocol, cfg.Logger, cfg.Metrics = h.proto, log, h.metrics
	pcfg := s.pcfg
	pcfg.Logger, pcfg.Metrics = log, h.metrics
	h.sup = acp.NewSupervisor(cfg)
	h.pool = acp.NewPool(pcfg, h.sup)
	h.stop = testkit.RunAll(t, func() int { return h.sup.Health().PID }, h.sup, h.pool)
	return h
}

func (h *harness) waitReady() acp.AgentHealth {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := h.sup.Acquire(ctx); err != nil {
		h.t.Fatalf("sidecar not ready: %v", err)
	}
	return h.sup.Health()
}

// turn runs one turn on key, collecting its chunks.
func (h *harness) turn(key, prompt string) (acp.TurnResult, []string, error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var chunks []string
	res, err := h.pool.Turn(ctx, acp.TurnRequest{Key: key, Prompt: func(int) string { return prompt },
		OnChunk: func(s string) { chunks = append(chunks, s) }})
	return res, chunks, err
}

func (h *harness) mustTurn(key, prompt string) (acp.TurnResult, []string) {
	h.t.Helper()
	res, chunks, err := h.turn(key, prompt)
	if err != nil {
		h.t.Fatalf("turn %q: %v", prompt, err)
	}
	return res, chunks
}

// bargeIn starts a turn, waits for its first chunk, ends its ctx and
// returns how long Turn took to return after that, and its error.
func (h *harness) bargeIn(key, prompt string) (time.Duration, error) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 1000)
	errc := make(chan error, 1)
	go func() {
		_, err := h.pool.Turn(ctx, acp.TurnRequest{Key: key, Prompt: func(int) string { return prompt },
			OnChunk: func(s string) { got <- s }})
		errc <- err
	}()
	select {
	case <-got:
	case err := <-errc:
		h.t.Fatalf("turn ended before its first chunk: %v", err)
	case <-time.After(10 * time.Second):
		h.t.Fatal("no first chunk")
	}
	begin := time.Now()
	cancel()
	select {
	case err := <-errc:
		return time.Since(begin), err
	case <-time.After(5 * time.Second):
		h.t.Fatal("Turn did not return after its ctx ended")
		return 0, nil
	}
}

// waitCancel waits for an agent.chat.cancel to reach the fake.
func (h *harness) waitCancel() {
	h.t.Helper()
	testkit.WaitFor(h.t, 10*time.Second, "agent.chat.cancel at the sidecar", func() bool {
		return len(h.requests("agent.chat.cancel")) >= 1
	})
}

// requests are the frames of the given methods the fake sidecars read.
func (h *harness) requests(methods ...string) []steerabletest.Request {
	h.t.Helper()
	rs, err := steerabletest.Requests(h.record, methods...)
	if err != nil {
		h.t.Fatal(err)
	}
	return rs
}

// chats are the agent.chat.stream params the fake sidecars read.
func (h *harness) chats() []steerabletest.ChatParams {
	var out []steerabletest.ChatParams
	for _, r := range h.requests("agent.chat.stream") {
		out = append(out, r.Chat())
	}
	return out
}

// msgs builds an expected messages list: alternating user and assistant
// contents, the last a user's.
func msgs(contents ...string) []steerabletest.Message {
	out := make([]steerabletest.Message, len(contents))
	for i, c := range contents {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out[i] = steerabletest.Message{Role: role, Content: c}
	}
	return out
}

func (h *harness) dropped(reason string) float64 {
	return counterValue(h.metrics.DroppedUpdates.WithLabelValues(reason))
}

func (h *harness) restarts(reason string) float64 {
	return counterValue(h.metrics.Restarts.WithLabelValues(reason))
}
