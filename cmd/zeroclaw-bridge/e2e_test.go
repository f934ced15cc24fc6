package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// bridgeBinary builds the command once per test run.
func bridgeBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zcb-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "zeroclaw-bridge")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// bridgeProc is a running bridge binary.
type bridgeProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	stderr strings.Builder
	exited chan error
}

var listenLine = regexp.MustCompile(`http server listening: addr=(\S+)`)

// startBridge runs the binary with env (plus a PATH without zeroclaw and
// PORT=0) and waits for its listening address.
func startBridge(t *testing.T, env ...string) *bridgeProc {
	t.Helper()
	if _, err := os.Stat(fallbackZeroclaw); err == nil {
		t.Skip("a real zeroclaw is installed at " + fallbackZeroclaw + "; the demo-agent path cannot be tested here")
	}
	p := &bridgeProc{t: t, exited: make(chan error, 1)}
	p.cmd = exec.Command(bridgeBinary(t))
	p.cmd.Env = append([]string{"PATH=" + t.TempDir(), "BRIDGE_HOST=127.0.0.1", "PORT=0", "LOG_LEVEL=debug", "GORACE=atexit_sleep_ms=0"}, env...)
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
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
		}
		if t.Failed() {
			t.Log("bridge stderr:\n" + p.log())
		}
	})
	select {
	case p.addr = <-addr:
	case err := <-p.exited:
		t.Fatalf("bridge exited early: %v\n%s", err, p.log())
	case <-time.After(10 * time.Second):
		t.Fatalf("bridge never listened:\n%s", p.log())
	}
	return p
}

func (p *bridgeProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func (p *bridgeProc) get(path string) (int, string) {
	p.t.Helper()
	resp, err := http.Get("http://" + p.addr + path)
	if err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// health polls /health until ready(h) or 10 s pass.
func (p *bridgeProc) health(ready func(map[string]any) bool) (string, map[string]any) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := p.get("/health")
		var h map[string]any
		if code != 200 || json.Unmarshal([]byte(body), &h) != nil {
			p.t.Fatalf("/health: %d %s", code, body)
		}
		if ready(h) {
			return body, h
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("/health never became ready: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends sig and returns the exit error and how long the exit took.
func (p *bridgeProc) stop(sig syscall.Signal) (error, time.Duration) {
	p.t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		return err, time.Since(start)
	case <-time.After(10 * time.Second):
		p.t.Fatal("bridge did not exit within 10 s of the signal")
		return nil, 0
	}
}

func gone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("agent pid %d still exists (kill 0: %v)", pid, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBridgeRunsDemoAgentAndStopsCleanly(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startBridge(t)
			body, h := p.health(func(h map[string]any) bool {
				a, _ := h["agent"].(map[string]any)
				return a["state"] == "ready"
			})
			keys := []string{`"status":"ok"`, `"service":"zeroclaw-bridge"`, `"acp_running":true`, `"cached_session":false`, `"session_turns":0`, `"agent":`}
			last := -1
			for _, k := range keys {
				i := strings.Index(body, k)
				if i <= last {
					t.Fatalf("/health %s: %s missing or out of order", body, k)
				}
				last = i
			}
			agent := h["agent"].(map[string]any)
			if agent["dialect"] != "v1" || agent["agent_name"] != "zeroclaw-bridge-demo" {
				t.Errorf("agent %v", agent)
			}
			if n := strings.Count(p.log(), "running the built-in demo agent"); n != 1 {
				t.Errorf("%d demo-agent WARN lines, want 1", n)
			}
			for _, path := range []string{"/metrics", "/metrics/"} {
				code, m := p.get(path)
				if code != 200 || !strings.Contains(m, "dotty_request_duration_seconds") || !strings.Contains(m, "dotty_acp_child_up 1") {
					t.Errorf("%s: %d, missing series", path, code)
				}
			}
			pid := int(agent["pid"].(float64))
			err, took := p.stop(sig)
			if err != nil {
				t.Errorf("exit after %s: %v", sig, err)
			}
			if took > 5*time.Second {
				t.Errorf("shutdown took %s, want under 5 s", took)
			}
			gone(t, pid)
		})
	}
}

func TestBridgeStartsWithMissingAgentBinary(t *testing.T) {
	p := startBridge(t, "ZEROCLAW_BIN=/nonexistent/zeroclaw")
	_, h := p.health(func(h map[string]any) bool {
		a, _ := h["agent"].(map[string]any)
		return a["binary_missing"] == true
	})
	agent := h["agent"].(map[string]any)
	if h["acp_running"] != false || !strings.Contains(agent["last_error"].(string), "/nonexistent/zeroclaw") {
		t.Errorf("health %v", h)
	}
	if err, _ := p.stop(syscall.SIGTERM); err != nil {
		t.Errorf("exit: %v", err)
	}
}

func TestBridgeRejectsInvalidConfig(t *testing.T) {
	cmd := exec.Command(bridgeBinary(t))
	cmd.Env = []string{"ZEROCLAW_SESSION_MAX_TURNS=lots", "PATH=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2", err)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "ZEROCLAW_SESSION_MAX_TURNS") {
		t.Errorf("output %q: want one line naming the variable", out)
	}
}

func TestDemoAgentSubcommandSpeaksACP(t *testing.T) {
	cmd := exec.Command(bridgeBinary(t), "demo-agent", "-chunk-delay", "0")
	cmd.Env = []string{"GORACE=atexit_sleep_ms=0"}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	read := func(id string) []string {
		var got []string
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("demo agent closed stdout")
				}
				got = append(got, l)
				if strings.Contains(l, `"id":`+id+`,`) && strings.Contains(l, `"result"`) {
					return got
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no answer to request %s; got %q", id, got)
			}
		}
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	read("1")
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	var sid struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	got := read("2")
	_ = json.Unmarshal([]byte(got[len(got)-1]), &sid)
	fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"[User] hi there"}]}}`+"\n", sid.Result.SessionID)
	got = read("3")
	if n := strings.Count(strings.Join(got, "\n"), "agent_message_chunk"); n < 3 || !strings.Contains(got[len(got)-1], "end_turn") {
		t.Errorf("%d chunks; frames %q", n, got)
	}
	_ = stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo agent exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("demo agent did not exit at stdin EOF")
	}
}
