package acp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acpclient"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// toolsAgent is a fake agent whose prompts "<i>" play turns[i]: the tools
// of one response, asked for the way the reply's Shape does.
func toolsAgent(turns ...acptest.Reply) *fakeAgent {
	a := newFakeAgent()
	a.Script = func(p acptest.Prompt) acptest.Reply {
		var i int
		_, _ = fmt.Sscan(p.Text, &i)
		r := turns[i]
		r.Chunks = []string{"😊 done"}
		return r
	}
	return a
}

// decisions runs one turn per reply on a pool over a, with policy, and
// returns "<tool>=<outcome>" for every permission request, in order.
func decisions(t *testing.T, policy *agentconn.Policy, turns ...acptest.Reply) []string {
	t.Helper()
	a := toolsAgent(turns...)
	p := NewPool(PoolConfig{Logger: testLogger(t)}, dialFake(t, a, dialCfg{Permissions: policy}))
	testkit.Run(t, p, 10*time.Second)
	for i := range turns {
		turnText(t, p, "k", fmt.Sprint(i), nil)
	}
	var got []string
	for _, x := range a.Asked() {
		got = append(got, x.Tool+"="+x.Outcome)
	}
	return got
}

func kidPolicy(on bool, deny ...string) *agentconn.Policy {
	return &agentconn.Policy{Deny: deny, KidMode: func() bool { return on }}
}

func tools(names ...string) []acptest.Tool {
	ts := make([]acptest.Tool, len(names))
	for i, n := range names {
		ts[i] = acptest.Tool{Name: n}
	}
	return ts
}

func wantDecisions(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("decisions %q, want %q", got, want)
	}
}

// Each permission request is decided for its own tool, whatever the
// session's earlier tools were and whether the tool_call comes before the
// request, after it, or never.
func TestPermissionDecidedPerRequest(t *testing.T) {
	z := func(names ...string) acptest.Reply {
		return acptest.Reply{Shape: acptest.ZeroClaw, Tools: tools(names...)}
	}
	t.Run("camera after weather, kid mode on (ZeroClaw 0.8.4: request before tool_call)", func(t *testing.T) {
		got := decisions(t, kidPolicy(true), z("weather"), z("camera.take_photo"), z("weather", "camera.take_photo", "camera.take_photo"))
		wantDecisions(t, got, "weather=allow-once", "camera.take_photo=reject-once",
			"weather=allow-once", "camera.take_photo=reject-once", "camera.take_photo=reject-once")
	})
	t.Run("deny list with two tools in one response", func(t *testing.T) {
		got := decisions(t, kidPolicy(false, "shell"), z("shell", "weather"), z("weather", "shell"))
		wantDecisions(t, got, "shell=reject-once", "weather=allow-once", "weather=allow-once", "shell=reject-once")
	})
	t.Run("[camera, weather] in one response (ZeroClaw of May 2026: every tool_call first)", func(t *testing.T) {
		may := func(names ...string) acptest.Reply {
			return acptest.Reply{Shape: acptest.ZeroClawMay, Tools: tools(names...)}
		}
		got := decisions(t, kidPolicy(true), may("camera.take_photo", "weather"), may("weather", "camera.take_photo"))
		wantDecisions(t, got, "camera.take_photo=reject-once", "weather=allow-once", "weather=allow-once", "camera.take_photo=reject-once")
	})
	t.Run("claude-agent-acp: tool_calls first, requests with the same ids", func(t *testing.T) {
		got := decisions(t, kidPolicy(true), acptest.Reply{Shape: acptest.Claude, Tools: tools("weather", "camera.take_photo")})
		wantDecisions(t, got, "weather=allow", "camera.take_photo=reject")
	})
	t.Run("codex-acp: requests before tool_calls", func(t *testing.T) {
		r := acptest.Reply{Shape: acptest.Codex, Tools: []acptest.Tool{{Name: "weather"}, {Name: "camera.take_photo"}, {Name: "shell", Title: "ls -la /tmp"}}}
		// Its MCP tools' names come from their display titles: kid mode
		// allows one only when the allow list names it.
		wantDecisions(t, decisions(t, kidPolicy(true), r), "weather=cancel", "camera.take_photo=cancel", "shell=abort")
		allowWeather := kidPolicy(true)
		allowWeather.Allow = []string{"weather"}
		wantDecisions(t, decisions(t, allowWeather, r), "weather=approved", "camera.take_photo=cancel", "shell=abort")
		wantDecisions(t, decisions(t, kidPolicy(false), r), "weather=approved", "camera.take_photo=approved", "shell=approved")
	})
}

// ZeroClaw's approval title is recognised in every language it ships:
// file_edit's request names it only there (its rawInput is its arguments).
func TestPermissionLocalisedTitles(t *testing.T) {
	for _, loc := range acptest.Locales {
		t.Run(loc, func(t *testing.T) {
			got := decisions(t, kidPolicy(false, "file_edit"),
				acptest.Reply{Shape: acptest.ZeroClaw, Locale: loc, Tools: tools("weather", "file_edit", "file_write")})
			wantDecisions(t, got, "weather=allow-once", "file_edit=reject-once", "file_write=allow-once")
		})
	}
}

// gemini-cli names no tool in its requests and sends no tool_call before
// them: its built-in tools cannot be identified, so kid mode refuses them
// (and logs it); its MCP tools are named by their title.
func TestPermissionGeminiUnnamedTools(t *testing.T) {
	r := acptest.Reply{Shape: acptest.Gemini, Tools: []acptest.Tool{
		{Name: "run_shell_command", Title: "ls -la /tmp"}, {Name: "weather"}, {Name: "camera.take_photo"}}}
	wantDecisions(t, decisions(t, kidPolicy(true), r), "run_shell_command=cancel", "weather=proceed_once", "camera.take_photo=cancel")
	wantDecisions(t, decisions(t, kidPolicy(false), r), "run_shell_command=proceed_once", "weather=proceed_once", "camera.take_photo=proceed_once")
	wantDecisions(t, decisions(t, &agentconn.Policy{DenyUnidentified: true}, r), "run_shell_command=cancel", "weather=proceed_once", "camera.take_photo=proceed_once")
}

// Through a real child: ZeroClaw 0.8.4's order, then May 2026's, with kid
// mode on, on one session.
func TestSupervisorPermissionPerRequest(t *testing.T) {
	cfg := fakeChild("perm")
	withACP(&cfg, acpclient.Config{Permissions: kidPolicy(true, "shell")})
	h := startHarness(t, cfg, PoolConfig{})
	h.WaitReady()
	h.wantTexts(
		promptText{"tools:zeroclaw:weather", "😊 weather=allow-once"},
		promptText{"tools:zeroclaw/ja:camera.take_photo,weather,shell", "😊 camera.take_photo=reject-once weather=allow-once shell=reject-once"},
		promptText{"tools:zeroclaw-may:camera.take_photo,weather", "😊 camera.take_photo=reject-once weather=allow-once"},
		promptText{"tools:gemini:run_shell_command|ls -la", "😊 run_shell_command=cancel"},
	)
	// Logged before the request is answered, so before its turn ended.
	if !strings.Contains(h.logs.String(), "permission request does not identify its tool") {
		t.Error("the unidentified request was not logged")
	}
}
