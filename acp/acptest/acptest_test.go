package acptest

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	MaybeRunHelper()
	os.Exit(m.Run())
}

// lineClient speaks raw JSON lines to a fake agent child.
type lineClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr strings.Builder
	exited chan error
}

func start(t *testing.T, mode string, env ...string) *lineClient {
	t.Helper()
	path, args, e := Command(mode, env...)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), e...)
	c := &lineClient{t: t, cmd: cmd, lines: make(chan string, 10000), exited: make(chan error, 1)}
	cmd.Stderr = &c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

func (c *lineClient) send(v string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, v+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next JSON frame, skipping non-JSON lines into noise.
func (c *lineClient) next(noise *[]string) map[string]any {
	c.t.Helper()
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.t.Fatal("agent closed stdout")
			}
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil {
				if noise != nil {
					*noise = append(*noise, l)
				}
				continue
			}
			return m
		case <-time.After(5 * time.Second):
			c.t.Fatal("no frame within 5s")
		}
	}
}

// until collects frames up to and including the response with id.
func (c *lineClient) until(id float64, noise *[]string) (notes []map[string]any, resp map[string]any) {
	c.t.Helper()
	for {
		m := c.next(noise)
		if v, ok := m["id"].(float64); ok && v == id && m["method"] == nil {
			return notes, m
		}
		notes = append(notes, m)
	}
}

func chunkTexts(notes []map[string]any) string {
	var b strings.Builder
	for _, n := range notes {
		p, _ := n["params"].(map[string]any)
		if n["method"] == "session/event" && p["type"] == "chunk" {
			b.WriteString(p["content"].(string))
		}
		if u, ok := p["update"].(map[string]any); ok && u["sessionUpdate"] == "agent_message_chunk" {
			b.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	return b.String()
}

func result(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	r, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %v", resp)
	}
	return r
}

func newSession(c *lineClient, id int) string {
	c.send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	_, resp := c.until(float64(id), nil)
	r := result(c.t, resp)
	if s, ok := r["sessionId"].(string); ok {
		return s
	}
	return r["session_id"].(string)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

const initFrame = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`

func TestEchoMode(t *testing.T) {
	c := start(t, "echo")
	c.send(initFrame)
	_, resp := c.until(1, nil)
	if r := result(t, resp); r["protocolVersion"] != float64(1) {
		t.Errorf("initialize %v", r)
	}
	sid := newSession(c, 2)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"hi"}]}}`)
	notes, resp := c.until(3, nil)
	if got := chunkTexts(notes); got != "😊 echo: hi" || len(notes) != 3 {
		t.Errorf("chunks %q in %d notes", got, len(notes))
	}
	if r := result(t, resp); r["stopReason"] != "end_turn" {
		t.Errorf("result %v", r)
	}
}

func TestSlowChunksCancel(t *testing.T) {
	c := start(t, "slow-chunks", "ZCB_ACPTEST_DELAY=100ms")
	c.send(initFrame)
	c.until(1, nil)
	sid := newSession(c, 2)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"go"}]}}`)
	c.next(nil) // first chunk
	c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`)
	_, resp := c.until(3, nil)
	if r := result(t, resp); r["stopReason"] != "cancelled" {
		t.Errorf("result %v", r)
	}
}

func TestLegacyL1(t *testing.T) {
	c := start(t, "legacy-l1")
	var noise []string
	c.send(initFrame)
	_, resp := c.until(1, &noise)
	if r := result(t, resp); r["protocolVersion"] != "1.0" {
		t.Errorf("initialize %v", r)
	}
	sid := newSession(c, 2)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"x"}]}}`)
	_, resp = c.until(3, &noise)
	if e, _ := resp["error"].(map[string]any); e["code"] != float64(-32602) {
		t.Errorf("array prompt answered %v, want -32602", resp)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"hello"}}`)
	notes, resp := c.until(4, &noise)
	if got := chunkTexts(notes); got != "😊 echo: hello" {
		t.Errorf("chunks %q", got)
	}
	if r := result(t, resp); r["content"] != "😊 echo: hello" {
		t.Errorf("result %v", r)
	}
	if len(noise) == 0 || !strings.Contains(strings.Join(noise, "\n"), "\x1b[") {
		t.Errorf("no stdout log noise (with ANSI colour) seen: %q", noise)
	}
}

func TestZeroClawV1(t *testing.T) {
	c := start(t, "zeroclaw-v1")
	c.send(initFrame)
	_, resp := c.until(1, nil)
	meta, _ := result(t, resp)["_meta"].(map[string]any)
	if _, ok := meta["zeroclaw"]; !ok {
		t.Errorf("no _meta.zeroclaw in %v", resp)
	}
	sid := newSession(c, 2)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"hey"}}`)
	notes, resp := c.until(3, nil)
	if chunkTexts(notes) != "😊 echo: hey" || result(t, resp)["content"] != "😊 echo: hey" {
		t.Errorf("chunks %q result %v", chunkTexts(notes), resp)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"slow one"}}`)
	c.next(nil)
	c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`)
	notes, resp = c.until(4, nil)
	marker := false
	for _, n := range notes {
		if u, ok := n["params"].(map[string]any)["update"].(map[string]any); ok && u["toolCallId"] == "turn-cancelled-"+sid {
			marker = true
		}
	}
	r := result(t, resp)
	if !marker || r["stopReason"] != "cancelled" || !strings.Contains(r["content"].(string), "[turn cancelled via client]") {
		t.Errorf("cancel: marker %v result %v", marker, r)
	}
}

func TestPermMode(t *testing.T) {
	c := start(t, "perm")
	c.send(initFrame)
	c.until(1, nil)
	sid := newSession(c, 2)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"tool:shell"}]}}`)
	var req map[string]any
	for req == nil {
		if m := c.next(nil); m["method"] == "session/request_permission" {
			req = m
		}
	}
	var kinds []string
	for _, o := range req["params"].(map[string]any)["options"].([]any) {
		kinds = append(kinds, o.(map[string]any)["kind"].(string))
	}
	if strings.Join(kinds, ",") != "allow_once,allow_always,reject_with_edit,reject_once" {
		t.Errorf("option kinds %v", kinds)
	}
	id, _ := json.Marshal(req["id"])
	c.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}`)
	notes, _ := c.until(3, nil)
	if got := chunkTexts(notes); got != "😊 outcome=allow-once" {
		t.Errorf("chunks %q", got)
	}
}

func TestFloodMode(t *testing.T) {
	c := start(t, "flood", "ZCB_ACPTEST_FLOOD=3000")
	c.send(initFrame)
	c.until(1, nil)
	sid := newSession(c, 2)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"go"}]}}`)
	notes, _ := c.until(3, nil)
	if got := chunkTexts(notes); got != strings.Repeat("x", 3000) {
		t.Errorf("got %d bytes of chunks", len(got))
	}
}

func TestExitOne(t *testing.T) {
	c := start(t, "exit-1")
	var ee *exec.ExitError
	select {
	case err := <-c.exited:
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(c.stderr.String(), "config file missing") {
			t.Errorf("exit %v stderr %q", err, c.stderr.String())
		}
		c.exited <- err // for cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("exit-1 did not exit")
	}
}

func TestCrashAfterInitCountsRuns(t *testing.T) {
	dir := t.TempDir()
	for run, wantCrash := range []bool{true, false} {
		c := start(t, "crash-after-init", "ZCB_ACPTEST_STATE_DIR="+dir, "ZCB_ACPTEST_CRASHES=1")
		c.send(initFrame)
		c.until(1, nil)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
		if wantCrash {
			select {
			case err := <-c.exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 3 {
					t.Errorf("run %d: exit %v, want status 3", run, err)
				}
				c.exited <- err
			case <-time.After(5 * time.Second):
				t.Fatalf("run %d did not crash", run)
			}
			continue
		}
		if _, resp := c.until(2, nil); resp["result"] == nil {
			t.Errorf("run %d: session/new %v", run, resp)
		}
	}
}
