package bridgeapp

// The real ACP agents published on npm, each run by the real binary as its
// agent against the fake model server (bridge/llm/llmtest): a buffered
// turn, a streamed turn, a barge-in, a tool that needs permission allowed,
// the same tool refused by ZEROCLAW_PERMISSION_DENY and by kid mode, the
// robot's tools (the bridge's MCP server) called through the agent, and
// no process of the agent left once the bridge has stopped.
// scripts/agents/install.sh installs the pinned versions; docs/agents.md
// says how each is configured and what it sends.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/robottools"
)

// agentsDirEnv names the directory scripts/agents/install.sh installed the
// agents in; unset, the one it chooses by default (its --print-dir).
const agentsDirEnv = "ACP_AGENTS_DIR"

// npmAgent is one agent under test and how to run it.
type npmAgent struct {
	name string
	// api is the model API it calls.
	api string
	// setup returns ZEROCLAW_BIN, ZEROCLAW_ARGS and the agent's own
	// variables, its model at modelURL, its files under home, its sessions
	// working in work.
	setup func(t *testing.T, dir, home, work, modelURL string) (bin, args string, env []string)
	// tool is the call that creates file in the session's directory, a
	// tool the agent asks permission for.
	tool func(id, file string) *llmtest.ToolCall
	// keepsModelStream: on a cancel the agent ends its turn at once but
	// leaves the model's stream open until the stream's next event (so a
	// stalled model never sees the abort).
	keepsModelStream bool
	// deny is the list entry that refuses that tool, on
	// ZEROCLAW_PERMISSION_DENY and on ZEROCLAW_PERMISSION_KID_DENY: its
	// name where the agent's requests identify it (claude-agent-acp's
	// Bash, by the same-id tool_call's _meta), else its ACP kind (the
	// others name no tool: docs/agents.md).
	deny string
	// robotTools: the agent connects to the MCP servers session/new hands
	// it (the bridge's robot tools); the SDK agent does not.
	robotTools bool
}

var npmAgents = []npmAgent{
	{
		name: "sdk-agent",
		api:  llmtest.ChatCompletions,
		setup: func(t *testing.T, dir, home, work, modelURL string) (string, string, []string) {
			script, err := filepath.Abs(filepath.Join("testdata", "sdk-agent.mjs"))
			if err != nil {
				t.Fatal(err)
			}
			return script, "", []string{agentsDirEnv + "=" + dir, "OPENAI_BASE_URL=" + modelURL + "/v1", "OPENAI_API_KEY=test"}
		},
		tool: func(id, file string) *llmtest.ToolCall {
			return &llmtest.ToolCall{ID: id, Name: "write_file", Args: map[string]any{"path": file, "content": "made by the agent"}}
		},
		deny: "kind:edit",
	},
	{
		name: "codex-acp",
		api:  llmtest.Responses,
		// codex-rs reads the SSE stream in a task of its own, which learns
		// that the turn is gone only when it has an event to hand over.
		keepsModelStream: true,
		setup: func(t *testing.T, dir, home, work, modelURL string) (string, string, []string) {
			codexHome := filepath.Join(home, ".codex")
			writeFile(t, filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`model = "gpt-5.2-codex"
model_provider = "local"

[model_providers.local]
name = "local"
base_url = %q
wire_api = "responses"
`, modelURL+"/v1"))
			// codex-acp takes no positional argument: drop the bridge's "acp".
			wrapper := filepath.Join(home, "codex-acp")
			writeFile(t, wrapper, "#!/bin/sh\n[ \"$1\" = acp ] && shift\nexec "+shellQuote(filepath.Join(dir, "node_modules", ".bin", "codex-acp"))+" \"$@\"\n")
			if err := os.Chmod(wrapper, 0o755); err != nil {
				t.Fatal(err)
			}
			return wrapper, "", []string{"CODEX_HOME=" + codexHome}
		},
		tool: func(id, file string) *llmtest.ToolCall {
			return &llmtest.ToolCall{ID: id, Name: "exec_command", Args: map[string]any{"cmd": "touch " + file,
				"sandbox_permissions": "require_escalated", "justification": "May I create " + file + "?"}}
		},
		deny:       "kind:execute",
		robotTools: true,
	},
	{
		name: "claude-agent-acp",
		api:  llmtest.Messages,
		setup: func(t *testing.T, dir, home, work, modelURL string) (string, string, []string) {
			return filepath.Join(dir, "node_modules", ".bin", "claude-agent-acp"), "", []string{
				"ANTHROPIC_BASE_URL=" + modelURL, "ANTHROPIC_API_KEY=test", "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
				"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
		},
		tool: func(id, file string) *llmtest.ToolCall {
			return &llmtest.ToolCall{ID: id, Name: "Bash", Args: map[string]any{"command": "touch " + file, "description": "Create " + file}}
		},
		deny:       "Bash",
		robotTools: true,
	},
	{
		name: "gemini-cli",
		api:  llmtest.Gemini,
		setup: func(t *testing.T, dir, home, work, modelURL string) (string, string, []string) {
			// A fixed model: "auto" first asks a router model over
			// generateContent for a JSON verdict. No usage statistics.
			writeFile(t, filepath.Join(home, ".gemini", "settings.json"), `{
  "model": {"name": "gemini-2.5-flash"},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
}
`)
			// It connects to MCP servers (the robot's tools) only in a
			// trusted folder.
			writeFile(t, filepath.Join(home, ".gemini", "trustedFolders.json"), fmt.Sprintf("{%q: \"TRUST_FOLDER\"}\n", work))
			return filepath.Join(dir, "node_modules", ".bin", "gemini"), "--acp", []string{
				"GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL=" + modelURL}
		},
		tool: func(id, file string) *llmtest.ToolCall {
			return &llmtest.ToolCall{ID: id, Name: "run_shell_command", Args: map[string]any{"command": "touch " + file, "description": "Create " + file}}
		},
		deny:       "kind:execute",
		robotTools: true,
	},
}

// knownAgentDefects are the agents' own defects a case runs into: the case
// is skipped with the reason when it fails.
var knownAgentDefects = map[string]string{
	// agentclientprotocol/claude-agent-acp#551: the prompt after a cancelled
	// one consumes the cancelled turn's end (end_turn, no text) and its own
	// reply arrives with the prompt after it.
	"claude-agent-acp/after-barge-in": "claude-agent-acp answers the prompt after a cancel at once with no text (its issue #551)",
}

func TestRealAgents(t *testing.T) {
	dir := agentsDir(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH; the npm agents need Node.js 20 or newer")
	}
	bridgeBinary(t) // build before the clocks of the subtests start
	for _, a := range npmAgents {
		t.Run(a.name, func(t *testing.T) {
			start := time.Now()
			runRealAgent(t, dir, filepath.Dir(node), a)
			t.Logf("%s: %s", a.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// agentsDir is where the agents are installed. Without them the test is
// skipped, except in CI (CI set), where .ci/run installs them.
func agentsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(agentsDirEnv)
	if dir == "" {
		out, err := exec.Command(filepath.Join("..", "..", "..", "scripts", "agents", "install.sh"), "--print-dir").Output()
		if err != nil {
			t.Skipf("%s unset, and scripts/agents/install.sh --print-dir failed: %v", agentsDirEnv, err)
		}
		dir = strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		msg := fmt.Sprintf("the npm ACP agents are not installed in %s: run scripts/agents/install.sh (or set %s to an install)", dir, agentsDirEnv)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

func runRealAgent(t *testing.T, dir, nodeDir string, a npmAgent) {
	model := llmtest.New(t, "")
	home, work := t.TempDir(), t.TempDir()
	tag := randomTag(t)
	// A subtest that fails before stopAndCheckProcesses leaves the bridge
	// to its cleanup (SIGKILL), which takes only its direct child along:
	// everything the agent started goes too.
	t.Cleanup(func() { killTagged(tag) })
	bin, args, env := a.setup(t, dir, home, work, model.URL)
	env = append([]string{
		"PATH=" + nodeDir + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"ZEROCLAW_BIN=" + bin, "ZEROCLAW_ARGS=" + args, "ZEROCLAW_SESSION_CWD=" + work,
		// Node agents start in seconds on a loaded machine, and the turns
		// below are bounded by the client's own deadline instead.
		"ZEROCLAW_INIT_TIMEOUT=90", "ZEROCLAW_CANCEL_GRACE=15",
		// Inherited by every process the agent starts: how they are found.
		"ZEROCLAW_TEST_AGENT_TAG=" + tag,
	}, env...)

	// Kid mode refuses the same tool: claude-agent-acp's Bash by name on
	// the kid list, the others' by its kind entry (their requests identify
	// no tool, which kid mode would refuse anyway; acp's
	// TestPolicyKindEntries tells the two rules apart).
	//
	// The robot's tools (the bridge's MCP server) act on a recording
	// xiaozhi that plays the robot, its photos described by a fake vision
	// model.
	xz, vlm := xiaozhitest.New(t), llmtest.New(t, robotPhotoDescription)
	p := startBridge(t, slices.Concat(env, xiaozhiEnv(xz), visionEnv(vlm),
		[]string{"ZEROCLAW_PERMISSION_KID_DENY=camera.take_photo," + a.deny})...)
	xz.TakesPhotos("http://"+p.addr, []byte("\xff\xd8\xff\xe0robot-tools-jpeg"))
	kidMode := filepath.Join(p.stateDir, "kid-mode")
	writeFile(t, kidMode, "false")
	waitAgentReady(t, p)

	// A buffered turn, then a streamed one in the same conversation.
	// Each conversation's prompts carry a word of their own, which picks
	// its script: an agent still busy with an earlier conversation (or
	// asking its model on the side) does not take a later one's answer.
	model.SetFor("w-hello", llmtest.Reply{Text: "Hello from the fake model."})
	from := model.Count()
	if got := realTurn(t, p, "talk", "hello robot w-hello"); !strings.Contains(got, "Hello from the fake model.") {
		t.Errorf("buffered reply %q", got)
	}
	if r, ok := model.Wait(from, time.Second, func(r llmtest.Request) bool { return r.API == a.api }); !ok {
		t.Errorf("the model got no %s request: %+v", a.api, model.Requests())
	} else {
		t.Logf("%s request: %s stream=%v, %d tools offered", a.api, r.Path, r.Stream, len(r.Tools))
	}
	model.SetFor("w-story", llmtest.Reply{Text: "Once upon a time a small robot sang to the moon."})
	chunks, final := realStream(t, p, "talk", "tell me a story w-story")
	if text := strings.Join(chunks, ""); len(chunks) == 0 || final != text || !strings.Contains(text, "small robot sang to the moon") {
		t.Errorf("streamed chunks %q, final %q", chunks, final)
	}

	// A barge-in: the model stalls mid-reply, the caller hangs up after the
	// first chunk; the agent confirms the cancel in protocol, its model
	// request is aborted, and the conversation goes on.
	model.SetFor("w-long", llmtest.Reply{Text: "Once upon a time there was a robot who liked to talk and talk", Stall: true})
	from = model.Count()
	bargeIn(t, p, "barge", "tell me a long story w-long")
	testkit.WaitFor(t, 60*time.Second, "the agent's cancelled result", func() bool {
		return strings.Contains(p.log(), "agent confirmed cancel") && strings.Contains(p.log(), "stop=cancelled")
	})
	if !a.keepsModelStream {
		if _, ok := model.Wait(from, 60*time.Second, func(r llmtest.Request) bool { return r.Aborted }); !ok {
			t.Errorf("the agent did not abort its model request after the barge-in")
		}
	}
	t.Run("after-barge-in", func(t *testing.T) {
		model.SetFor("w-there", llmtest.Reply{Text: "Back again."})
		got := realTurn(t, p, "barge", "are you there? w-there")
		if strings.Contains(got, "Back again.") {
			return
		}
		if why := knownAgentDefects[a.name+"/after-barge-in"]; why != "" {
			t.Skipf("turn after the barge-in answered %q: %s", got, why)
		}
		t.Errorf("turn after the barge-in: %q", got)
	})

	// A tool that needs permission, allowed; the same while kid mode is on.
	t.Run("allow", func(t *testing.T) { checkTool(t, p, model, a, work, "allow", true) })
	// The robot's tools, each in a conversation on a robot of its own.
	if a.robotTools {
		t.Run("robot-look", func(t *testing.T) { checkRobotLook(t, p, model, xz) })
		t.Run("robot-photo", func(t *testing.T) { checkRobotPhoto(t, p, model, xz) })
		t.Run("robot-remember", func(t *testing.T) { checkRobotRemember(t, p, model) })
	}
	writeFile(t, kidMode, "true")
	t.Run("kid", func(t *testing.T) { checkTool(t, p, model, a, work, "kid", false) })
	if a.robotTools {
		t.Run("robot-kid-photo", func(t *testing.T) { checkRobotKidPhoto(t, p, model, xz) })
		t.Run("robot-metrics", func(t *testing.T) { checkRobotMetrics(t, p) })
	}

	stopAndCheckProcesses(t, p, tag)

	// The same tool on the deny list (kid mode off).
	denyBridge := startBridge(t, append(env, "ZEROCLAW_PERMISSION_DENY="+a.deny)...)
	writeFile(t, filepath.Join(denyBridge.stateDir, "kid-mode"), "false")
	waitAgentReady(t, denyBridge)
	t.Run("deny", func(t *testing.T) { checkTool(t, denyBridge, model, a, work, "deny", false) })
	stopAndCheckProcesses(t, denyBridge, tag)
}

// checkTool scripts the model to call a.tool creating name+".txt" and
// checks the outcome of the agent's permission request: when allowed, the
// file made, the model given the tool's result and its final text passed
// on; when refused, no file (the model gets the refusal as the tool's
// result, or, from codex-acp, no result: it ends the turn).
func checkTool(t *testing.T, p *bridgeProc, model *llmtest.Server, a npmAgent, work, name string, allow bool) {
	t.Helper()
	file := name + ".txt"
	call := a.tool("call_"+name, file)
	model.SetFor("w-"+name, llmtest.Reply{Text: "Finished with the file.", Tool: call})
	from := model.Count()
	logFrom := len(p.log())
	reply := realTurn(t, p, name, "please make "+file+" w-"+name)
	_, statErr := os.Stat(filepath.Join(work, file))
	ran := statErr == nil
	var results []llmtest.ToolResult
	for _, r := range model.Requests()[from:] {
		for _, res := range r.Results {
			if res.CallID == call.ID || res.Name == call.Name {
				results = append(results, res)
			}
		}
	}
	decided := regexp.MustCompile(`permission decided: .*decision=(allow|deny)`).FindAllStringSubmatch(p.log()[logFrom:], -1)
	what := fmt.Sprintf("reply %q, file made %v, results the model got %+v, decisions %v", reply, ran, results, decided)
	// The bridge was asked, and decided as the case wants: not a tool that
	// ran (or did not) without a permission request.
	want := "deny"
	if allow {
		want = "allow"
	}
	if len(decided) == 0 || decided[len(decided)-1][1] != want {
		t.Errorf("the bridge did not decide %s: %s", want, what)
	}
	t.Logf("%s: %s", name, what)
	if allow {
		if !ran || len(results) == 0 || results[0].Error || !strings.Contains(reply, "Finished with the file.") {
			t.Errorf("allowed tool: %s", what)
		}
		return
	}
	if !ran {
		return
	}
	t.Errorf("refused tool ran: %s", what)
}

// robotPhotoDescription is the fake vision model's description of every
// photo the robot takes.
const robotPhotoDescription = "A red ball on a blue carpet."

// robotCall is what callRobotTool saw.
type robotCall struct {
	reply   string               // the turn's reply
	called  string               // the name the model called the tool by ("" when not offered)
	results []llmtest.ToolResult // what the agent gave the model for the call
	what    string               // all of it, for a failure's message
}

// callRobotTool runs one turn in conversation name, spoken on device,
// whose model calls the robot's tool (the bridge's MCP server's, under
// the name the agent offers it by) with args and then answers "Done with
// the robot.".
func callRobotTool(t *testing.T, p *bridgeProc, model *llmtest.Server, name, device, tool string, args map[string]any) robotCall {
	t.Helper()
	call := &llmtest.ToolCall{ID: "call_" + strings.ReplaceAll(name, "-", "_"), Suffix: tool, Args: args}
	model.SetFor("w-"+name, llmtest.Reply{Text: "Done with the robot.", Tool: call})
	from, logFrom := model.Count(), len(p.log())
	var rc robotCall
	rc.reply = realTurnOn(t, p, name, device, "please use the robot w-"+name)
	var offered []string
	for _, r := range model.Requests()[from:] {
		if r.Called != nil && r.Called.ID == call.ID {
			rc.called = r.Called.Name
		}
		if len(r.Tools) > 0 {
			offered = r.Tools
		}
	}
	rc.results = model.ResultsOf(from, call.ID)
	decided := regexp.MustCompile(`permission decided: .*`).FindAllString(p.log()[logFrom:], -1)
	rc.what = fmt.Sprintf("reply %q, called %q, results the model got %+v, decisions %q", rc.reply, rc.called, rc.results, decided)
	t.Logf("%s: %s", name, rc.what)
	if rc.called == "" {
		t.Fatalf("the model was not offered the robot's %s tool; the tools offered: %q", tool, offered)
	}
	// The agent asked, and the policy named the tool and allowed it (kid
	// mode's camera rule is the tool's own).
	if !slices.ContainsFunc(decided, func(d string) bool {
		return strings.Contains(d, " tool="+tool+" ") && strings.HasSuffix(d, "decision=allow")
	}) {
		t.Errorf("the bridge did not allow %s by name: %s", tool, rc.what)
	}
	return rc
}

// resultHas reports whether one of the results holds text (not every API
// flags a tool error: Responses carries none).
func (rc robotCall) resultHas(text string) bool {
	return slices.ContainsFunc(rc.results, func(r llmtest.ToolResult) bool { return strings.Contains(r.Output, text) })
}

// checkRobotLook: "look left" reaches the recording xiaozhi as
// set-head-angles for the conversation's own robot.
func checkRobotLook(t *testing.T, p *bridgeProc, model *llmtest.Server, xz *xiaozhitest.Server) {
	device := "dotty-look-" + randomTag(t)
	rc := callRobotTool(t, p, model, "robot-look", device, "look", map[string]any{"yaw": -60, "pitch": 0})
	var heads []map[string]any
	for _, c := range xz.CallsTo("/xiaozhi/admin/set-head-angles") {
		heads = append(heads, c.Body)
		if c.Body["device_id"] == device && c.Body["yaw"] == -60.0 && c.Body["pitch"] == 0.0 {
			if !strings.Contains(rc.reply, "Done with the robot.") || len(rc.results) == 0 || rc.results[0].Error {
				t.Errorf("the head turned, but the turn: %s", rc.what)
			}
			return
		}
	}
	t.Errorf("xiaozhi got no set-head-angles yaw -60 for %s: %v; %s", device, heads, rc.what)
}

// checkRobotPhoto: "take a photo" asks the conversation's robot for one,
// and the fake vision model's description comes back to the model in the
// tool's result.
func checkRobotPhoto(t *testing.T, p *bridgeProc, model *llmtest.Server, xz *xiaozhitest.Server) {
	device := "dotty-photo-" + randomTag(t)
	rc := callRobotTool(t, p, model, "robot-photo", device, "take_photo", map[string]any{"question": "What is on the floor?"})
	if !rc.resultHas(robotPhotoDescription) || !strings.Contains(rc.reply, "Done with the robot.") {
		t.Errorf("the photo's description did not reach the model: %s", rc.what)
	}
	if !slices.ContainsFunc(xz.CallsTo("/xiaozhi/admin/take-photo"), func(c xiaozhitest.Call) bool { return c.Body["device_id"] == device }) {
		t.Errorf("xiaozhi got no take-photo for %s", device)
	}
}

// checkRobotRemember: a fact about a child (nobody in the household file
// is a grown-up) is held for review, not stored as a live fact.
func checkRobotRemember(t *testing.T, p *bridgeProc, model *llmtest.Server) {
	rc := callRobotTool(t, p, model, "robot-remember", "dotty-remember-"+randomTag(t), "remember",
		map[string]any{"person": "Sam", "fact": "lost a front tooth today"})
	if !rc.resultHas(tier1.HeldForReview) {
		t.Errorf("the model was not told the fact is held: %s", rc.what)
	}
	records := p.heldFacts(1)
	if records[0]["pending"] != true || !strings.Contains(fmt.Sprint(records[0]), "lost a front tooth today") {
		t.Errorf("review card %v", records)
	}
}

// checkRobotKidPhoto: while kid mode is on the camera tool is refused,
// the model reads the refusal, and the robot is asked for no photo.
func checkRobotKidPhoto(t *testing.T, p *bridgeProc, model *llmtest.Server, xz *xiaozhitest.Server) {
	device := "dotty-kid-" + randomTag(t)
	rc := callRobotTool(t, p, model, "robot-kid-photo", device, "take_photo", nil)
	if !rc.resultHas(robottools.KidModeCamera) {
		t.Errorf("the model did not read the kid-mode refusal: %s", rc.what)
	}
	if slices.ContainsFunc(xz.CallsTo("/xiaozhi/admin/take-photo"), func(c xiaozhitest.Call) bool { return c.Body["device_id"] == device }) {
		t.Errorf("kid mode on, yet xiaozhi was asked for a photo for %s", device)
	}
}

// checkRobotMetrics: /metrics counted each call of the robot's tools
// above with its outcome.
func checkRobotMetrics(t *testing.T, p *bridgeProc) {
	_, m := p.get("/metrics")
	for _, c := range []struct{ tool, outcome string }{{"look", "ok"}, {"take_photo", "ok"}, {"remember", "ok"}, {"take_photo", "refused"}} {
		if want := fmt.Sprintf("dotty_mcp_tool_calls_total{outcome=%q,tool=%q} 1\n", c.outcome, c.tool); !strings.Contains(m, want) {
			t.Errorf("/metrics does not count one %s call of %s:\n%s", c.outcome, c.tool,
				strings.Join(regexp.MustCompile(`(?m)^dotty_mcp_tool_calls_total.*$`).FindAllString(m, -1), "\n"))
		}
	}
}

// waitAgentReady waits for /health to report the agent ready.
func waitAgentReady(t *testing.T, p *bridgeProc) {
	t.Helper()
	testkit.WaitFor(t, 120*time.Second, "the agent ready on /health", func() bool {
		code, body := p.get("/health")
		var h map[string]any
		if code != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil {
			t.Fatalf("/health: %d %s", code, body)
		}
		if agentOf(h)["state"] == "ready" {
			return true
		}
		time.Sleep(100 * time.Millisecond) // a node agent starts in seconds
		return false
	})
}

// turnClient bounds each turn: a real agent's turn takes seconds.
var turnClient = &http.Client{Timeout: 120 * time.Second}

func turnBody(session, content string) string { return turnBodyOn(session, "", content) }

// turnBodyOn is a turn's request; device, when set, is the robot it is
// spoken on (metadata.device_id).
func turnBodyOn(session, device, content string) string {
	req := map[string]any{"content": "[User] " + content, "channel": "dotty", "session_id": session}
	if device != "" {
		req["metadata"] = map[string]any{"device_id": device}
	}
	b, _ := json.Marshal(req)
	return string(b)
}

// realTurn runs a buffered turn and returns the reply.
func realTurn(t *testing.T, p *bridgeProc, session, content string) string {
	t.Helper()
	return realTurnOn(t, p, session, "", content)
}

// realTurnOn runs a buffered turn spoken on device and returns the reply.
func realTurnOn(t *testing.T, p *bridgeProc, session, device, content string) string {
	t.Helper()
	resp, err := turnClient.Post("http://"+p.addr+"/api/message", "application/json", strings.NewReader(turnBodyOn(session, device, content)))
	if err != nil {
		t.Fatalf("turn %s: %v", session, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("turn %s: %d %v", session, resp.StatusCode, err)
	}
	reply, _ := out["response"].(string)
	return reply
}

// realStream runs a streamed turn and returns its chunks and the final
// frame's content.
func realStream(t *testing.T, p *bridgeProc, session, content string) ([]string, string) {
	t.Helper()
	resp, err := turnClient.Post("http://"+p.addr+"/api/message/stream", "application/json", strings.NewReader(turnBody(session, content)))
	if err != nil {
		t.Fatalf("stream %s: %v", session, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stream %s: %d %v", session, resp.StatusCode, err)
	}
	var chunks []string
	final := ""
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "" {
			continue // a heartbeat
		}
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("stream %s: line %q: %v", session, line, err)
		}
		switch f["type"] {
		case "chunk":
			chunks = append(chunks, f["content"].(string))
		case "final":
			final, _ = f["content"].(string)
		default:
			t.Errorf("stream %s: frame %v", session, f)
		}
	}
	return chunks, final
}

// bargeIn starts a streamed turn and hangs up after its first chunk.
func bargeIn(t *testing.T, p *bridgeProc, session, content string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.addr+"/api/message/stream", strings.NewReader(turnBody(session, content)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("barge-in turn: %v", err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("barge-in turn ended before its first chunk: %v", err)
		}
		if bytes.Contains(line, []byte(`"chunk"`)) {
			return // cancel and Close hang up
		}
		if len(bytes.TrimSpace(line)) > 0 {
			t.Fatalf("barge-in turn: frame %s before any chunk", line)
		}
	}
}

// stopAndCheckProcesses stops the bridge with SIGTERM and checks that no
// process carrying tag in its environment outlives it (≤ 15 s: the stop
// ladder's last step is a SIGKILL of the agent's process group).
func stopAndCheckProcesses(t *testing.T, p *bridgeProc, tag string) {
	t.Helper()
	if left := taggedProcesses(tag); len(left) == 0 {
		t.Errorf("no agent process found before the stop")
	}
	if _, err := p.stop(syscall.SIGTERM); err != nil {
		t.Errorf("bridge exit: %v", err)
	}
	var left []string
	defer func() {
		if len(left) > 0 {
			t.Errorf("agent processes left after the bridge stopped: %q", left)
		}
	}()
	testkit.WaitFor(t, 15*time.Second, "no agent process left", func() bool {
		left = taggedProcesses(tag)
		return len(left) == 0
	})
}

// killTagged sends SIGKILL to every process taggedProcesses finds.
func killTagged(tag string) {
	for _, p := range taggedProcesses(tag) {
		if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// taggedProcesses lists the live processes (pid and command line) whose
// environment holds ZEROCLAW_TEST_AGENT_TAG=tag.
func taggedProcesses(tag string) []string {
	want := []byte("ZEROCLAW_TEST_AGENT_TAG=" + tag)
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool { return bytes.Equal(kv, want) }) || testkit.ProcessGone(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

func randomTag(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
