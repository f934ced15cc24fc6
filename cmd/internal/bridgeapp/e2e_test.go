package bridgeapp

// End-to-end tests: the real binary, built once, run as a child process
// with the built-in demo agent (no zeroclaw on PATH) or a missing agent.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerabletest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/benchkit"
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	steerabletest.MaybeRunHelper() // STEERABLE_CMD may be this test binary
	acptest.MaybeRunHelper()       // and so may ZEROCLAW_BIN
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// bridgeBinEnv names, in a test's child process (inMountNamespace), the
// binary its parent built.
const bridgeBinEnv = "ZEROCLAW_E2E_BRIDGE_BIN"

// bridgeBinary builds ./cmd/zeroclaw-bridge once per test run.
func bridgeBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(bridgeBinEnv); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "zeroclaw-bridge-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "zeroclaw-bridge")
		buildErr = benchkit.Build(binPath, false)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// bridgeProc is a running bridge binary.
type bridgeProc struct {
	t        *testing.T
	cmd      *exec.Cmd
	addr     string
	stateDir string     // CONVO_LOG_DIR and the mode state files live here
	exited   chan error // receives cmd.Wait's result once
	stderr   testkit.LogBuffer
}

var listenLine = regexp.MustCompile(`http server listening: addr=(\S+)`)

var httpClient = &http.Client{Timeout: 5 * time.Second}

// startBridge runs the binary on 127.0.0.1 at a free port with a PATH that
// holds no zeroclaw, plus env, and waits for its listening address.
func startBridge(t *testing.T, env ...string) *bridgeProc {
	t.Helper()
	cmd := exec.Command(bridgeBinary(t))
	state := t.TempDir()
	cmd.Env = append([]string{"PATH=" + t.TempDir(), "BRIDGE_HOST=127.0.0.1", "PORT=0", "LOG_LEVEL=debug",
		// Keep the bridge's files in the test's directory and off the network.
		"CONVO_LOG_DIR=" + filepath.Join(state, "logs"), "DOTTY_KID_MODE_STATE=" + filepath.Join(state, "kid-mode"),
		"DOTTY_SMART_MODE_STATE=" + filepath.Join(state, "smart-mode"), "WEATHER_LOCATION=-",
		"VOICE_MEMORY_DB=" + filepath.Join(state, "memory", "brain.db"), "HOUSEHOLD_YAML_PATH=" + filepath.Join(state, "household.yaml"),
		"ZEROCLAW_WORKSPACE=" + filepath.Join(state, "workspace"), "ZEROCLAW_VOICE_CFG=" + filepath.Join(state, "config.toml"),
		"ZEROCLAW_DISCORD_CFG=" + filepath.Join(state, "discord.toml"), "DOTTY_TOOL_ALLOWLIST=" + filepath.Join(state, "tool-allowlist"),
		"GREETER_STATE_PATH=" + filepath.Join(state, "greeter_state.json")}, env...)
	return runBridge(t, cmd, state)
}

// runBridge starts cmd, a bridge binary listening on a free port, and
// waits (≤ 10 s) for its listening address; the process is killed at the
// end of the test.
func runBridge(t *testing.T, cmd *exec.Cmd, stateDir string) *bridgeProc {
	t.Helper()
	p := &bridgeProc{t: t, cmd: cmd, stateDir: stateDir, exited: make(chan error, 1)}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = p.stderr.Write([]byte(sc.Text() + "\n"))
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		select {
		case err := <-p.exited:
			p.exited <- err
		case <-time.After(10 * time.Second):
			t.Error("bridge process not reaped within 10 s of SIGKILL")
		}
		if t.Failed() {
			t.Logf("bridge stderr:\n%s", p.log())
		}
	})
	select {
	case p.addr = <-addr:
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("bridge exited before listening: %v\n%s", err, p.log())
	case <-time.After(10 * time.Second):
		t.Fatalf("bridge did not listen within 10 s:\n%s", p.log())
	}
	return p
}

// inMountNamespace is testkit.InMountNamespace for a test of the binary:
// the test's child process runs the binary this process built, not a
// build of its own.
func inMountNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv(bridgeBinEnv) == "" && os.Geteuid() == 0 {
		t.Setenv(bridgeBinEnv, bridgeBinary(t))
	}
	return testkit.InMountNamespace(t)
}

func (p *bridgeProc) log() string {
	return p.stderr.String()
}

// get returns the status and body of GET path.
func (p *bridgeProc) get(path string) (int, string) {
	p.t.Helper()
	return p.request(http.MethodGet, path, "")
}

// post sends a JSON body and returns the status and body.
func (p *bridgeProc) post(path, body string) (int, string) {
	p.t.Helper()
	return p.request(http.MethodPost, path, body, "Content-Type", "application/json")
}

// request sends method path with body and header pairs ("Host" sets the
// Host) and returns the status and body (≤ 5 s); a stream's body is not
// read.
func (p *bridgeProc) request(method, path, body string, headers ...string) (int, string) {
	p.t.Helper()
	return p.requestWithin(5*time.Second, method, path, body, headers...)
}

// requestWithin is request bounded by d.
func (p *bridgeProc) requestWithin(d time.Duration, method, path, body string, headers ...string) (int, string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req := p.newRequest(ctx, method, path, body, headers...)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, ""
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

// newRequest is method path on the bridge with body and header pairs
// ("Host" sets the Host).
func (p *bridgeProc) newRequest(ctx context.Context, method, path, body string, headers ...string) *http.Request {
	p.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+p.addr+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return req
}

// photoForm is the firmware's /api/vision/explain upload of photo with
// question: the multipart body and its Content-Type.
func photoForm(photo []byte, question string) (body, contentType string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	part, _ := w.CreateFormFile("file", "photo.jpg")
	_, _ = part.Write(photo)
	_ = w.WriteField("question", question)
	_ = w.Close()
	return b.String(), w.FormDataContentType()
}

// explain uploads photo with question for device, as the firmware does,
// plus header pairs, and returns the status and the trimmed body (≤ 30 s).
func (p *bridgeProc) explain(device, question string, photo []byte, headers ...string) (int, string) {
	p.t.Helper()
	body, ct := photoForm(photo, question)
	code, out := p.requestWithin(30*time.Second, http.MethodPost, "/api/vision/explain", body,
		append([]string{"Content-Type", ct, "device-id", device}, headers...)...)
	return code, strings.TrimSpace(out)
}

// pollWhile starts xiaozhi's vision long-poll for device, with header
// pairs, and calls upload until the poll answers (≤ 12 s): an upload that
// lands before the poll registers is discarded as stale, as it is for
// xiaozhi. It returns the poll's status and trimmed body ("0 " and the
// error when the request failed).
func (p *bridgeProc) pollWhile(device string, upload func(), headers ...string) string {
	p.t.Helper()
	req := p.newRequest(context.Background(), http.MethodGet, "/api/vision/latest/"+device, "", headers...)
	polled := make(chan string, 1)
	go func() {
		resp, err := httpClient.Do(req)
		if err != nil {
			polled <- "0 " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		polled <- fmt.Sprint(resp.StatusCode, " ", strings.TrimSpace(string(b)))
	}()
	deadline := time.After(12 * time.Second)
	for {
		upload()
		select {
		case got := <-polled:
			return got
		case <-time.After(300 * time.Millisecond):
		case <-deadline:
			p.t.Fatal("long-poll did not answer")
		}
	}
}

// xiaozhiEnv points the bridge at the fake xiaozhi xz.
func xiaozhiEnv(xz *xiaozhitest.Server) []string {
	host, port := xz.HostPort()
	return []string{"XIAOZHI_HOST=" + host, "XIAOZHI_OTA_PORT=" + strconv.Itoa(port)}
}

// visionEnv points the bridge's vision model (and, with it, the narrative
// model) at the fake vlm, with a test key.
func visionEnv(vlm *llmtest.Server) []string {
	return []string{"VISION_API_URL=" + vlm.URL + "/v1/chat/completions", "OPENROUTER_API_KEY=sk-or-test"}
}

// heldFacts waits (≤ 10 s) for the dashboard's memory review card to list
// n records and returns them.
func (p *bridgeProc) heldFacts(n int) []map[string]any {
	p.t.Helper()
	var review struct {
		Records []map[string]any `json:"records"`
	}
	testkit.WaitFor(p.t, 10*time.Second, fmt.Sprintf("%d records on the review card", n), func() bool {
		code, body := p.get("/ui/api/memory")
		return code == 200 && json.Unmarshal([]byte(body), &review) == nil && len(review.Records) == n
	})
	return review.Records
}

// restoredSessions waits (≤ 10 s) for /health to count the agent's
// sessions restored how ("resumed" or "recreated") n times, the other way
// none and none lost with one live, and checks /metrics counts the same.
func (p *bridgeProc) restoredSessions(how string, n int) {
	p.t.Helper()
	other := map[string]string{"resumed": "recreated", "recreated": "resumed"}[how]
	_, h := p.health("the "+how+" sessions counted", func(h map[string]any) bool { return h["sessions_"+how] == float64(n) })
	if h["sessions_"+other] != 0.0 || h["sessions_lost"] != 0.0 || h["sessions"] != 1.0 {
		p.t.Errorf("/health sessions: %v resumed, %v recreated, %v lost, %v live", h["sessions_resumed"], h["sessions_recreated"], h["sessions_lost"], h["sessions"])
	}
	_, m := p.get("/metrics")
	for _, want := range []string{fmt.Sprintf(`dotty_agent_sessions_restored_total{how=%q} %d`, how, n), `dotty_agent_sessions_restored_total{how="` + other + `"} 0`,
		`dotty_agent_sessions_lost_total{reason="agent_restart"} 0`, `dotty_agent_sessions_lost_total{reason="resume_failed"} 0`} {
		if !strings.Contains(m, want) {
			p.t.Errorf("/metrics lacks %s", want)
		}
	}
}

// health polls /health (≤ 10 s) until ready holds, and returns the last body.
func (p *bridgeProc) health(what string, ready func(h map[string]any) bool) (string, map[string]any) {
	p.t.Helper()
	var body string
	var h map[string]any
	testkit.WaitFor(p.t, 10*time.Second, what+" on /health", func() bool {
		var code int
		code, body = p.get("/health")
		h = nil
		if code != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil {
			p.t.Fatalf("/health: %d %s", code, body)
		}
		return ready(h)
	})
	return body, h
}

// stop sends sig and waits (≤ 10 s) for the exit; it returns Wait's error
// and how long the exit took.
func (p *bridgeProc) stop(sig syscall.Signal) (time.Duration, error) {
	p.t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		return time.Since(start), err
	case <-time.After(10 * time.Second):
		p.t.Fatalf("bridge did not exit within 10 s of %s", sig)
		return 0, nil
	}
}

func agentOf(h map[string]any) map[string]any {
	a, _ := h["agent"].(map[string]any)
	return a
}

func TestBridgeRunsDemoAgentAndStopsCleanly(t *testing.T) {
	if _, err := os.Stat(fallbackZeroclaw); err == nil {
		t.Skip("a real zeroclaw is installed at " + fallbackZeroclaw + "; the demo-agent fallback cannot be reached here")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startBridge(t)
			body, h := p.health("acp_running", func(h map[string]any) bool {
				return h["acp_running"] == true && agentOf(h)["state"] == "ready"
			})

			// bridge.py's five keys first, in its order, then the agent object.
			last := -1
			for _, k := range []string{`"status":"ok"`, `"service":"zeroclaw-bridge"`, `"acp_running":true`,
				`"cached_session":false`, `"session_turns":0`, `"agent":{`, `"sessions":0`} {
				i := strings.Index(body, k)
				if i <= last {
					t.Fatalf("/health %s: %s missing or out of order", body, k)
				}
				last = i
			}
			agent := agentOf(h)
			if agent["dialect"] != "v1" {
				t.Errorf("agent.dialect = %v, want v1 (agent %v)", agent["dialect"], agent)
			}
			if cmd := fmt.Sprint(agent["command"]); cmd != "zeroclaw-bridge" {
				t.Errorf("agent.command = %q, want the binary's name only (this binary, as the demo agent)", cmd)
			}
			if n := strings.Count(p.log(), "running the built-in demo agent"); n != 1 {
				t.Errorf("%d demo-agent WARN lines, want exactly 1", n)
			}

			var metrics [2]string
			for i, path := range []string{"/metrics", "/metrics/"} {
				code, m := p.get(path)
				if code != http.StatusOK {
					t.Errorf("%s: status %d", path, code)
				}
				for _, want := range []string{"# TYPE dotty_request_duration_seconds histogram", "\ndotty_acp_child_up 1\n", "\ngo_goroutines ", "\nprocess_cpu_seconds_total "} {
					if !strings.Contains(m, want) {
						t.Errorf("%s lacks %q", path, want)
					}
				}
				metrics[i] = m
			}

			pid, ok := agent["pid"].(float64)
			if !ok || pid <= 0 {
				t.Fatalf("agent.pid = %v", agent["pid"])
			}
			took, err := p.stop(sig)
			if err != nil {
				t.Errorf("exit after %s: %v, want status 0", sig, err)
			}
			// A drain that ran into its bound says so in the log; the
			// time is printed.
			if strings.Contains(p.log(), "did not finish in time") {
				t.Error("shutdown ran into its timeout")
			}
			t.Logf("shutdown took %s", took.Round(time.Millisecond))
			testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("agent pid %d to be gone", int(pid)), func() bool {
				return errors.Is(syscall.Kill(int(pid), 0), syscall.ESRCH)
			})
			for _, want := range []string{"shutting down: reason=\"received signal", "http server stopped", "stopped: shutdown="} {
				if !strings.Contains(p.log(), want) {
					t.Errorf("stderr lacks %q", want)
				}
			}
		})
	}
}

func TestBridgeStartsWithMissingAgentBinary(t *testing.T) {
	p := startBridge(t, "ZEROCLAW_BIN=/nonexistent/zeroclaw")
	_, h := p.health("binary_missing", func(h map[string]any) bool {
		return agentOf(h)["binary_missing"] == true
	})
	if h["acp_running"] != false {
		t.Errorf("acp_running = %v, want false", h["acp_running"])
	}
	lastErr, _ := agentOf(h)["last_error"].(string)
	if !strings.Contains(lastErr, "/nonexistent/zeroclaw") || !strings.Contains(lastErr, "missing") {
		t.Errorf("agent.last_error = %q, want it to name the missing binary", lastErr)
	}
	if strings.Contains(p.log(), "demo agent") {
		t.Error("demo agent used although ZEROCLAW_BIN was set")
	}
	if took, err := p.stop(syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v after %s, want status 0", err, took)
	}
}

func TestBridgeRejectsInvalidConfig(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      string
		wantLine string
	}{
		{"invalid env", nil, "ZEROCLAW_SESSION_MAX_TURNS=lots", `zeroclaw-bridge: invalid ZEROCLAW_SESSION_MAX_TURNS "lots": want an integer`},
		{"out of range", nil, "ZEROCLAW_TIMEOUT=-3", `zeroclaw-bridge: invalid ZEROCLAW_TIMEOUT "-3": want more than 0 seconds`},
		{"bad flag", []string{"-prot", "80"}, "", `zeroclaw-bridge: flag provided but not defined: -prot (run with -h for the flags)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bridgeBinary(t), tt.args...)
			cmd.Env = []string{"PATH=" + t.TempDir(), tt.env}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = 5 * time.Second
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want status 2; stderr %q", err, stderr.String())
			}
			if got := strings.TrimSuffix(stderr.String(), "\n"); got != tt.wantLine {
				t.Errorf("stderr %q, want the one line %q", got, tt.wantLine)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

func TestHelpAndVersionExitZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"version"}, {"-version"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := exec.Command(bridgeBinary(t), args...).Output()
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			if !strings.HasPrefix(string(out), "zeroclaw-bridge") {
				t.Errorf("stdout %q", out)
			}
		})
	}
}

// TestDemoAgentSubcommandSpeaksACP drives `zeroclaw-bridge demo-agent` by
// hand: initialize, session/new, one prompt with streamed chunks, then EOF.
func TestDemoAgentSubcommandSpeaksACP(t *testing.T) {
	var stderr testkit.LogBuffer
	child := acptest.StartChild(t, bridgeBinary(t), []string{"demo-agent", "-chunk-delay", "0"}, nil, &stderr, false)
	lines, stdin, done := child.Lines, child.Stdin, child.Exited

	read := func(id int) []string {
		var got []string
		timeout := time.After(5 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("demo agent closed stdout; stderr %s", stderr.String())
				}
				got = append(got, l)
				if strings.Contains(l, fmt.Sprintf(`"id":%d,`, id)) && strings.Contains(l, `"result"`) {
					return got
				}
			case <-timeout:
				t.Fatalf("no answer to request %d; got %q", id, got)
			}
		}
	}
	send := func(format string, a ...any) {
		if _, err := fmt.Fprintf(stdin, format+"\n", a...); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	read(1)
	send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	got := read(2)
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(got[len(got)-1]), &created); err != nil || created.Result.SessionID == "" {
		t.Fatalf("session/new answer %q: %v", got[len(got)-1], err)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"[User] hi there"}]}}`, created.Result.SessionID)
	got = read(3)
	if n := strings.Count(strings.Join(got, "\n"), "agent_message_chunk"); n < 2 || !strings.Contains(got[len(got)-1], "end_turn") {
		t.Errorf("%d chunks before the result; frames %q", n, got)
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Errorf("demo agent exit at stdin EOF: %v; stderr %s", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("demo agent did not exit at stdin EOF")
	}
}

// TestBridgeVoiceTurnsWithDemoAgent speaks to the built binary the way
// xiaozhi's ZeroClawLLM provider does, on both routes.
// Both agent protocols, each with the built-in demo agent speaking it:
// the same routes, the same replies, a barge-in, and /health naming the
// dialect.
func TestBridgeVoiceTurnsWithDemoAgent(t *testing.T) {
	for _, tc := range []struct{ protocol, dialect string }{{"acp", "v1"}, {"steerable", "steerable"}} {
		t.Run(tc.protocol, func(t *testing.T) { voiceTurnsWithDemoAgent(t, tc.protocol, tc.dialect) })
	}
}

func voiceTurnsWithDemoAgent(t *testing.T, protocol, dialect string) {
	p := startBridge(t, "AGENT_PROTOCOL="+protocol)
	_, h := p.health("the demo agent ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })
	if a := agentOf(h); a["dialect"] != dialect || a["agent_name"] != "zeroclaw-bridge-demo" {
		t.Errorf("/health agent %v, want dialect %s", a, dialect)
	}

	req := `{"content":"[Context] You are Dotty.\n\n[User] hello robot","channel":"dotty","session_id":"e2e","metadata":{"provider":"zeroclaw"}}`
	resp, err := http.Post("http://"+p.addr+"/api/message/stream", "application/json", strings.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/x-ndjson" {
		t.Fatalf("stream: %d %s", resp.StatusCode, ct)
	}
	var chunks []string
	var final map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		switch f["type"] {
		case "chunk":
			chunks = append(chunks, f["content"].(string))
		case "final":
			final = f
		}
	}
	text := strings.Join(chunks, "")
	if len(chunks) < 3 || final == nil || final["content"] != text || !strings.Contains(text, `"hello robot"`) || final["session_id"] != "e2e" {
		t.Errorf("chunks %q final %v", chunks, final)
	}

	resp, err = http.Post("http://"+p.addr+"/api/message", "application/json", strings.NewReader(`{"content":"second turn"}`))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if r, _ := out["response"].(string); !strings.Contains(r, `"second turn"`) || out["emotion"] == nil {
		t.Errorf("buffered reply %v", out)
	}

	testkit.WaitFor(t, 5*time.Second, "two conversation records", func() bool {
		files, _ := filepath.Glob(filepath.Join(p.stateDir, "logs", "convo-*.ndjson"))
		if len(files) != 1 {
			return false
		}
		b, _ := os.ReadFile(files[0])
		return strings.Count(string(b), "\n") == 2
	})
	if _, m := p.get("/metrics"); !strings.Contains(m, `dotty_request_duration_seconds_count{endpoint="message_stream"} 1`) {
		t.Error("stream turn not in the metrics")
	}

	// Barge-in: xiaozhi closes the stream after the first chunk; the turn
	// is cancelled in protocol and the conversation goes on.
	long := `{"content":"[User] ` + strings.Repeat("tell me a long story ", 5) + `","channel":"dotty","session_id":"e2e"}`
	ctx, cancel := context.WithCancel(context.Background())
	breq, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.addr+"/api/message/stream", strings.NewReader(long))
	breq.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(breq)
	if err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(first, `"type": "chunk"`) && !strings.Contains(first, `"type":"chunk"`) {
		t.Fatalf("first frame %q %v", first, err)
	}
	cancel()
	resp.Body.Close()
	testkit.WaitFor(t, 5*time.Second, "the barge-in logged", func() bool { return strings.Contains(p.log(), "barge-in") })
	resp, err = http.Post("http://"+p.addr+"/api/message", "application/json", strings.NewReader(`{"content":"after the barge-in","session_id":"e2e"}`))
	if err != nil {
		t.Fatal(err)
	}
	out = nil
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if r, _ := out["response"].(string); !strings.Contains(r, `"after the barge-in"`) {
		t.Errorf("turn after the barge-in: %v", out)
	}
}
