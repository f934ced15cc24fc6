package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
)

// killAgent sends SIGKILL to the running agent child and waits for its
// replacement to be ready.
func (h *harness) killAgent() {
	h.t.Helper()
	old := h.WaitReady().PID
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		h.t.Fatal(err)
	}
	h.waitReplaced(old)
}

// waitReplaced waits for a ready child other than pid old.
func (h *harness) waitReplaced(old int) {
	h.t.Helper()
	h.WaitHealth("a new agent child", func(hh AgentHealth) bool { return hh.PID != old && hh.State == StateReady })
}

// restores checks the pool's restore counts on /health and in the metrics.
func (h *harness) restores(resumed, lostRestart, lostResume int) {
	h.t.Helper()
	if ph := h.pool.Health(); ph.SessionsResumed != resumed || ph.SessionsRecreated != 0 || ph.SessionsLost != lostRestart+lostResume {
		h.t.Errorf("pool health %+v, want %d resumed, %d lost", ph, resumed, lostRestart+lostResume)
	}
	for _, c := range []struct {
		name string
		got  float64
		want int
	}{
		{"restored{resumed}", testutil.ToFloat64(h.metrics.SessionsRestored.WithLabelValues(RestoreResumed)), resumed},
		{"restored{recreated}", testutil.ToFloat64(h.metrics.SessionsRestored.WithLabelValues(RestoreRecreated)), 0},
		{"lost{agent_restart}", testutil.ToFloat64(h.metrics.SessionsLost.WithLabelValues(LossAgentRestart)), lostRestart},
		{"lost{resume_failed}", testutil.ToFloat64(h.metrics.SessionsLost.WithLabelValues(LossResumeFailed)), lostResume},
	} {
		if c.got != float64(c.want) {
			h.t.Errorf("dotty_agent_sessions_%s = %v, want %d", c.name, c.got, c.want)
		}
	}
}

// An agent with a session store (ZeroClaw ≥ 0.8.0) keeps a conversation
// across its own restart: after a kill -9 between turns, a restart asked
// for (a model change) and a kill -9 in the middle of a turn, the key's
// next turn resumes the same session (session/resume) at the next turn
// index, and the agent remembers the earlier turns — not the one that
// died.
func TestResumeAcrossAgentRestart(t *testing.T) {
	for _, how := range []string{"kill", "restart", "kill-mid-turn"} {
		t.Run(how, func(t *testing.T) {
			h := startHarness(t, fakeChild("zeroclaw-v1", "ZCB_ACPTEST_STORE="+t.TempDir()), PoolConfig{})
			old := h.WaitReady().PID
			first, _ := h.MustTurn("k", "my name is Ada")
			switch how {
			case "kill":
				h.killAgent()
			case "restart":
				if !h.sup.Restart("model changed") {
					t.Fatal("no agent to restart")
				}
				h.waitReplaced(old)
			case "kill-mid-turn":
				errc := h.Start(context.Background(), "k", "slow story")
				h.killAgent()
				if err := acptest.Await(t, errc, 20*time.Second, "the killed turn's end"); !errors.Is(err, agentconn.ErrAgentGone) {
					t.Fatalf("the killed turn: %v, want agentconn.ErrAgentGone", err)
				}
			}
			res, chunks := h.MustTurn("k", "recall")
			want := acptest.Recall(1, "my name is Ada")
			if res.SessionID != first.SessionID || res.TurnIndex != 1 || res.Phases.Reused {
				t.Errorf("turn after the restart %+v, want session %s reopened at turn 1", res, first.SessionID)
			}
			if res.Text != want || strings.Join(chunks, "") != want {
				t.Errorf("text %q chunks %q, want %q", res.Text, chunks, want)
			}
			if !h.logged("acptest: session/resume "+first.SessionID) || strings.Contains(h.logs.String(), "acptest: session/load") {
				t.Error("the session was not reopened with session/resume")
			}
			h.restores(1, 0, 0)
			if n := strings.Count(h.logs.String(), "agent session resumed after a restart"); n != 1 {
				t.Errorf("%d resumes logged", n)
			}
		})
	}
}

// A process that dies while it reopens the session says nothing of the
// session: it is not counted lost, the key stays bound to it, and the next
// process resumes it — within the same turn, which waits for that process
// once.
func TestResumeSurvivesDeathWhileReopening(t *testing.T) {
	die := filepath.Join(t.TempDir(), "die-on-reopen")
	h := startHarness(t, fakeChild("zeroclaw-v1", "ZCB_ACPTEST_STORE="+t.TempDir(), "ZCB_ACPTEST_DIE_ON_REOPEN="+die), PoolConfig{})
	first, _ := h.MustTurn("k", "my name is Ada")
	if err := os.WriteFile(die, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.killAgent()
	res, _ := h.MustTurn("k", "recall")
	if res.SessionID != first.SessionID || res.TurnIndex != 1 || res.Text != acptest.Recall(1, "my name is Ada") {
		t.Errorf("turn after a death while reopening %+v, want session %s resumed at turn 1", res, first.SessionID)
	}
	if !h.logged("acptest: dying on session/resume") {
		t.Fatal("no process died while reopening")
	}
	h.restores(1, 0, 0)
}

// A restarted agent at a session limit it did not announce refuses a
// resume with -32001:
// the pool closes an idle session and asks again, so the conversation is
// resumed rather than started afresh.
func TestResumeAtSessionLimitEvictsAndRetries(t *testing.T) {
	h := startHarness(t, fakeChild("zeroclaw-v1", "ZCB_ACPTEST_STORE="+t.TempDir(), "ZCB_ACPTEST_HIDE_LIMITS=1"), PoolConfig{MaxSessions: 20})
	first, _ := h.MustTurn("k", "my name is Ada")
	h.killAgent()
	for i := range 10 { // ZeroClaw's default max_sessions: the new process is full
		h.MustTurn(fmt.Sprint("other-", i), "hello")
	}
	res, _ := h.MustTurn("k", "recall")
	if res.SessionID != first.SessionID || res.TurnIndex != 1 || res.Text != acptest.Recall(1, "my name is Ada") {
		t.Errorf("turn after a full restart %+v, want session %s resumed at turn 1", res, first.SessionID)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "session limit reached while resuming") {
		t.Error("the resume never met the session limit")
	}
	h.restores(1, 0, 0)
}

// An agent that advertises resume but no longer has the session (its
// store is in memory: a fresh one at each start) refuses it: the
// conversation is counted lost (resume_failed) and the turn goes on, at
// once, on a new session from turn 0.
func TestResumeRefusedStartsAfresh(t *testing.T) {
	h := startHarness(t, fakeChild("zeroclaw-v1"), PoolConfig{})
	first, _ := h.MustTurn("k", "my name is Ada")
	h.killAgent()
	res, _ := h.MustTurn("k", "recall")
	if res.SessionID == first.SessionID || res.TurnIndex != 0 || res.Text != acptest.Recall(0, "") {
		t.Errorf("turn after the refused resume %+v, want a new session at turn 0", res)
	}
	if !h.logged("acptest: session/resume " + first.SessionID) {
		t.Error("no resume was tried")
	}
	h.restores(0, 0, 1)
	// The new session is the key's from now on.
	if next, _ := h.MustTurn("k", "recall"); next.SessionID != res.SessionID || next.TurnIndex != 1 {
		t.Errorf("next turn %+v, want session %s at turn 1", next, res.SessionID)
	}
}

// An agent that advertises neither resume nor loadSession (ZeroClaw whose
// store did not open) is never asked to: the conversation is counted lost
// (agent_restart).
func TestNoRestoreCapabilityLosesSession(t *testing.T) {
	h := startHarness(t, fakeChild("zeroclaw-v1", "ZCB_ACPTEST_STORE=off"), PoolConfig{})
	first, _ := h.MustTurn("k", "my name is Ada")
	h.killAgent()
	res, _ := h.MustTurn("k", "recall")
	if res.SessionID == first.SessionID || res.TurnIndex != 0 || res.Text != acptest.Recall(0, "") {
		t.Errorf("turn after the restart %+v, want a new session at turn 0", res)
	}
	if logs := h.logs.String(); strings.Contains(logs, "acptest: session/resume") || strings.Contains(logs, "acptest: session/load") {
		t.Error("an agent without the capability was asked to reopen a session")
	}
	h.restores(0, 1, 0)
}

// An agent that can load but not resume gets session/load, which replays
// the conversation before its answer: the replayed messages are dropped
// and counted, and none of them reaches the next turn's text or chunks.
func TestLoadReplayNeverReachesTurn(t *testing.T) {
	h := startHarness(t, fakeChild("zeroclaw-v1", "ZCB_ACPTEST_STORE="+t.TempDir(), "ZCB_ACPTEST_RESTORE=load"), PoolConfig{})
	first, _ := h.MustTurn("k", "my name is Ada")
	h.MustTurn("k", "use a tool")
	h.killAgent()
	res, chunks := h.MustTurn("k", "recall")
	want := acptest.Recall(2, "use a tool")
	if res.SessionID != first.SessionID || res.TurnIndex != 2 {
		t.Errorf("turn after the restart %+v, want session %s reopened at turn 2", res, first.SessionID)
	}
	if res.Text != want || strings.Join(chunks, "") != want {
		t.Errorf("text %q chunks %q, want only %q", res.Text, chunks, want)
	}
	if !h.logged("acptest: session/load " + first.SessionID) {
		t.Error("the session was not loaded")
	}
	// Two user messages, two replies, a tool call and its result.
	if v := testutil.ToFloat64(h.metrics.DroppedUpdates.WithLabelValues("replay")); v != 6 {
		t.Errorf("dotty_acp_dropped_updates_total{reason=replay} = %v, want 6", v)
	}
	if n := strings.Count(h.logs.String(), "agent tool call:"); n != 1 {
		t.Errorf("%d tool calls logged, want the one the agent made (not its replay)", n)
	}
	h.restores(1, 0, 0)
}
