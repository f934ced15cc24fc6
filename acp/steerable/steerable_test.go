package steerable_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerable"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerabletest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func counterValue(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

// The sidecar is ready by whichever signal comes first; each alone is
// enough (--quiet-ready sends only the notification).
func TestReadySignals(t *testing.T) {
	for _, mode := range []string{"sidecar", "quiet-ready", "marker-only"} {
		t.Run(mode, func(t *testing.T) {
			h := start(t, setup{mode: mode})
			health := h.WaitReady()
			if health.Dialect != "steerable" || health.AgentVersion != "0.1.0-test" || health.ProtocolVersion != "0.1.0" ||
				health.State != acp.StateReady || !health.Running || health.Restarts != 0 {
				t.Errorf("health %+v", health)
			}
			// The gauge is set just after the connection is published.
			testkit.WaitFor(t, 5*time.Second, "dotty_acp_dialect{steerable} = 1", func() bool {
				return counterValue(h.metrics.Dialect.WithLabelValues("steerable")) == 1
			})
			if res, _ := h.MustTurn("k", "hello"); res.Text != steerabletest.Echo("hello") {
				t.Errorf("text %q", res.Text)
			}
		})
	}
}

// A sidecar that never says it is ready is restarted after InitTimeout;
// nothing is sent to it meanwhile.
func TestNeverReadyIsRestarted(t *testing.T) {
	h := start(t, setup{mode: "never-ready", cfg: acp.Config{InitTimeout: 300 * time.Millisecond}})
	testkit.WaitFor(t, 10*time.Second, "an init failure", func() bool { return h.restarts("init_failed") >= 1 })
	if hh := h.sup.Health(); !strings.Contains(hh.LastError, "ready signal") {
		t.Errorf("last error %q does not name the ready signal", hh.LastError)
	}
	if rs := h.requests(); len(rs) != 0 {
		t.Errorf("frames sent before ready: %+v", rs)
	}
}

// A slow start within InitTimeout is waited for.
func TestSlowReadyWithinInitTimeout(t *testing.T) {
	h := start(t, setup{mode: "slow-ready", env: []string{"ZCB_STEERTEST_DELAY=400ms"}})
	if res, _ := h.MustTurn("k", "eventually"); res.Text != steerabletest.Echo("eventually") {
		t.Errorf("text %q", res.Text)
	}
	if n := h.sup.Health().Restarts; n != 0 {
		t.Errorf("%d restarts", n)
	}
}

// A full turn: the session is created for the key's chat, the chunks
// arrive in order, the LLM parameters go with agent.chat.stream (no
// session id: the sidecar reads none), and the history follows on the next
// turn of the session.
func TestTurnStreamsInOrderWithHistory(t *testing.T) {
	temp := 0.3
	h := start(t, setup{mode: "sidecar", scfg: steerable.Config{Provider: "openai_compat", Model: "gpt-test",
		BaseURL: "http://llm.local/v1", APIKey: "sk-test-secret", Temperature: &temp}})
	res, chunks := h.MustTurn("k", "hello robot")
	want := steerabletest.Echo("hello robot")
	if res.Text != want || strings.Join(chunks, "") != want || len(chunks) != 3 {
		t.Fatalf("text %q chunks %q, want %q in 3 chunks", res.Text, chunks, want)
	}
	if res.StopReason != "end_turn" || res.TurnIndex != 0 || res.Phases.Reused {
		t.Errorf("result %+v", res)
	}
	second, _ := h.MustTurn("k", "and again")
	if second.SessionID != res.SessionID || second.TurnIndex != 1 || !second.Phases.Reused {
		t.Errorf("second turn %+v", second)
	}
	chats := h.chats()
	if len(chats) != 2 {
		t.Fatalf("%d chats", len(chats))
	}
	c := chats[0]
	if c.Provider != "openai_compat" || c.Model != "gpt-test" ||
		c.BaseURL != "http://llm.local/v1" || c.APIKey != "sk-test-secret" || c.Temperature == nil || *c.Temperature != 0.3 {
		t.Errorf("chat params %+v", c)
	}
	if d := cmp.Diff(chats[0].Messages, msgs("hello robot")); d != "" {
		t.Errorf("first messages (-got +want):\n%s", d)
	}
	if d := cmp.Diff(chats[1].Messages, msgs("hello robot", want, "and again")); d != "" {
		t.Errorf("second messages (-got +want):\n%s", d)
	}
	for _, r := range h.requests("agent.chat.stream") {
		if _, ok := r.Fields()["sessionId"]; ok {
			t.Errorf("agent.chat.stream carries a sessionId: %s", r.Params)
		}
	}
	creates := h.requests("agent.session.create")
	if len(creates) != 1 || string(creates[0].Fields()["chatId"]) != `"`+steerable.ChatID("k")+`"` {
		t.Errorf("sessions created %+v, want one for chat %s", creates, steerable.ChatID("k"))
	}
	if strings.Contains(h.logs.String(), "sk-test-secret") {
		t.Error("the API key reached the log")
	}
}

// system.ping fills /health's agent details in the background.
func TestHealthFromPing(t *testing.T) {
	h := start(t, setup{mode: "quiet-ready", scfg: steerable.Config{PingInterval: 50 * time.Millisecond, PingTimeout: 40 * time.Millisecond}})
	h.WaitReady()
	testkit.WaitFor(t, 5*time.Second, "ping details", func() bool {
		hh := h.sup.Health()
		return hh.LoadedTools != nil && hh.AgentUptimeSeconds > 0
	})
	hh := h.sup.Health()
	if *hh.LoadedTools != 0 || len(hh.LoadedProviders) != 0 || hh.AgentStatus != "ok" ||
		hh.ProtocolVersion != "0.1.0" || hh.AgentVersion != "0.1.0-test" {
		t.Errorf("health %+v", hh)
	}
	testkit.WaitFor(t, 5*time.Second, "repeated pings", func() bool { return len(h.requests("system.ping")) >= 3 })
}

// Barge-in: agent.chat.cancel goes out at once, Turn returns at once, the
// session survives with the interrupted exchange in its history, and the
// cancelled turn does not count. The pool's clock is fake and never
// advanced: its re-send of the cancel and its grace for the confirmation
// never come, so a cancel that reaches the sidecar was sent at once, and a
// Turn that returns did not wait for the grace.
func TestCancelOnBargeIn(t *testing.T) {
	h := start(t, setup{mode: "sidecar", cfg: acp.Config{CancelGrace: 4 * time.Second},
		pcfg: acp.PoolConfig{Clock: clockwork.NewFakeClock()}})
	warm, _ := h.MustTurn("k", "warm up")
	took, err := h.BargeIn("k", "tell me a slow story")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	t.Logf("Turn returned %s after the barge-in", took.Round(time.Millisecond))
	cancelled := time.Now()
	h.waitCancel()
	t.Logf("cancel reached the sidecar %s after Turn returned", time.Since(cancelled).Round(time.Millisecond))
	next, _ := h.MustTurn("k", "what now")
	if next.SessionID != warm.SessionID || next.TurnIndex != 1 || next.Text != steerabletest.Echo("what now") {
		t.Errorf("turn after barge-in %+v", next)
	}
	chats := h.chats()
	last := chats[len(chats)-1].Messages
	if len(last) != 5 || last[2].Content != "tell me a slow story" || !strings.HasPrefix(last[3].Content, "tick ") ||
		!strings.HasSuffix(last[3].Content, "…") || last[4].Content != "what now" {
		t.Errorf("messages after barge-in %+v", last)
	}
}

// Two conversations run at once, each on its own sidecar session.
func TestTwoSessionsAtOnce(t *testing.T) {
	h := start(t, setup{mode: "sidecar"})
	h.WaitReady()
	type out struct {
		res acp.TurnResult
		err error
	}
	results := make(chan out, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan string, 100)
	for _, key := range []string{"robot-a", "robot-b"} {
		go func() {
			res, err := h.pool.Turn(ctx, acp.TurnRequest{Key: key, Prompt: func(int) string { return "slow " + key },
				OnChunk: func(string) {
					select {
					case started <- key:
					default:
					}
				}})
			results <- out{res, err}
		}()
	}
	seen := map[string]bool{}
	testkit.WaitFor(t, 10*time.Second, "both turns streaming", func() bool {
		for {
			select {
			case k := <-started:
				seen[k] = true
			default:
				return len(seen) == 2
			}
		}
	})
	cancel()
	for range 2 {
		select {
		case o := <-results:
			if !errors.Is(o.err, context.Canceled) {
				t.Errorf("err %v", o.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("turn did not return")
		}
	}
	a, _ := h.MustTurn("robot-a", "quick a")
	b, _ := h.MustTurn("robot-b", "quick b")
	if a.SessionID == b.SessionID {
		t.Error("two keys share a session")
	}
	var chatIDs []string
	for _, r := range h.requests("agent.session.create") {
		chatIDs = append(chatIDs, string(r.Fields()["chatId"]))
	}
	slices.Sort(chatIDs)
	want := []string{`"` + steerable.ChatID("robot-a") + `"`, `"` + steerable.ChatID("robot-b") + `"`}
	if d := cmp.Diff(chatIDs, want); d != "" {
		t.Errorf("sessions created for chats (-got +want):\n%s", d)
	}
}

// The pool's rotation rules end a history: a rotated session's first
// turn sends its prompt alone.
func TestHistoryRotation(t *testing.T) {
	tests := []struct {
		name       string
		pcfg       acp.PoolConfig
		gap1, gap2 time.Duration // before the second and the third turn
	}{
		{"turns", acp.PoolConfig{SessionMaxTurns: 2}, 0, 0},
		{"idle", acp.PoolConfig{}, 299 * time.Second, 301 * time.Second},
		{"age", acp.PoolConfig{SessionMaxAge: 100 * time.Second, SessionIdle: time.Hour}, 51 * time.Second, 51 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clockwork.NewFakeClock()
			pcfg := tt.pcfg
			pcfg.Clock = clk
			h := start(t, setup{mode: "sidecar", pcfg: pcfg})
			first, _ := h.MustTurn("k", "one")
			clk.Advance(tt.gap1)
			second, _ := h.MustTurn("k", "two")
			clk.Advance(tt.gap2)
			third, _ := h.MustTurn("k", "three")
			if second.SessionID != first.SessionID || second.TurnIndex != 1 {
				t.Errorf("second turn %+v: want the first session at turn 1", second)
			}
			if third.SessionID == first.SessionID || third.TurnIndex != 0 {
				t.Errorf("third turn %+v: want a new session at turn 0", third)
			}
			chats := h.chats()
			if d := cmp.Diff(chats[1].Messages, msgs("one", steerabletest.Echo("one"), "two")); d != "" {
				t.Errorf("second messages (-got +want):\n%s", d)
			}
			if d := cmp.Diff(chats[2].Messages, msgs("three")); d != "" {
				t.Errorf("messages after rotation (-got +want):\n%s", d)
			}
			testkit.WaitFor(t, 10*time.Second, "the old history dropped", func() bool { return h.proto.Histories() == 1 })
		})
	}
}

// The character cap drops the oldest exchanges first, keeping the
// session's first (the full instructions); the prompt is always sent.
func TestHistoryCharacterCap(t *testing.T) {
	h := start(t, setup{mode: "sidecar", scfg: steerable.Config{HistoryChars: 200}})
	p := func(i int) string { return fmt.Sprintf("prompt number %02d ...", i) } // 20 characters
	for i := 1; i <= 5; i++ {
		h.MustTurn("k", p(i))
	}
	e := steerabletest.Echo
	chats := h.chats()
	// Exchanges are 49 characters: 200 - 20 leaves room for the first and the two newest.
	if d := cmp.Diff(chats[4].Messages, msgs(p(1), e(p(1)), p(3), e(p(3)), p(4), e(p(4)), p(5))); d != "" {
		t.Errorf("fifth messages (-got +want):\n%s", d)
	}
	if d := cmp.Diff(chats[3].Messages, msgs(p(1), e(p(1)), p(2), e(p(2)), p(3), e(p(3)), p(4))); d != "" {
		t.Errorf("fourth messages (-got +want):\n%s", d)
	}
	long := strings.Repeat("é", 250)
	h.MustTurn("k", long)
	chats = h.chats()
	if d := cmp.Diff(chats[5].Messages, msgs(long)); d != "" {
		t.Errorf("a prompt over the cap (-got +want):\n%s", d)
	}
}

// A sidecar restarted between turns still has the session: it is resumed,
// with its history and turn count.
func TestResumeAfterRestart(t *testing.T) {
	for _, how := range []string{"restart", "crash"} {
		t.Run(how, func(t *testing.T) {
			h := start(t, setup{mode: "sidecar", env: []string{"ZCB_STEERTEST_STATE_DIR=" + t.TempDir()}})
			first, _ := h.MustTurn("k", "remember me")
			old := h.sup.Health().PID
			if how == "restart" {
				if !h.sup.Restart("test") {
					t.Fatal("nothing to restart")
				}
			} else if err := syscallKill(old); err != nil {
				t.Fatal(err)
			}
			h.waitReplaced(old)
			second, _ := h.MustTurn("k", "still there?")
			if second.SessionID != first.SessionID || second.TurnIndex != 1 || second.Phases.Reused {
				t.Errorf("turn after restart %+v, want session %s reopened at turn 1", second, first.SessionID)
			}
			resumes := h.requests("agent.session.resume")
			if len(resumes) != 1 || !strings.Contains(string(resumes[0].Params), first.SessionID) {
				t.Errorf("resumes %+v", resumes)
			}
			if n := len(h.requests("agent.session.create")); n != 1 {
				t.Errorf("%d sessions created", n)
			}
			if hh := h.pool.Health(); hh.SessionsResumed != 1 || hh.SessionsRecreated != 0 || hh.SessionsLost != 0 {
				t.Errorf("pool health %+v, want one session resumed", hh)
			}
			chats := h.chats()
			if d := cmp.Diff(chats[1].Messages, msgs("remember me", steerabletest.Echo("remember me"), "still there?")); d != "" {
				t.Errorf("messages after restart (-got +want):\n%s", d)
			}
		})
	}
}

// A sidecar that forgot its sessions gets a new one; the bridge's history
// carries the conversation over.
func TestCreateWhenSidecarForgot(t *testing.T) {
	h := start(t, setup{mode: "sidecar"})
	first, _ := h.MustTurn("k", "remember me")
	old := h.sup.Health().PID
	h.sup.Restart("test")
	h.waitReplaced(old)
	second, _ := h.MustTurn("k", "still there?")
	if second.SessionID == first.SessionID || second.TurnIndex != 1 {
		t.Errorf("turn after restart %+v, want a new session at turn 1", second)
	}
	var calls []string
	for _, r := range h.requests("agent.session.create", "agent.session.resume") {
		calls = append(calls, r.Method+" "+string(r.Params))
	}
	chat := `{"chatId":"` + steerable.ChatID("k") + `"}`
	want := []string{"agent.session.create " + chat, `agent.session.resume {"sessionId":"` + first.SessionID + `"}`, "agent.session.create " + chat}
	if d := cmp.Diff(calls, want); d != "" {
		t.Errorf("session calls (-got +want):\n%s", d)
	}
	if hh := h.pool.Health(); hh.SessionsRecreated != 1 || hh.SessionsResumed != 0 || hh.SessionsLost != 0 {
		t.Errorf("pool health %+v, want one session recreated", hh)
	}
	if v := counterValue(h.metrics.SessionsRestored.WithLabelValues("recreated")); v != 1 {
		t.Errorf("dotty_agent_sessions_restored_total{how=recreated} = %v", v)
	}
	chats := h.chats()
	if d := cmp.Diff(chats[1].Messages, msgs("remember me", steerabletest.Echo("remember me"), "still there?")); d != "" {
		t.Errorf("messages after restart (-got +want):\n%s", d)
	}
}

// The sidecar's failure classes become kinds: an error answer by its kind
// and code (as its server passes them: -32021 budget_exhausted, -32020
// policy_denied, -32030 tool_failed, -32011 storage), a stream.error by the
// exception class it names; the next turn starts afresh.
func TestErrorCodesBecomeKinds(t *testing.T) {
	tests := []struct {
		mode, env, kind string
		code            int
	}{
		{"error", "ZCB_STEERTEST_CODE=-32021", agentconn.KindBudgetExhausted, -32021},
		{"error", "ZCB_STEERTEST_CODE=-32020", agentconn.KindPolicyDenied, -32020},
		{"error", "ZCB_STEERTEST_CODE=-32030", agentconn.KindToolDispatch, -32030},
		{"error", "ZCB_STEERTEST_CODE=-32011", agentconn.KindStorage, -32011},
		{"stream-error", "ZCB_STEERTEST_KIND=BudgetExhaustedError", agentconn.KindBudgetExhausted, 0},
		{"stream-error", "ZCB_STEERTEST_KIND=PolicyDeniedError", agentconn.KindPolicyDenied, 0},
		{"stream-error", "ZCB_STEERTEST_KIND=ToolDispatchError", agentconn.KindToolDispatch, 0},
		{"stream-error", "ZCB_STEERTEST_KIND=StorageError", agentconn.KindStorage, 0},
		{"stream-error", "ZCB_STEERTEST_KIND=ConnectError", agentconn.KindTransport, 0},
		{"stream-error", "ZCB_STEERTEST_KIND=HTTPStatusError", agentconn.KindTransport, 0},
		{"stream-error", "ZCB_STEERTEST_KIND=APITimeoutError", agentconn.KindTransport, 0},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.env, func(t *testing.T) {
			h := start(t, setup{mode: tt.mode, env: []string{tt.env}})
			_, _, err := h.Turn("k", "hi")
			var ae *agentconn.AgentError
			if !errors.As(err, &ae) || ae.Kind != tt.kind || ae.Code != tt.code {
				t.Fatalf("err = %v, want an AgentError of kind %s, code %d", err, tt.kind, tt.code)
			}
			if errors.Is(err, agentconn.ErrSessionLimit) || errors.Is(err, agentconn.ErrSessionBusy) || errors.Is(err, agentconn.ErrSessionNotFound) {
				t.Errorf("%v matches an ACP sentinel", err)
			}
			if n := len(h.chats()); n != 1 {
				t.Errorf("%d chats sent, want no retry", n)
			}
			if _, _, err := h.Turn("k", "again"); !errors.As(err, &ae) {
				t.Errorf("second turn: %v", err)
			}
			if n := len(h.requests("agent.session.create")); n != 2 {
				t.Errorf("%d sessions created, want a fresh one after the failure", n)
			}
		})
	}
	t.Run("unknown stream error kind", func(t *testing.T) {
		h := start(t, setup{mode: "stream-error", env: []string{"ZCB_STEERTEST_KIND=ValueError"}})
		_, _, err := h.Turn("k", "hi")
		var ae *agentconn.AgentError
		if !errors.As(err, &ae) || ae.Kind != "" || ae.Class != "ValueError" {
			t.Fatalf("err = %v, want an unclassified AgentError", err)
		}
	})
	// The codes of the sidecar's published catalogue, which it never
	// raises, are plain RPC errors; -32004 is its "session not found".
	t.Run("catalogue code", func(t *testing.T) {
		h := start(t, setup{mode: "error", env: []string{"ZCB_STEERTEST_CODE=-32004"}})
		_, _, err := h.Turn("k", "hi")
		var re *agentconn.RPCError
		var ae *agentconn.AgentError
		if !errors.As(err, &re) || re.Code != -32004 || errors.As(err, &ae) {
			t.Fatalf("err = %v, want an RPCError -32004", err)
		}
	})
}

// A sidecar that hangs: the turn fails by the bridge's own bounds (its
// caller sets none), and the missed pings restart the sidecar.
func TestHangIsBoundedAndRestarted(t *testing.T) {
	// InitTimeout bounds the session the hung sidecar never creates, and
	// each new sidecar's ready signal, which failed at 500 ms on a loaded
	// machine.
	h := start(t, setup{mode: "hang", cfg: acp.Config{InitTimeout: 3 * time.Second},
		scfg: steerable.Config{PingInterval: 100 * time.Millisecond, PingTimeout: 80 * time.Millisecond, PingMisses: 2}})
	h.WaitReady()
	begin := time.Now()
	errc := make(chan error, 1)
	go func() {
		_, err := h.pool.Turn(context.Background(), acp.TurnRequest{Key: "k", Prompt: func(int) string { return "hello?" }})
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("turn on a hung sidecar succeeded")
		}
		t.Logf("turn on a hung sidecar failed after %s: %v", time.Since(begin).Round(time.Millisecond), err)
	case <-time.After(time.Minute):
		t.Fatal("turn on a hung sidecar did not end: nothing bounds it")
	}
	testkit.WaitFor(t, 10*time.Second, "the hung sidecar restarted", func() bool { return h.restarts("recycled") >= 1 })
	if !strings.Contains(h.logs.String(), "did not answer 2 pings") {
		t.Error("restart reason not logged")
	}
}

// A stream that stalls: the turn ends at its deadline, the cancel is not
// confirmed, the session is retired and the next turn gets a new one.
func TestStalledStreamIsBounded(t *testing.T) {
	h := start(t, setup{mode: "stall-stream", cfg: acp.Config{CancelGrace: 300 * time.Millisecond}})
	h.WaitReady()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := h.pool.Turn(ctx, acp.TurnRequest{Key: "k", Prompt: func(int) string { return "hi" }})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("turn = %+v, %v", res, err)
	}
	testkit.WaitFor(t, 5*time.Second, "the session retired", func() bool {
		return strings.Contains(h.logs.String(), "did not confirm the cancel in time")
	})
	if n := len(h.requests("agent.chat.cancel")); n < 2 {
		t.Errorf("%d cancels, want the re-send too", n)
	}
	testkit.WaitFor(t, 10*time.Second, "the retired session's history dropped", func() bool { return h.proto.Histories() == 0 })
}

// A sidecar dying mid-stream fails the turn at once; it is restarted with
// backoff and the next turn goes on (the conversation, empty here, is
// kept: see TestConversationSurvivesKill).
func TestCrashMidStream(t *testing.T) {
	h := start(t, setup{mode: "crash-mid-stream", env: []string{"ZCB_STEERTEST_STATE_DIR=" + t.TempDir(), "ZCB_STEERTEST_CRASHES=1"}})
	h.WaitReady()
	_, _, err := h.Turn("k", "doomed")
	if !errors.Is(err, agentconn.ErrAgentGone) {
		t.Fatalf("err = %v, want ErrAgentGone", err)
	}
	res, _ := h.MustTurn("k", "after the crash")
	if res.Text != steerabletest.Echo("after the crash") || res.TurnIndex != 0 {
		t.Errorf("turn after crash %+v", res)
	}
	if v := h.restarts("exit"); v != 1 {
		t.Errorf("restarts{exit} = %v", v)
	}
	if d := cmp.Diff(h.chats()[1].Messages, msgs("after the crash")); d != "" {
		t.Errorf("messages after the crash (-got +want):\n%s", d)
	}
}

// A conversation survives a kill -9 of its sidecar between turns, in the
// middle of a turn and while a barge-in's cancel is being settled: the
// restarted sidecar has forgotten its sessions, so the key's next turn
// creates one for the same chat and is sent with the exchanges kept
// before (the turn that died is not one of them). /health and the metrics
// count one session recreated, none lost.
func TestConversationSurvivesKill(t *testing.T) {
	for _, when := range []string{"between turns", "mid-turn", "during a cancel"} {
		t.Run(when, func(t *testing.T) {
			s := setup{mode: "sidecar"}
			if when == "during a cancel" {
				// The cancel is never answered nor honoured: the barge-in's
				// settlement waits for the stream while the sidecar dies.
				s = setup{mode: "hang", env: []string{"ZCB_STEERTEST_HANG=agent.chat.cancel"}, cfg: acp.Config{CancelGrace: time.Minute}}
			}
			h := start(t, s)
			first, _ := h.MustTurn("k", "remember the number 7")
			old := h.sup.Health().PID
			kill := func() {
				if err := syscallKill(old); err != nil {
					t.Fatal(err)
				}
			}
			switch when {
			case "between turns":
				kill()
			case "mid-turn":
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var once sync.Once
				_, err := h.pool.Turn(ctx, acp.TurnRequest{Key: "k", Prompt: func(int) string { return "tell me a slow story" },
					OnChunk: func(string) { once.Do(kill) }})
				if !errors.Is(err, agentconn.ErrAgentGone) {
					t.Fatalf("turn killed mid-stream: %v, want ErrAgentGone", err)
				}
			case "during a cancel":
				if _, err := h.BargeIn("k", "tell me a slow story"); !errors.Is(err, context.Canceled) {
					t.Fatalf("barge-in: %v", err)
				}
				h.waitCancel()
				kill()
			}
			h.waitReplaced(old)
			res, _ := h.MustTurn("k", "what was the number?")
			if res.SessionID == first.SessionID || res.TurnIndex != 1 {
				t.Errorf("turn after the kill %+v, want a new session at turn 1", res)
			}
			chats := h.chats()
			want := msgs("remember the number 7", steerabletest.Echo("remember the number 7"), "what was the number?")
			if d := cmp.Diff(chats[len(chats)-1].Messages, want); d != "" {
				t.Errorf("messages after the kill (-got +want):\n%s", d)
			}
			creates := h.requests("agent.session.create")
			if len(creates) != 2 || string(creates[0].Params) != string(creates[1].Params) {
				t.Errorf("sessions created %+v, want two for the same chat", creates)
			}
			if hh := h.pool.Health(); hh.SessionsRecreated != 1 || hh.SessionsResumed != 0 || hh.SessionsLost != 0 {
				t.Errorf("pool health %+v, want one session recreated", hh)
			}
			if v := counterValue(h.metrics.SessionsRestored.WithLabelValues(acp.RestoreRecreated)); v != 1 {
				t.Errorf("dotty_agent_sessions_restored_total{how=recreated} = %v", v)
			}
		})
	}
}

// A chunk flood: the reader keeps reading, the turn's text stays within
// the reply cap, a slow consumer's mailbox within its bound, and the
// excess is counted.
func TestChunkFlood(t *testing.T) {
	h := start(t, setup{mode: "flood", env: []string{"ZCB_STEERTEST_FLOOD=20000", "ZCB_STEERTEST_FLOOD_BYTES=100"}})
	h.WaitReady()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := true
	res, err := h.pool.Turn(ctx, acp.TurnRequest{Key: "k", Prompt: func(int) string { return "flood me" },
		OnChunk: func(string) {
			if first { // a consumer that falls behind: the mailbox fills
				first = false
				time.Sleep(300 * time.Millisecond)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Text); n > steerable.DefaultMaxReply || n < 1000 {
		t.Errorf("turn text of %d bytes, want at most the reply cap", n)
	}
	if got := h.dropped("reply_cap") + h.dropped("mailbox_full"); got == 0 {
		t.Error("no dropped chunks counted")
	}
	if hh := h.sup.Health(); hh.Restarts != 0 {
		t.Errorf("the flood restarted the sidecar: %+v", hh)
	}
	if res, _ := h.MustTurn("k2", "flood again"); len(res.Text) > steerable.DefaultMaxReply {
		t.Errorf("second flood: %d bytes", len(res.Text))
	}
}

// Notifications for streams nobody runs are dropped and counted; the
// turn's text is only its own.
func TestUnknownStreamsDropped(t *testing.T) {
	h := start(t, setup{mode: "unknown-streams"})
	res, chunks := h.MustTurn("k", "mine")
	if res.Text != steerabletest.Echo("mine") || len(chunks) != 3 {
		t.Errorf("text %q chunks %q", res.Text, chunks)
	}
	// Two ghost notifications before each of 3 chunks, and one late chunk.
	testkit.WaitFor(t, 5*time.Second, "7 drops counted", func() bool { return h.dropped("unknown_stream") == 7 })
}

// Chunks written before agent.chat.stream's answer are not lost.
func TestChunkBeforeAnswerIsDelivered(t *testing.T) {
	h := start(t, setup{mode: "early-chunk"})
	res, chunks := h.MustTurn("k", "early bird")
	if res.Text != steerabletest.Echo("early bird") || len(chunks) != 3 {
		t.Errorf("text %q chunks %q", res.Text, chunks)
	}
	if v := h.dropped("unknown_stream"); v != 0 {
		t.Errorf("%v dropped", v)
	}
}

// Lines on stdout that are not frames are logged, not fatal.
func TestStdoutNoiseIsLogged(t *testing.T) {
	h := start(t, setup{mode: "sidecar", env: []string{"ZCB_STEERTEST_NOISE=1"}})
	if res, _ := h.MustTurn("k", "hi"); res.Text != steerabletest.Echo("hi") {
		t.Errorf("text %q", res.Text)
	}
	testkit.WaitFor(t, 5*time.Second, "the noise logged", func() bool {
		return strings.Contains(h.logs.String(), "agent stdout: INFO steerable_sidecar booting")
	})
}

// The stop ladder: system.shutdown; if ignored, stdin closed and SIGTERM;
// if that is ignored too, SIGKILL.
func TestShutdownLadder(t *testing.T) {
	// A step the fake obeys must not run out of its grace on a loaded
	// machine (300 ms did): the sidecar's grace is one only a hang
	// reaches, the SIGTERM step's one a loaded machine meets; the steps a
	// fake ignores wait their grace in full, so there it is short.
	const short, long = 300 * time.Millisecond, 5 * time.Second
	tests := []struct {
		mode      string
		grace     time.Duration
		min       time.Duration
		want, not []string
	}{
		{"sidecar", time.Minute, 0, []string{"steertest: shutdown"}, []string{"did not exit after system.shutdown", "steertest: SIGTERM"}},
		{"ignore-shutdown", long, long, []string{"steertest: shutdown", "did not exit after system.shutdown", "steertest: SIGTERM"},
			[]string{"sending SIGKILL"}},
		{"ignore-sigterm", short, 2 * short, []string{"steertest: shutdown", "did not exit after system.shutdown", "did not exit after SIGTERM; sending SIGKILL"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			h := start(t, setup{mode: tt.mode, cfg: acp.Config{StopGrace: tt.grace}})
			h.MustTurn("k", "hi")
			// Each step waits its grace, so took has a floor; how far
			// above it the stop ends depends on the machine, and which
			// steps ran is read from the log below.
			took := h.stop()
			if took < tt.min {
				t.Errorf("stop took %s, want at least %s", took, tt.min)
			}
			t.Logf("stop took %s (its steps' graces: %s)", took.Round(time.Millisecond), tt.min)
			logs := h.logs.String()
			for _, w := range tt.want {
				if !strings.Contains(logs, w) {
					t.Errorf("log lacks %q", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(logs, n) {
					t.Errorf("log has %q", n)
				}
			}
		})
	}
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
