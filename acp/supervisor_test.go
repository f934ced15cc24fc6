package acp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acpclient"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestMain(m *testing.M) {
	acptest.MaybeRunHelper()
	if os.Getenv(miniBridgeEnv) != "" {
		os.Exit(runMiniBridge())
	}
	code := acptest.RunTests(m)
	if examplePath != "" {
		_ = os.RemoveAll(filepath.Dir(examplePath))
	}
	os.Exit(code)
}

// harness runs a supervisor and a pool against a fake child.
type harness struct {
	acptest.Driver[AgentHealth, TurnResult]
	t       *testing.T
	sup     *Supervisor
	pool    *Pool
	metrics *Metrics
	logs    *testkit.LogBuffer
	stop    func() time.Duration // stops both (testkit.RunAll)
}

// fakeChild returns a Config that runs the test binary as a fake ACP
// agent; withACP replaces its ACP settings.
func fakeChild(mode string, env ...string) Config {
	path, args, e := acptest.Command(mode, env...)
	if args == nil {
		args = []string{}
	}
	return Config{Command: path, Args: args, Env: e, Protocol: acpclient.New(acpclient.Config{})}
}

// withACP sets cfg's protocol to ACP with acfg.
func withACP(cfg *Config, acfg acpclient.Config) { cfg.Protocol = acpclient.New(acfg) }

// startHarness runs a supervisor on cfg (ACP when it sets no protocol)
// and a pool on pcfg until the test ends.
func startHarness(t *testing.T, cfg Config, pcfg PoolConfig) *harness {
	t.Helper()
	h := &harness{t: t, logs: acptest.Logs(t)}
	log := hclogFor(h.logs)
	reg := prometheus.NewRegistry()
	h.metrics = NewMetrics(reg)
	cfg.Logger, cfg.Metrics = log, h.metrics
	if cfg.Protocol == nil {
		withACP(&cfg, acpclient.Config{})
	}
	acptest.Bounds(&cfg.BackoffInitial, &cfg.StopGrace, &cfg.UnavailableGrace, &cfg.InitTimeout)
	pcfg.Logger, pcfg.Metrics = log, h.metrics
	h.sup = NewSupervisor(cfg)
	h.pool = NewPool(pcfg, h.sup)
	h.Driver = driver(t, h.pool, 90*time.Second)
	h.Acquire, h.Health = func(ctx context.Context) error { _, err := h.sup.Acquire(ctx); return err }, h.sup.Health
	h.stop = testkit.RunAll(t, func() int { return h.sup.Health().PID }, h.sup, h.pool)
	return h
}

// readyHarness runs a harness on the fake agent in mode and waits for the
// agent to be ready.
func readyHarness(t *testing.T, mode string, env ...string) *harness {
	t.Helper()
	h := startHarness(t, fakeChild(mode, env...), PoolConfig{})
	h.WaitReady()
	return h
}

// promptText is a prompt and the text of the reply it should get.
type promptText struct{ prompt, want string }

// wantTexts runs each prompt in turn on key "k" and checks its reply.
func (h *harness) wantTexts(tts ...promptText) {
	h.t.Helper()
	for _, tt := range tts {
		res, _ := h.MustTurn("k", tt.prompt)
		if res.Text != tt.want {
			h.t.Errorf("%s: text %q, want %q", tt.prompt, res.Text, tt.want)
		}
	}
}

// driver drives turns on p, each bounded by timeout.
func driver(t testing.TB, p *Pool, timeout time.Duration) acptest.Driver[AgentHealth, TurnResult] {
	return acptest.Driver[AgentHealth, TurnResult]{T: t, Timeout: timeout,
		Run: func(ctx context.Context, key, prompt string, onChunk func(string)) (TurnResult, error) {
			return p.Turn(ctx, TurnRequest{Key: key, Prompt: func(int) string { return prompt }, OnChunk: onChunk})
		}}
}

// logged reports whether the agent logged line within testkit.MinWait: the child's
// stderr is read apart from its answers, so a line it wrote before it
// answered can reach the log after the answer.
func (h *harness) logged(line string) bool {
	return testkit.Within(testkit.MinWait, func() bool { return strings.Contains(h.logs.String(), line) })
}

func TestSupervisorRunsEchoAgent(t *testing.T) {
	cfg := fakeChild("echo")
	// Only a hang outlasts a minute: a race-built child on a loaded machine
	// can take longer than the harness's 500 ms to exit at stdin's close.
	cfg.StopGrace = time.Minute
	h := startHarness(t, cfg, PoolConfig{})
	health := h.WaitReady()
	if !health.Running || health.Dialect != "v1" || health.PID <= 0 || health.State != StateReady || health.Restarts != 0 {
		t.Fatalf("health %+v", health)
	}
	res, chunks := h.MustTurn("k", "hello robot")
	if res.Text != "😊 echo: hello robot" || strings.Join(chunks, "") != res.Text || len(chunks) < 2 {
		t.Errorf("text %q chunks %q", res.Text, chunks)
	}
	if v := testutil.ToFloat64(h.metrics.ChildUp); v != 1 {
		t.Errorf("child_up = %v", v)
	}
	if v := testutil.ToFloat64(h.metrics.Dialect.WithLabelValues("v1")); v != 1 {
		t.Errorf("dialect{v1} = %v", v)
	}
	// A clean stop ends at stdin's close; the ladder logs any step past it.
	t.Logf("clean stop took %s", h.stop().Round(time.Millisecond))
	if l := h.logs.String(); strings.Contains(l, "did not exit after stdin closed") {
		t.Error("the agent did not exit when its stdin closed")
	}
	if hh := h.sup.Health(); hh.Running || hh.State != StateStopped {
		t.Errorf("health after stop %+v", hh)
	}
	if !h.logged("acptest: session/close " + res.SessionID) {
		t.Error("the session was not closed before the agent was stopped")
	}
}

func TestSupervisorRestartsAfterCrashMidTurn(t *testing.T) {
	dir := t.TempDir()
	h := startHarness(t, fakeChild("crash-mid-turn", "ZCB_ACPTEST_STATE_DIR="+dir, "ZCB_ACPTEST_CRASHES=1"), PoolConfig{})
	first := h.WaitReady()
	_, _, err := h.Turn("k", "doomed")
	if !errors.Is(err, agentconn.ErrAgentGone) {
		t.Fatalf("turn during crash: err = %v, want agentconn.ErrAgentGone", err)
	}
	crashed := time.Now()
	res, _ := h.MustTurn("k", "after crash")
	t.Logf("crash to next good turn: %s", time.Since(crashed))
	if res.Text != "😊 echo: after crash" || res.TurnIndex != 0 {
		t.Errorf("turn after restart %+v", res)
	}
	now := h.sup.Health()
	if now.PID == first.PID || now.Restarts != 1 {
		t.Errorf("health after restart %+v (first pid %d)", now, first.PID)
	}
	if v := testutil.ToFloat64(h.metrics.Restarts.WithLabelValues("exit")); v != 1 {
		t.Errorf("restarts{exit} = %v", v)
	}
	if !strings.Contains(h.logs.String(), "agent exited") {
		t.Error("crash not logged")
	}
	// An ACP agent's sessions die with it: the conversation is counted lost.
	if v := testutil.ToFloat64(h.metrics.SessionsLost.WithLabelValues(LossAgentRestart)); v != 1 {
		t.Errorf("dotty_agent_sessions_lost_total{reason=agent_restart} = %v", v)
	}
	if ph := h.pool.Health(); ph.SessionsLost != 1 || ph.SessionsResumed+ph.SessionsRecreated != 0 {
		t.Errorf("pool health %+v, want one session lost", ph)
	}
}

func TestSupervisorBackoffGrowsAndResets(t *testing.T) {
	dir := t.TempDir()
	clk := testkit.NewClock()
	cfg := fakeChild("crash-after-init", "ZCB_ACPTEST_STATE_DIR="+dir, "ZCB_ACPTEST_CRASHES=3")
	cfg.BackoffInitial, cfg.UnavailableGrace, cfg.Clock = 200*time.Millisecond, time.Hour, clk
	h := startHarness(t, cfg, PoolConfig{})

	// crash-after-init dies at session/new, so nudge each generation with a turn.
	nudging := make(chan struct{})
	nudged := make(chan struct{})
	defer func() { close(nudging); <-nudged }()
	go func() {
		defer close(nudged)
		for {
			select {
			case <-nudging:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			_, _ = h.pool.Turn(ctx, TurnRequest{Prompt: func(int) string { return "x" }})
			cancel()
		}
	}()
	// backoffs are the waits asked of the clock but the unavailable grace
	// (an hour: never reached, the nudging turns wait out their own ctx).
	backoffs := func() []time.Duration {
		return slices.DeleteFunc(clk.Requested(), func(d time.Duration) bool { return d == time.Hour })
	}
	var delays []time.Duration
	for len(delays) < 3 {
		testkit.WaitFor(t, 10*time.Second, "a pending backoff", func() bool { return len(backoffs()) > len(delays) })
		d := backoffs()[len(delays)]
		delays = append(delays, d)
		clk.Advance(d)
	}
	t.Logf("backoff delays %v (all requested: %v)", delays, clk.Requested())
	for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		lo, hi := time.Duration(float64(want)*0.79), time.Duration(float64(want)*1.21)
		if delays[i] < lo || delays[i] > hi {
			t.Errorf("delay %d = %s, want %s ±20%%", i, delays[i], want)
		}
	}
	// The fourth child is healthy; after a minute of health the backoff resets.
	h.WaitReady()
	clk.Advance(61 * time.Second)
	pid := h.sup.Health().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "backoff after healthy run", func() bool { return len(backoffs()) > len(delays) })
	if d := backoffs()[len(delays)]; d > 240*time.Millisecond {
		t.Errorf("delay after a healthy minute = %s, want a reset to ~200ms", d)
	}
	if v := testutil.ToFloat64(h.metrics.Backoff); v <= 0 {
		t.Errorf("backoff gauge = %v while waiting", v)
	}
	clk.Advance(time.Second)
	h.WaitReady()
}

// A missing binary fails turns at once: the supervisor's clock is fake and
// never advanced, so a turn that waited for the unavailable grace or for a
// restart would never answer.
func TestSupervisorMissingBinary(t *testing.T) {
	h := startHarness(t, Config{Command: filepath.Join(t.TempDir(), "no-such-zeroclaw"), Clock: testkit.NewClock()}, PoolConfig{})
	testkit.WaitFor(t, 5*time.Second, "missing binary reported", func() bool { return h.sup.Health().BinaryMissing })
	_, _, err := h.Turn("k", "hello")
	if !errors.Is(err, ErrBinaryMissing) {
		t.Fatalf("err = %v, want ErrBinaryMissing", err)
	}
	hh := h.sup.Health()
	if hh.Running || !strings.Contains(hh.LastError, "no-such-zeroclaw") {
		t.Errorf("health %+v", hh)
	}
}

func TestSupervisorInitTimeout(t *testing.T) {
	cfg := fakeChild("hang-init")
	cfg.InitTimeout = 300 * time.Millisecond
	h := startHarness(t, cfg, PoolConfig{})
	testkit.WaitFor(t, 10*time.Second, "init failure restart", func() bool {
		return testutil.ToFloat64(h.metrics.Restarts.WithLabelValues("init_failed")) >= 1
	})
	if hh := h.sup.Health(); !strings.Contains(hh.LastError, "initialize") {
		t.Errorf("last error %q does not say initialize failed", hh.LastError)
	}
}

func TestSupervisorExitOneReportsStderr(t *testing.T) {
	h := startHarness(t, fakeChild("exit-1"), PoolConfig{})
	testkit.WaitFor(t, 10*time.Second, "exit reported", func() bool {
		return strings.Contains(h.logs.String(), "config file missing") && strings.Contains(h.logs.String(), "exit status 1")
	})
}

func TestSupervisorStopsChildIgnoringSIGTERM(t *testing.T) {
	cfg := fakeChild("ignore-sigterm")
	cfg.StopGrace = 300 * time.Millisecond
	h := startHarness(t, cfg, PoolConfig{})
	h.WaitReady()
	h.MustTurn("k", "hi")
	// Each step waits its grace, so the stop has a floor; which steps ran
	// is read from the log, not from the time.
	took := h.stop()
	if took < cfg.StopGrace {
		t.Errorf("stop took %s, less than the SIGTERM step's grace %s", took, cfg.StopGrace)
	}
	t.Logf("stop took %s", took.Round(time.Millisecond))
	if !strings.Contains(h.logs.String(), "did not exit after SIGTERM; sending SIGKILL") {
		t.Error("escalation not logged")
	}
}

// The cap is per second of the supervisor's clock, held still here: the
// 5 000 lines all fall in one window, however long the machine takes.
func TestSupervisorStderrFloodIsRateLimited(t *testing.T) {
	cfg := fakeChild("spam-stderr")
	cfg.Clock = testkit.NewClock()
	h := startHarness(t, cfg, PoolConfig{})
	h.WaitReady()
	res, _ := h.MustTurn("k", "still fine")
	if res.Text != "😊 echo: still fine" {
		t.Errorf("text %q", res.Text)
	}
	if !h.logged("panicked") {
		t.Fatal("the panic line (ERROR, never capped) was not logged")
	}
	if n := strings.Count(h.logs.String(), "spam line"); n == 0 || n > 200 {
		t.Errorf("%d stderr lines logged in one second of the clock, want the 200/s cap to hold", n)
	}
	// The summary of what was dropped comes a second (of real time) later.
	if !h.logged("dropped") {
		t.Error("no summary of the dropped lines")
	}
}

func TestSupervisorSurvivesNotificationFlood(t *testing.T) {
	h := readyHarness(t, "flood", "ZCB_ACPTEST_FLOOD=3000")
	res, chunks := h.MustTurn("k", "flood me")
	if len(chunks) != 3000 || res.Text != strings.Repeat("x", 3000) {
		t.Errorf("got %d chunks (%d bytes), want 3000", len(chunks), len(res.Text))
	}
	if hh := h.sup.Health(); hh.Restarts != 0 {
		t.Errorf("the flood restarted the agent: %+v", hh)
	}
}

func TestSupervisorSurvivesOversizeLines(t *testing.T) {
	h := readyHarness(t, "bigline")
	res, _ := h.MustTurn("k", "big")
	if res.Text != "😊 small" {
		t.Errorf("text %q, want the oversize chunk dropped", res.Text)
	}
	if v := testutil.ToFloat64(h.metrics.DroppedUpdates.WithLabelValues("oversize")); v != 1 {
		t.Errorf("dropped{oversize} = %v", v)
	}
	if hh := h.sup.Health(); hh.Restarts != 0 {
		t.Errorf("oversize line restarted the agent: %+v", hh)
	}
}

func TestSupervisorOversizeResultFailsOnlyTheTurn(t *testing.T) {
	h := readyHarness(t, "bigresult")
	_, _, err := h.Turn("k", "big")
	var re *agentconn.RPCError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "too large") {
		t.Fatalf("err = %v, want an RPC error saying too large", err)
	}
	if hh := h.sup.Health(); hh.Restarts != 0 || !hh.Running {
		t.Errorf("health %+v", hh)
	}
}

func TestSupervisorLostSessionRetry(t *testing.T) {
	readyHarness(t, "lost-session").wantTexts(promptText{"hello", "😊 echo: hello"})
}

func TestSupervisorBusySessionRetry(t *testing.T) {
	readyHarness(t, "busy").wantTexts(promptText{"hello", "😊 echo: hello"})
}

func TestSupervisorPermissions(t *testing.T) {
	kid := true
	cfg := fakeChild("perm")
	withACP(&cfg, acpclient.Config{Permissions: &agentconn.Policy{KidMode: func() bool { return kid }}})
	h := startHarness(t, cfg, PoolConfig{})
	h.WaitReady()
	h.wantTexts(
		promptText{"tool:camera.take_photo", "😊 outcome=reject-once"},
		promptText{"tool:shell", "😊 outcome=allow-once"},
		promptText{"ask:which one?", "😊 outcome=cancelled"},
	)
}

func TestSupervisorCancelReleasesHeldPermission(t *testing.T) {
	cfg := fakeChild("perm-hold")
	perm := &blockingPerm{asked: make(chan agentconn.PermissionRequest, 1)}
	withACP(&cfg, acpclient.Config{Permissions: perm})
	h := startHarness(t, cfg, PoolConfig{})
	h.WaitReady()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := h.pool.Turn(ctx, TurnRequest{Key: "k", Prompt: func(int) string { return "tool:shell" }})
		errc <- err
	}()
	select {
	case <-perm.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("permission request never arrived")
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	res, _ := h.MustTurn("k", "tool:shell")
	if res.Text != "😊 outcome=allow-once" || res.TurnIndex != 0 {
		t.Errorf("turn after cancel %+v", res)
	}
}

// ZeroClaw of May 2026 (0.8.0-beta-1) runs a tool to its end whatever the
// cancel: a barge-in during a tool that outlasts the cancel's grace keeps
// the session; the next turn waits for the cancelled result, and once it
// is in, the conversation goes on on the same session. (A turn that gives
// up waiting retires the session: TestPoolCancelDuringToolKeepsSession.)
func TestSupervisorCancelDuringZeroClawMayTool(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "tool-done")
	cfg := fakeChild("zeroclaw-v1", "ZCB_ACPTEST_ZEROCLAW=0.8.0-beta-1", "ZCB_ACPTEST_GATE="+gate)
	cfg.CancelGrace = 100 * time.Millisecond
	h := startHarness(t, cfg, PoolConfig{})
	if health := h.WaitReady(); health.AgentVersion != "0.8.0-beta-1" {
		t.Fatalf("health %+v", health)
	}
	warm, _ := h.MustTurn("k", "hi")
	// Cancelled after the chunk before the tool call.
	if _, err := h.BargeIn("k", "use a tool"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	waited := h.Go(context.Background(), "k", "after")
	testkit.WaitFor(t, 10*time.Second, "the next turn waiting for the tool", func() bool { return h.pool.keyWaiters("k") == 1 })
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	next := acptest.Await(t, waited, time.Minute, "the waiting turn")
	if next.Err != nil || next.Res.SessionID != warm.SessionID || next.Res.TurnIndex != 1 || next.Res.Text != acptest.Echo("after") {
		t.Errorf("turn after the tool %+v (%v): want session %s kept at turn index 1", next.Res, next.Err, warm.SessionID)
	}
	logs := h.logs.String()
	if strings.Contains(logs, "acptest: session/") || strings.Contains(logs, "retiring the session") {
		t.Errorf("the session was not kept:\n%s", logs)
	}
}

func TestSupervisorZeroClawStandIn(t *testing.T) {
	cfg := fakeChild("zeroclaw-v1", "ZCB_ACPTEST_CONTENT=override", "ZCB_ACPTEST_REQUIRE_ALIAS=dotty")
	withACP(&cfg, acpclient.Config{AgentAlias: "dotty"})
	h := startHarness(t, cfg, PoolConfig{})
	health := h.WaitReady()
	if health.AgentName != "zeroclaw-acp" || health.Dialect != "v1" {
		t.Errorf("health %+v", health)
	}
	res, chunks := h.MustTurn("k", "hi")
	if res.Text != "😊 from content" || len(chunks) == 0 {
		t.Errorf("text %q (chunks %q): result.content must win", res.Text, chunks)
	}
	for i := 0; i < 3; i++ {
		h.MustTurn("k", "more")
	}
	if !strings.Contains(h.logs.String(), "trimmed session history") {
		t.Error("history_trimmed not logged")
	}
	// Barge-in: the cancel marker is never spoken and the session survives.
	if _, err := h.BargeIn("k", "slow story"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	next, _ := h.MustTurn("k", "after")
	if next.SessionID != res.SessionID {
		t.Errorf("session replaced after barge-in")
	}
}

func TestSupervisorRequiresAliasConfigured(t *testing.T) {
	h := readyHarness(t, "zeroclaw-v1", "ZCB_ACPTEST_REQUIRE_ALIAS=dotty")
	_, _, err := h.Turn("k", "hi")
	var re *agentconn.RPCError
	if !errors.As(err, &re) || re.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("err = %v, want -32602", err)
	}
	if !strings.Contains(h.logs.String(), "ZEROCLAW_AGENT_ALIAS") {
		t.Error("configuration error does not name the setting")
	}
}

func TestSupervisorLegacyDialects(t *testing.T) {
	for _, mode := range []string{"legacy-l0", "legacy-l1", "legacy-l2"} {
		t.Run(mode, func(t *testing.T) {
			h := startHarness(t, fakeChild(mode), PoolConfig{})
			health := h.WaitReady()
			if health.Dialect != mode {
				t.Errorf("dialect %q", health.Dialect)
			}
			res, chunks := h.MustTurn("k", "hello legacy")
			if res.Text != "😊 echo: hello legacy" {
				t.Errorf("text %q", res.Text)
			}
			if len(chunks) < 2 {
				t.Errorf("chunks %q: legacy streaming not forwarded", chunks)
			}
			second, _ := h.MustTurn("k", "again")
			if second.SessionID != res.SessionID || second.TurnIndex != 1 {
				t.Errorf("second turn %+v", second)
			}
			// A failed legacy turn deletes its session; the pool recovers.
			if _, _, err := h.Turn("k", "FAIL please"); err == nil {
				t.Error("FAIL prompt succeeded")
			}
			after, _ := h.MustTurn("k", "recovered")
			if after.Text != "😊 echo: recovered" || after.TurnIndex != 0 {
				t.Errorf("after failure %+v", after)
			}
		})
	}
}

// A legacy agent cannot cancel: a barge-in answers the caller while the
// agent's turn goes on (an hour, so it is still running on any machine),
// and the next turn waits InitTimeout (on the pool's clock, which the test
// moves) for it, then recycles the child.
func TestSupervisorLegacyBargeInDetachesThenRecycles(t *testing.T) {
	cfg := fakeChild("legacy-l1", "ZCB_ACPTEST_DELAY=1h")
	clk := testkit.NewClock()
	h := startHarness(t, cfg, PoolConfig{Clock: clk})
	first := h.WaitReady()
	// BargeIn fails the test if the barge-in blocks, waiting for the agent's turn.
	took, err := h.BargeIn("k", "slow story")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v; want the barge-in's context.Canceled", err)
	}
	t.Logf("legacy barge-in answered after %s", took.Round(time.Millisecond))
	// The next turn waits InitTimeout for the detached turn, then the child
	// is recycled: the pool's clock is moved on until the turn is answered.
	type answer struct {
		res TurnResult
		err error
	}
	next := make(chan answer, 1)
	go func() {
		res, _, err := h.Turn("k", "next")
		next <- answer{res, err}
	}()
	var a answer
	for waiting := true; waiting; {
		select {
		case a = <-next:
			waiting = false
		case <-time.After(20 * time.Millisecond):
			clk.Advance(time.Second)
		}
	}
	if a.err != nil {
		t.Fatalf("turn after the detached one: %v", a.err)
	}
	res := a.res
	if res.Text != "😊 echo: next" {
		t.Errorf("text %q", res.Text)
	}
	if hh := h.sup.Health(); hh.PID == first.PID {
		t.Error("wedged legacy child was not recycled")
	}
	if v := testutil.ToFloat64(h.metrics.Restarts.WithLabelValues("recycled")); v != 1 {
		t.Errorf("restarts{recycled} = %v", v)
	}
}

func TestSupervisorRestartOnRequest(t *testing.T) {
	h := startHarness(t, fakeChild("echo"), PoolConfig{})
	h.MustTurn("k", "before")
	first := h.sup.Health()
	if !h.sup.Restart("model changed") {
		t.Fatal("Restart found no ready agent")
	}
	testkit.WaitFor(t, 5*time.Second, "a new child", func() bool {
		hh := h.sup.Health()
		return hh.PID != first.PID && hh.State == StateReady
	})
	if res, _ := h.MustTurn("k", "after"); res.Text != "😊 echo: after" || res.TurnIndex != 0 {
		t.Errorf("turn after the restart: %+v", res)
	}
	if v := testutil.ToFloat64(h.metrics.Restarts.WithLabelValues("recycled")); v != 1 {
		t.Errorf("restarts{recycled} = %v", v)
	}
	if v := testutil.ToFloat64(h.metrics.SessionsLost.WithLabelValues(LossAgentRestart)); v != 1 {
		t.Errorf("dotty_agent_sessions_lost_total{reason=agent_restart} = %v", v)
	}
}

// A restart asked while the agent is still initialising (/admin/model just
// after start): the starting child may have read the old config, so it is
// replaced as soon as its handshake succeeds, before any turn uses it.
func TestRestartWhileStarting(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "init")
	h := startHarness(t, fakeChild("echo", "ZCB_ACPTEST_INIT_GATE="+gate), PoolConfig{})
	testkit.WaitFor(t, 10*time.Second, "the first child started", func() bool { return h.sup.Health().PID > 0 })
	first := h.sup.Health()
	if first.State != StateStarting {
		t.Fatalf("health %+v, want starting", first)
	}
	if !h.sup.Restart("model changed to x") {
		t.Fatal("Restart found no agent to restart while one was starting")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ready := h.WaitReady()
	if ready.PID == first.PID {
		t.Errorf("the child started before the restart (pid %d) is the one serving", ready.PID)
	}
	if v := testutil.ToFloat64(h.metrics.Restarts.WithLabelValues("recycled")); v != 1 {
		t.Errorf("restarts{recycled} = %v, want 1", v)
	}
	if res, _ := h.MustTurn("k", "hi"); res.Text != acptest.Echo("hi") {
		t.Errorf("text %q", res.Text)
	}
	if !strings.Contains(h.logs.String(), "restarting the agent as asked while it was starting") {
		t.Error("the deferred restart was not logged")
	}
}
