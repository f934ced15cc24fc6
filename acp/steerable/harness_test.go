package steerable_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agenttest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerable"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerabletest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestMain(m *testing.M) {
	steerabletest.MaybeRunHelper()
	os.Exit(acptest.RunTests(m))
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
	acptest.Driver[acp.AgentHealth, acp.TurnResult]
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
	h := &harness{t: t, logs: acptest.Logs(t), record: filepath.Join(t.TempDir(), "frames")}
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: h.logs})
	h.metrics = acp.NewMetrics(prometheus.NewRegistry())
	path, args, env := steerabletest.Command(s.mode, append([]string{"ZCB_STEERTEST_RECORD=" + h.record}, s.env...)...)
	cfg := s.cfg
	cfg.Command, cfg.Args, cfg.Env = path, args, env
	acptest.Bounds(&cfg.BackoffInitial, &cfg.StopGrace, &cfg.UnavailableGrace, &cfg.InitTimeout)
	if s.scfg.Model == "" && !s.noModel {
		s.scfg.Model = "test-model"
	}
	h.proto = steerable.New(s.scfg)
	cfg.Protocol, cfg.Logger, cfg.Metrics = h.proto, log, h.metrics
	pcfg := s.pcfg
	pcfg.Logger, pcfg.Metrics = log, h.metrics
	h.sup = acp.NewSupervisor(cfg)
	h.pool = acp.NewPool(pcfg, h.sup)
	h.Driver = agenttest.Driver(t, h.sup, h.pool, 90*time.Second)
	h.stop = testkit.RunAll(t, func() int { return h.sup.Health().PID }, h.sup, h.pool)
	return h
}

// waitReplaced waits for a ready sidecar other than pid old.
func (h *harness) waitReplaced(old int) {
	h.t.Helper()
	h.WaitHealth("a new sidecar", func(hh acp.AgentHealth) bool { return hh.PID != old && hh.State == acp.StateReady })
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
