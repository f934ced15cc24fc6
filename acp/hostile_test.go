package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acpclient"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/reexec"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// A caller who leaves while its session is being created leaks nothing:
// the agent's sessions are all either still recorded by the pool or closed.
func TestCallerLeavingDuringSessionCreation(t *testing.T) {
	h := readyHarness(t, "slow-new", "ZCB_ACPTEST_DELAY=300ms")
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := h.pool.Turn(ctx, TurnRequest{Key: fmt.Sprint("impatient-", i), Prompt: func(int) string { return "hi" }})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("impatient turn %d: %v, want DeadlineExceeded", i, err)
		}
	}
	accounted := func() (created, closed, live int) {
		l := h.logs.String()
		return strings.Count(l, "acptest: session/new "), strings.Count(l, "acptest: session/close "), h.pool.Health().Sessions
	}
	testkit.WaitFor(t, 10*time.Second, "three sessions created and accounted for", func() bool {
		created, closed, live := accounted()
		return created == 3 && closed+live == created
	})
	// The key that left keeps its session: its next turn uses it.
	res, _ := h.MustTurn("impatient-0", "again")
	if created, _, _ := accounted(); created != 3 || res.TurnIndex != 0 {
		t.Errorf("next turn created a session (%d created) or index %d", created, res.TurnIndex)
	}
	h.stop()
	created, closed, _ := accounted()
	if created != closed {
		t.Errorf("after stop: %d sessions created, %d closed", created, closed)
	}
}

// An agent that exits at once: a turn answers ErrAgentUnavailable once
// the grace has passed, and the next one at once. The supervisor's clock is
// fake: the first turn can only answer when the test moves the clock past
// the grace, and the second answers with the clock untouched (waiting for
// a grace again, it would never answer), so nothing depends on timing.
func TestBrokenAgentFailsFast(t *testing.T) {
	const grace = 500 * time.Millisecond
	clk := testkit.NewClock()
	cfg := fakeChild("exit-1")
	cfg.UnavailableGrace, cfg.Clock = grace, clk
	h := startHarness(t, cfg, PoolConfig{})
	testkit.WaitFor(t, 10*time.Second, "the agent to fail", func() bool {
		return testutil.ToFloat64(h.metrics.Restarts.WithLabelValues("init_failed"))+
			testutil.ToFloat64(h.metrics.Restarts.WithLabelValues("exit")) >= 1
	})
	failsFastAfterGrace(t, h, clk, grace)
	if hh := h.sup.Health(); hh.State == StateReady {
		t.Errorf("state %q", hh.State)
	}
}

// failsFastAfterGrace checks that a turn on h's unavailable agent waits
// out the unavailable grace on clk (it has not answered when the grace is
// requested: only moving clk past grace lets it) and then answers
// ErrAgentUnavailable, and that the next turn answers it at once.
func failsFastAfterGrace(t *testing.T, h *harness, clk *testkit.Clock, grace time.Duration) {
	t.Helper()
	first := h.Go(context.Background(), "k0", "hi")
	testkit.WaitFor(t, 10*time.Second, "a turn waiting out the grace", func() bool {
		return slices.Contains(clk.Requested(), grace)
	})
	select {
	case o := <-first:
		t.Fatalf("turn answered before its grace passed: %v", o.Err)
	default:
	}
	clk.Advance(grace)
	if o := acptest.Await(t, first, 30*time.Second, "the first turn's answer once its grace had passed"); !errors.Is(o.Err, ErrAgentUnavailable) {
		t.Fatalf("first turn: %v, want ErrAgentUnavailable", o.Err)
	}
	if _, _, err := h.Turn("k1", "hi"); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("second turn: %v, want ErrAgentUnavailable at once", err)
	}
}

// A recovered agent serves again: the unavailable state ends when it is
// ready. (crash-after-init dies at session/new, so turns drive it.)
func TestAgentUnavailableEndsWhenReady(t *testing.T) {
	dir := t.TempDir()
	cfg := fakeChild("crash-after-init", "ZCB_ACPTEST_STATE_DIR="+dir, "ZCB_ACPTEST_CRASHES=3")
	cfg.UnavailableGrace = time.Millisecond
	cfg.BackoffInitial = 200 * time.Millisecond
	h := startHarness(t, cfg, PoolConfig{})
	unavailable := 0
	testkit.WaitFor(t, 20*time.Second, "a turn that succeeds after the crashes", func() bool {
		_, _, err := h.Turn("k", "hi")
		if errors.Is(err, ErrAgentUnavailable) {
			unavailable++
		}
		return err == nil
	})
	if unavailable == 0 {
		t.Error("no turn failed fast while the agent was down")
	}
}

// Child stderr lines reach the log without escape codes or control
// characters.
func TestChildStderrIsCleaned(t *testing.T) {
	h := readyHarness(t, "ansi-stderr")
	testkit.WaitFor(t, 5*time.Second, "the child's line", func() bool { return strings.Contains(h.logs.String(), "zeroclaw::acp:") })
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if !strings.Contains(line, "zeroclaw::acp:") {
			continue
		}
		if strings.ContainsAny(line, "\x1b\a\r\t") || strings.Contains(line, "[2m") {
			t.Errorf("control characters left in %q", line)
		}
		if !strings.Contains(line, "2026-05-22T10:00:00Z  INFO zeroclaw::acp: ready") {
			t.Errorf("cleaned line lost its text: %q", line)
		}
	}
}

// The normal stop ladder reaches the agent's whole process group.
func TestStopKillsAgentGroup(t *testing.T) {
	h := readyHarness(t, "grandchild")
	re := regexp.MustCompile(`acptest: grandchild (\d+)`)
	var pid int
	testkit.WaitFor(t, 5*time.Second, "the grandchild's pid", func() bool {
		if m := re.FindStringSubmatch(h.logs.String()); m != nil {
			pid, _ = strconv.Atoi(m[1])
		}
		return pid > 0
	})
	h.stop()
	testkit.WaitFor(t, 10*time.Second, "the grandchild to die", func() bool { return reexec.ProcessGone(pid) })
}

const miniBridgeEnv = "ZCB_MINIBRIDGE"

// runMiniBridge is the test binary re-executed as a bridge: it supervises
// an agent that ignores SIGTERM and stdin EOF, prints the agent's pid and
// waits to be killed.
func runMiniBridge() int {
	sup := NewSupervisor(fakeChild("ignore-sigterm"))
	go func() { _ = sup.Run(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := sup.Acquire(ctx); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("agent", sup.Health().PID)
	select {}
}

// A bridge killed with SIGKILL takes its agent with it, even one that
// ignores SIGTERM and stdin EOF.
func TestAgentDiesWithKilledBridge(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bridge := acptest.StartChild(t, self, []string{"-test.run=^$"}, []string{miniBridgeEnv + "=1"}, nil, false)
	l := bridge.Next(20 * time.Second)
	var agent int
	if _, err := fmt.Sscanf(l, "agent %d", &agent); err != nil || agent <= 0 {
		t.Fatalf("mini bridge said %q", l)
	}
	if reexec.ProcessGone(agent) {
		t.Fatal("agent not running before the kill")
	}
	killed := time.Now()
	_ = bridge.Cmd.Process.Signal(syscall.SIGKILL)
	_ = bridge.Wait(time.Minute)
	if !testkit.Within(testkit.MinWait, func() bool { return reexec.ProcessGone(agent) }) {
		_ = syscall.Kill(agent, syscall.SIGKILL)
		t.Fatalf("agent %d still alive %s after its bridge was killed", agent, testkit.MinWait)
	}
	t.Logf("agent gone %v after its bridge was killed", time.Since(killed).Round(time.Millisecond))
}

// A permission request that does not identify its tool (codex-acp's shell
// command: the command line as the title) gets the default decision with
// kid mode off, counted, and logged at WARN once per cause.
func TestUnidentifiedPermissionIsCounted(t *testing.T) {
	cfg := fakeChild("perm")
	withACP(&cfg, acpclient.Config{Permissions: &agentconn.Policy{}})
	h := startHarness(t, cfg, PoolConfig{})
	h.WaitReady()
	for _, prompt := range []string{"cmd:ls -la /tmp", "cmd:cat /etc/hostname"} {
		res, _ := h.MustTurn("k", prompt)
		if res.Text != "😊 outcome=allow-once" {
			t.Errorf("%s: text %q", prompt, res.Text)
		}
	}
	if got := testutil.ToFloat64(h.metrics.PermissionUnidentified.WithLabelValues("allow")); got != 2 {
		t.Errorf("dotty_acp_permission_unnamed_total{decision=allow} = %v, want 2", got)
	}
	if n := strings.Count(h.logs.String(), "[WARN]  test: permission request does not identify its tool"); n != 1 {
		t.Errorf("%d WARN lines for two requests of one cause, want 1:\n%s", n, h.logs.String())
	}
}

// A restart the bridge asked for (a model change) is not an outage: a turn
// arriving while the new child starts waits for it instead of failing fast.
func TestPlannedRestartIsNotAnOutage(t *testing.T) {
	cfg := fakeChild("echo")
	cfg.UnavailableGrace = time.Millisecond
	cfg.BackoffInitial = time.Second // the restart's delay outlasts the grace by far
	h := startHarness(t, cfg, PoolConfig{})
	h.MustTurn("k", "before")
	if !h.sup.Restart("model changed") {
		t.Fatal("Restart found no ready agent")
	}
	testkit.WaitFor(t, 5*time.Second, "the old child's end", func() bool {
		return testutil.ToFloat64(h.metrics.Restarts.WithLabelValues("recycled")) == 1
	})
	if res, _, err := h.Turn("k", "during"); err != nil || res.Text != "😊 echo: during" {
		t.Errorf("turn during the restart: %q, %v", res.Text, err)
	}
}

// Log lines a legacy agent prints on stdout between frames reach our log
// cleaned like its stderr: no escape codes.
func TestChildStdoutNoiseIsCleaned(t *testing.T) {
	h := startHarness(t, fakeChild("legacy-l0"), PoolConfig{})
	h.MustTurn("k", "hi")
	testkit.WaitFor(t, 5*time.Second, "a coloured stdout line", func() bool {
		return strings.Count(h.logs.String(), "agent stdout:") >= 2
	})
	seen := 0
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if !strings.Contains(line, "agent stdout:") {
			continue
		}
		seen++
		if strings.ContainsAny(line, "\x1b\a\r\t") || strings.Contains(line, "[2m") {
			t.Errorf("control characters left in %q", line)
		}
	}
	if !strings.Contains(h.logs.String(), "agent stdout: 2026-05-17T10:00:00Z  INFO zeroclaw::acp:") {
		t.Errorf("no cleaned stdout line among %d", seen)
	}
}

// An agent that answers session/new only after InitTimeout: the turn fails,
// and the session the agent created late is closed instead of staying open
// on the agent unknown to the pool. The agent answers once the turn has
// failed, so the answer is late on any machine; the handshake gets a bound
// a loaded machine meets (it failed at 200 ms, and at 3 s with two CI
// builds and a dozen compilers sharing two cores).
func TestLateSessionIsClosed(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "answer")
	cfg := fakeChild("slow-new", "ZCB_ACPTEST_GATE="+gate)
	cfg.InitTimeout = 10 * time.Second
	h := startHarness(t, cfg, PoolConfig{})
	h.WaitReady()
	if _, _, err := h.Turn("k", "hi"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("turn: %v, want session/new's DeadlineExceeded", err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the late session closed", func() bool {
		l := h.logs.String()
		return strings.Count(l, "acptest: session/new ") == 1 && strings.Count(l, "acptest: session/close ") == 1
	})
	if n := h.pool.Health().Sessions; n != 0 {
		t.Errorf("pool reports %d sessions", n)
	}
}

// An agent whose connection dies while its process lingers (ignoring
// SIGTERM): the unavailable grace counts from the failure, not from the
// end of the stop ladder, and once one turn has failed fast the next
// fails at once even though the old child is still being stopped. The
// supervisor's clock is fake, as in TestBrokenAgentFailsFast; the ladder
// runs on real time and takes at least a StopGrace (3 s) to end.
func TestWedgedAgentFailsFastDuringTeardown(t *testing.T) {
	const grace = 300 * time.Millisecond
	clk := testkit.NewClock()
	cfg := fakeChild("close-stdout")
	cfg.UnavailableGrace, cfg.Clock = grace, clk
	cfg.StopGrace = 3 * time.Second
	h := startHarness(t, cfg, PoolConfig{})
	h.WaitReady()
	failsFastAfterGrace(t, h, clk, grace)
	// Both answered while the ladder was still stopping the old child.
	if strings.Contains(h.logs.String(), "did not exit after SIGTERM") {
		t.Error("the turns waited for the end of the stop ladder")
	}
}

// The stop ladder's SIGTERM reaches the agent's whole process group, not
// only the agent: its helper gets the SIGTERM before any SIGKILL.
func TestStopTermReachesAgentGroup(t *testing.T) {
	// The agent ignores stdin's end, so the polite step waits the whole
	// grace; the SIGTERM step must not run out of it on a loaded machine
	// (the harness's 500 ms did), or the check below would see a SIGKILL.
	cfg := fakeChild("term-grandchild")
	cfg.StopGrace = 5 * time.Second
	h := startHarness(t, cfg, PoolConfig{})
	h.WaitReady()
	testkit.WaitFor(t, 5*time.Second, "the helper's signal handler", func() bool {
		return strings.Contains(h.logs.String(), "acptest: term-logger ready ")
	})
	h.stop()
	if !h.logged("acptest: SIGTERM ") {
		t.Error("the agent's helper never got SIGTERM")
	}
	if strings.Contains(h.logs.String(), "did not exit after SIGTERM") {
		t.Error("the ladder had to SIGKILL an agent that exits on SIGTERM")
	}
}

// A child's secrets never reach the log: ZeroClaw's OTP enrollment URI on
// stdout and a key echoed on stderr are redacted.
func TestChildSecretsRedacted(t *testing.T) {
	h := readyHarness(t, "zeroclaw-v1", "ZCB_ACPTEST_OTP=1")
	h.MustTurn("k", "hi")
	testkit.WaitFor(t, 5*time.Second, "the child's lines logged", func() bool {
		l := h.logs.String()
		return strings.Contains(l, "agent stdout: Enrollment URI: otpauth://[redacted]") && strings.Contains(l, "api_key=[redacted]")
	})
	if l := h.logs.String(); strings.Contains(l, acptest.OTPSecret) || strings.Contains(l, acptest.APIKey) {
		t.Errorf("a secret reached the log:\n%s", l)
	}
}
