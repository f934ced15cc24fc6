package acptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	*Child
	t      *testing.T
	stderr strings.Builder
}

// waitLimit bounds every wait for the agent: only a hung agent gets near
// it (a 12 MiB line took over 5 s under -race on a loaded machine).
const waitLimit = time.Minute

func start(t *testing.T, mode string, env ...string) *lineClient {
	t.Helper()
	path, args, e := Command(mode, env...)
	c := &lineClient{t: t}
	c.Child = StartChild(t, path, args, e, &c.stderr, false)
	return c
}

// next returns the next JSON frame, skipping non-JSON lines into noise.
func (c *lineClient) next(noise *[]string) map[string]any {
	c.t.Helper()
	for {
		l := c.Next(waitLimit)
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			if noise != nil {
				*noise = append(*noise, l)
			}
			continue
		}
		return m
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
	c.Send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	_, resp := c.until(float64(id), nil)
	r := result(c.t, resp)
	if s, ok := r["sessionId"].(string); ok {
		return s
	}
	return r["session_id"].(string)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

const initFrame = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`

// initialize starts mode and initializes it, returning its initialize
// result.
func initialize(t *testing.T, mode string, env ...string) (*lineClient, map[string]any) {
	t.Helper()
	c := start(t, mode, env...)
	c.Send(initFrame)
	_, resp := c.until(1, nil)
	return c, result(t, resp)
}

// ready starts mode, initializes it and opens a session.
func ready(t *testing.T, mode string, env ...string) (*lineClient, string) {
	t.Helper()
	c, _ := initialize(t, mode, env...)
	return c, newSession(c, 2)
}

func prompt(id int, sid, text string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/prompt",
		"params": map[string]any{"sessionId": sid, "prompt": []any{map[string]string{"type": "text", "text": text}}}})
	return string(b)
}

func cancelFrame(sid string) string {
	return `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`
}

func rpcCode(resp map[string]any) float64 {
	e, _ := resp["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

// exitCode waits for the child to exit and returns its status.
func (c *lineClient) exitCode() int {
	c.t.Helper()
	err := c.Wait(waitLimit)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		c.t.Fatalf("wait: %v", err)
	}
	return 0
}

func TestEchoMode(t *testing.T) {
	c, r := initialize(t, "echo")
	caps, _ := r["agentCapabilities"].(map[string]any)
	sc, _ := caps["sessionCapabilities"].(map[string]any)
	if r["protocolVersion"] != float64(1) || caps["loadSession"] == true || sc["close"] == nil {
		t.Errorf("initialize %v", r)
	}
	sid := newSession(c, 2)
	c.Send(prompt(3, sid, "hi"))
	notes, resp := c.until(3, nil)
	if got := chunkTexts(notes); got != "😊 echo: hi" || len(notes) != 3 {
		t.Errorf("chunks %q in %d notes", got, len(notes))
	}
	if r := result(t, resp); r["stopReason"] != "end_turn" {
		t.Errorf("result %v", r)
	}
	c.Send(prompt(4, sid, "please FAIL"))
	if _, resp := c.until(4, nil); rpcCode(resp) != -32603 {
		t.Errorf("FAIL prompt answered %v", resp)
	}
	c.Send(`{"jsonrpc":"2.0","id":5,"method":"session/close","params":{"sessionId":"` + sid + `"}}`)
	if _, resp := c.until(5, nil); resp["error"] != nil {
		t.Errorf("close answered %v", resp)
	}
	c.Send(prompt(6, sid, "gone?"))
	if _, resp := c.until(6, nil); rpcCode(resp) != -32000 {
		t.Errorf("prompt on a closed session answered %v", resp)
	}
	_ = c.Stdin.Close()
	if code := c.exitCode(); code != 0 {
		t.Errorf("exit status %d at stdin EOF", code)
	}
}

func TestSlowChunksCancel(t *testing.T) {
	c, sid := ready(t, "slow-chunks", "ZCB_ACPTEST_DELAY=100ms")
	c.Send(prompt(3, sid, "go"))
	c.next(nil) // the first chunk: the turn is running
	c.Send(cancelFrame(sid))
	notes, resp := c.until(3, nil)
	if r := result(t, resp); r["stopReason"] != "cancelled" || len(notes) > 3 {
		t.Errorf("result %v after %d more chunks", r, len(notes))
	}
}

// TestSlowChunksGate: with ZCB_ACPTEST_GATE a turn holds after its first
// chunk until the file exists, then ends normally; a held turn is
// cancellable, and each session/cancel is reported on stderr.
func TestSlowChunksGate(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	c, sid := ready(t, "slow-chunks", "ZCB_ACPTEST_CHUNKS=3", "ZCB_ACPTEST_DELAY=1ms", "ZCB_ACPTEST_GATE="+gate)
	c.Send(prompt(3, sid, "held"))
	if first := chunkTexts([]map[string]any{c.next(nil)}); first != "c0 " {
		t.Fatalf("first frame %q, want the chunk c0", first)
	}
	c.Send(cancelFrame(sid))
	if notes, resp := c.until(3, nil); result(t, resp)["stopReason"] != "cancelled" || len(notes) != 0 {
		t.Errorf("held turn cancelled: result %v after %d more frames, want cancelled after none", resp, len(notes))
	}

	c.Send(prompt(4, sid, "released"))
	c.next(nil) // c0: the turn waits for the gate
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	notes, resp := c.until(4, nil)
	if r := result(t, resp); r["stopReason"] != "end_turn" || chunkTexts(notes) != "c1 c2 " {
		t.Errorf("released turn: result %v, chunks %q after c0, want end_turn after c1 c2", r, chunkTexts(notes))
	}
	_ = c.Stdin.Close()
	if code := c.exitCode(); code != 0 {
		t.Errorf("exit status %d at stdin EOF", code)
	}
	// stderr is complete once the process has exited.
	if n := strings.Count(c.stderr.String(), "acptest: session/cancel "+sid); n != 1 {
		t.Errorf("stderr reports %d cancels of %s, want 1:\n%s", n, sid, c.stderr.String())
	}
}

func TestLostSessionAndBusy(t *testing.T) {
	for _, tt := range []struct {
		mode string
		code float64
	}{{"lost-session", -32000}, {"busy", -32002}} {
		c, sid := ready(t, tt.mode)
		c.Send(prompt(3, sid, "a"))
		if _, resp := c.until(3, nil); rpcCode(resp) != tt.code {
			t.Errorf("%s: first prompt answered %v", tt.mode, resp)
		}
		sid = newSession(c, 4)
		c.Send(prompt(5, sid, "b"))
		if notes, resp := c.until(5, nil); resp["result"] == nil || chunkTexts(notes) != "😊 echo: b" {
			t.Errorf("%s: second prompt answered %v", tt.mode, resp)
		}
	}
}

func TestLegacyL1(t *testing.T) {
	c := start(t, "legacy-l1")
	var noise []string
	c.Send(initFrame)
	_, resp := c.until(1, &noise)
	if r := result(t, resp); r["protocolVersion"] != "1.0" {
		t.Errorf("initialize %v", r)
	}
	sid := newSession(c, 2)
	c.Send(prompt(3, sid, "x"))
	_, resp = c.until(3, &noise)
	if e, _ := resp["error"].(map[string]any); e["code"] != float64(-32602) || e["message"] != "Missing required parameter: prompt" {
		t.Errorf("array prompt answered %v, want -32602", resp)
	}
	c.Send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"hello"}}`)
	notes, resp := c.until(4, &noise)
	if got := chunkTexts(notes); got != "😊 echo: hello" {
		t.Errorf("chunks %q", got)
	}
	types := map[any]int{}
	for _, n := range notes {
		p, _ := n["params"].(map[string]any)
		if n["method"] != "session/event" || p["sessionId"] != sid {
			t.Errorf("notification %v", n)
		}
		types[p["type"]]++
	}
	if types["chunk"] != 3 || types["thinking"] != 1 || types["tool_call"] != 1 || types["tool_result"] != 1 {
		t.Errorf("event types %v", types)
	}
	if r := result(t, resp); r["content"] != "😊 echo: hello" || r["sessionId"] != sid || r["stopReason"] != nil {
		t.Errorf("result %v", r)
	}
	if len(noise) == 0 || !strings.Contains(strings.Join(noise, "\n"), "\x1b[") {
		t.Errorf("no stdout log noise (with ANSI colour) seen: %q", noise)
	}
}

func TestLegacyL0SnakeCase(t *testing.T) {
	c, r := initialize(t, "legacy-l0")
	if r["protocol_version"] != "1.0" || r["server_info"] == nil {
		t.Errorf("initialize %v", r)
	}
	sid := newSession(c, 2)
	c.Send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"session_id":"` + sid + `","prompt":"FAIL now"}}`)
	if _, resp := c.until(3, nil); rpcCode(resp) != -32603 {
		t.Errorf("FAIL answered %v", resp)
	}
	c.Send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"session_id":"` + sid + `","prompt":"again"}}`)
	if _, resp := c.until(4, nil); rpcCode(resp) != -32000 {
		t.Errorf("prompt after a failed turn answered %v, want -32000", resp)
	}
	sid = newSession(c, 5)
	c.Send(`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"session_id":"` + sid + `","prompt":"ok"}}`)
	notes, resp := c.until(6, nil)
	if r := result(t, resp); r["session_id"] != sid || r["content"] != "😊 echo: ok" || chunkTexts(notes) != "😊 echo: ok" {
		t.Errorf("result %v chunks %q", r, chunkTexts(notes))
	}
}

func TestLegacyL2(t *testing.T) {
	c, r := initialize(t, "legacy-l2")
	if methods, _ := json.Marshal(r["methods"]); !strings.Contains(string(methods), `"session/update"`) {
		t.Errorf("initialize %v", r)
	}
	sid := newSession(c, 2)
	c.Send(prompt(3, sid, "hey"))
	notes, resp := c.until(3, nil)
	if r := result(t, resp); r["stopReason"] != "end_turn" || r["content"] != "😊 echo: hey" || chunkTexts(notes) != "😊 echo: hey" {
		t.Errorf("result %v chunks %q", r, chunkTexts(notes))
	}
}

func TestZeroClawV1(t *testing.T) {
	c, r := initialize(t, "zeroclaw-v1")
	meta, _ := r["_meta"].(map[string]any)
	zc, _ := meta["zeroclaw"].(map[string]any)
	info, _ := r["agentInfo"].(map[string]any)
	if zc["maxSessions"] != float64(10) || zc["defaultModel"] != "demo-model" || info["name"] != "zeroclaw-acp" {
		t.Errorf("initialize %v", r)
	}
	sid := newSession(c, 2)
	c.Send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":"hey"}}`)
	notes, resp := c.until(3, nil)
	if chunkTexts(notes) != "😊 echo: hey" || len(notes) != 3 || result(t, resp)["content"] != "😊 echo: hey" {
		t.Errorf("chunks %q result %v", chunkTexts(notes), resp)
	}
	c.Send(prompt(4, sid, "slow one"))
	c.next(nil) // the first tick
	c.Send(prompt(5, sid, "second"))
	c.Send(cancelFrame(sid))
	var busy map[string]any
	notes = nil
	for resp = nil; resp == nil; {
		m := c.next(nil)
		switch m["id"] {
		case float64(4):
			resp = m
		case float64(5):
			busy = m
		default:
			notes = append(notes, m)
		}
	}
	if rpcCode(busy) != -32002 {
		t.Errorf("concurrent prompt answered %v, want -32002", busy)
	}
	marker := false
	for _, n := range notes {
		p, _ := n["params"].(map[string]any)
		if u, ok := p["update"].(map[string]any); ok && u["toolCallId"] == "turn-cancelled-"+sid {
			marker = true
		}
	}
	r = result(t, resp)
	if content, _ := r["content"].(string); !marker || r["stopReason"] != "cancelled" ||
		!strings.HasPrefix(content, "tick ") || !strings.HasSuffix(content, "\n\n[turn cancelled via client]") {
		t.Errorf("cancel: marker %v result %v", marker, r)
	}
	// The third prompt of the process is preceded by history_trimmed.
	c.Send(prompt(6, sid, "third"))
	notes, _ = c.until(6, nil)
	if len(notes) == 0 || notes[0]["method"] != "_zeroclaw/history_trimmed" {
		t.Errorf("third prompt's notifications %v", notes)
	}
	c.Send(`{"jsonrpc":"2.0","id":7,"method":"session/stop","params":{"sessionId":"` + sid + `"}}`)
	if _, resp := c.until(7, nil); result(t, resp)["stopped"] != true {
		t.Errorf("stop answered %v", resp)
	}
	c.Send(`{"jsonrpc":"2.0","id":8,"method":"session/nope","params":{}}`)
	if _, resp := c.until(8, nil); rpcCode(resp) != -32601 {
		t.Errorf("unknown method answered %v", resp)
	}
}

// ZeroClaw of May 2026 runs a tool to its end whatever the cancel; the
// session stays busy (-32002) until then, and the cancelled result carries
// that version's suffix and no marker. ZeroClaw 0.8.4 interrupts the tool.
func TestZeroClawToolCancel(t *testing.T) {
	for _, may := range []bool{true, false} {
		t.Run(fmt.Sprint("may=", may), func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "tool-done")
			env := []string{"ZCB_ACPTEST_GATE=" + gate}
			if may {
				env = append(env, "ZCB_ACPTEST_ZEROCLAW=0.8.0-beta-1")
			}
			c, sid := ready(t, "zeroclaw-v1", env...)
			c.Send(prompt(3, sid, "use a tool"))
			for {
				u, _ := c.next(nil)["params"].(map[string]any)["update"].(map[string]any)
				if u["sessionUpdate"] == "tool_call" {
					break
				}
			}
			c.Send(cancelFrame(sid))
			if may {
				c.Send(prompt(4, sid, "too soon"))
				if _, resp := c.until(4, nil); rpcCode(resp) != -32002 {
					t.Errorf("prompt during the tool: %v, want -32002", resp)
				}
				if err := os.WriteFile(gate, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			notes, resp := c.until(3, nil)
			r := result(t, resp)
			content, _ := r["content"].(string)
			marker := strings.Contains(fmt.Sprint(notes), "turn-cancelled-")
			if r["stopReason"] != "cancelled" {
				t.Errorf("result %v", r)
			}
			if may && (!strings.HasSuffix(content, "\n\n[interrupted by user]") || marker) {
				t.Errorf("May 2026: content %q, marker %v", content, marker)
			}
			if !may && (!strings.HasSuffix(content, "[turn cancelled via client]") || !marker) {
				t.Errorf("0.8.4: content %q, marker %v", content, marker)
			}
		})
	}
}

func TestZeroClawRequiresAlias(t *testing.T) {
	c, _ := initialize(t, "zeroclaw-v1", "ZCB_ACPTEST_REQUIRE_ALIAS=dotty", "ZCB_ACPTEST_CONTENT=override")
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"mcpServers":[]}}`)
	if _, resp := c.until(2, nil); rpcCode(resp) != -32602 {
		t.Errorf("session/new without alias answered %v", resp)
	}
	c.Send(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"mcpServers":[],"agentAlias":"dotty"}}`)
	_, resp := c.until(3, nil)
	sid, _ := result(t, resp)["sessionId"].(string)
	c.Send(prompt(4, sid, "hi"))
	notes, resp := c.until(4, nil)
	if result(t, resp)["content"] != "😊 from content" || chunkTexts(notes) != "😊 echo: hi" {
		t.Errorf("result %v chunks %q", resp, chunkTexts(notes))
	}
}

func TestPermMode(t *testing.T) {
	c, sid := ready(t, "perm")
	c.Send(prompt(3, sid, "tool:shell"))
	var req, call map[string]any
	for req == nil {
		m := c.next(nil)
		switch m["method"] {
		case "session/request_permission":
			req = m
		case "session/update":
			call = m["params"].(map[string]any)["update"].(map[string]any)
		}
	}
	if call["sessionUpdate"] != "tool_call" || call["toolCallId"] != "call-1" || call["title"] != "shell" || call["status"] != "pending" {
		t.Errorf("tool_call update %v", call)
	}
	params := req["params"].(map[string]any)
	var kinds []string
	for _, o := range params["options"].([]any) {
		kinds = append(kinds, o.(map[string]any)["optionId"].(string)+"="+o.(map[string]any)["kind"].(string))
	}
	if got := strings.Join(kinds, ","); got != "allow-once=allow_once,allow-always=allow_always,reject-with-edit=reject_with_edit,reject-once=reject_once" {
		t.Errorf("options %v", got)
	}
	if tc := params["toolCall"].(map[string]any); tc["toolCallId"] != "approval-1" || tc["title"] != "Approve shell?" {
		t.Errorf("toolCall %v", tc)
	}
	id, _ := json.Marshal(req["id"])
	c.Send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}`)
	notes, resp := c.until(3, nil)
	if got := chunkTexts(notes); got != "😊 outcome=allow-once" || result(t, resp)["stopReason"] != "end_turn" {
		t.Errorf("chunks %q result %v", got, resp)
	}
}

// The perm mode's "tools:" prompts put permission requests and tool_call
// updates on the wire in the order, with the ids and titles, each real
// agent's source does.
func TestToolShapesOnTheWire(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"zeroclaw:weather,camera.take_photo", "ask approval-1 Approve weather? | call call-1 weather | done call-1 | " +
			"ask approval-2 Approve camera.take_photo? | call call-2 camera.take_photo | done call-2"},
		{"zeroclaw/fr:weather", "ask approval-1 Approuver weather ? | call call-1 weather | done call-1"},
		{"zeroclaw/ja:weather", "ask approval-1 weather を承認しますか？ | call call-1 weather | done call-1"},
		{"zeroclaw-may:camera.take_photo,weather", "call call-1 camera.take_photo | call call-2 weather | " +
			"ask approval-1 Approve camera.take_photo? | ask approval-2 Approve weather? | done call-1 | done call-2"},
		{"codex:weather,shell|ls -la", "ask call-1 Approve weather | call call-1 Tool: robot/weather | done call-1 | " +
			"ask call-2 ls -la | call call-2 Tool: robot/shell | done call-2"},
		{"claude:weather", "call toolu_1 mcp__robot__weather | ask toolu_1 mcp__robot__weather | done toolu_1"},
		{"gemini:weather,run_shell_command|ls -la", "ask weather weather (robot MCP Server) | done weather | " +
			"ask run_shell_command ls -la | done run_shell_command"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			c, sid := ready(t, "perm")
			c.Send(prompt(3, sid, "tools:"+tt.spec))
			var seen []string
			for {
				m := c.next(nil)
				if v, ok := m["id"].(float64); ok && v == 3 && m["method"] == nil {
					break
				}
				params, _ := m["params"].(map[string]any)
				switch m["method"] {
				case "session/request_permission":
					tc := params["toolCall"].(map[string]any)
					id, _ := tc["toolCallId"].(string)
					if strings.HasPrefix(tt.spec, "gemini") {
						id, _, _ = strings.Cut(id, "-") // <name>-<ms>-<n>
					}
					seen = append(seen, "ask "+id+" "+tc["title"].(string))
					allow := ""
					for _, o := range params["options"].([]any) {
						if o := o.(map[string]any); o["kind"] == "allow_once" && allow == "" {
							allow = o["optionId"].(string)
						}
					}
					rid, _ := json.Marshal(m["id"])
					c.Send(`{"jsonrpc":"2.0","id":` + string(rid) + `,"result":{"outcome":{"outcome":"selected","optionId":"` + allow + `"}}}`)
				case "session/update":
					u := params["update"].(map[string]any)
					id, _ := u["toolCallId"].(string)
					if strings.HasPrefix(tt.spec, "gemini") {
						id, _, _ = strings.Cut(id, "-")
					}
					switch u["sessionUpdate"] {
					case "tool_call":
						seen = append(seen, "call "+id+" "+u["title"].(string))
					case "tool_call_update":
						seen = append(seen, "done "+id)
					}
				}
			}
			if got := strings.Join(seen, " | "); got != tt.want {
				t.Errorf("wire\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestFloodMode(t *testing.T) {
	c, sid := ready(t, "flood", "ZCB_ACPTEST_FLOOD=3000")
	c.Send(prompt(3, sid, "go"))
	notes, resp := c.until(3, nil)
	if got := chunkTexts(notes); got != strings.Repeat("x", 3000) || len(notes) != 3000 {
		t.Errorf("got %d notifications, %d bytes of chunks", len(notes), len(got))
	}
	if r := result(t, resp); r["stopReason"] != "end_turn" {
		t.Errorf("result %v", r)
	}
}

func TestBigModes(t *testing.T) {
	c, sid := ready(t, "bigline")
	c.Send(prompt(3, sid, "big"))
	notes, _ := c.until(3, nil)
	if got := chunkTexts(notes); len(notes) != 2 || len(got) != 12<<20+len("😊 small") || !strings.HasSuffix(got, "a😊 small") {
		t.Errorf("bigline: %d notifications, %d bytes", len(notes), len(got))
	}
	c, sid = ready(t, "bigresult")
	c.Send(prompt(3, sid, "big"))
	line := ""
	for line == "" {
		if l := c.Next(waitLimit); strings.Contains(l, `"id":3`) {
			line = l
		}
	}
	if len(line) <= 12<<20 || !strings.Contains(line, `"stopReason":"end_turn"`) {
		t.Errorf("bigresult response of %d bytes", len(line))
	}
}

func TestExitOne(t *testing.T) {
	c := start(t, "exit-1")
	if code := c.exitCode(); code != 1 || !strings.Contains(c.stderr.String(), "error: config file missing") {
		t.Errorf("exit %d stderr %q", code, c.stderr.String())
	}
}

func TestCrashAfterInitCountsRuns(t *testing.T) {
	dir := t.TempDir()
	for run, wantCrash := range []bool{true, false} {
		c, _ := initialize(t, "crash-after-init", "ZCB_ACPTEST_STATE_DIR="+dir, "ZCB_ACPTEST_CRASHES=1")
		c.Send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
		if wantCrash {
			if code := c.exitCode(); code != 3 {
				t.Errorf("run %d: exit status %d, want 3", run, code)
			}
			continue
		}
		if _, resp := c.until(2, nil); resp["result"] == nil {
			t.Errorf("run %d: session/new %v", run, resp)
		}
	}
}

func TestCrashMidTurn(t *testing.T) {
	c, sid := ready(t, "crash-mid-turn")
	c.Send(prompt(3, sid, "doomed"))
	if m := c.next(nil); m["method"] != "session/update" {
		t.Errorf("first frame %v, want a chunk", m)
	}
	if code := c.exitCode(); code != 4 {
		t.Errorf("exit status %d, want 4", code)
	}
}

// zeroclaw-v1's session store, read from ZeroClaw's: a session outlives
// its process in the store; session/resume reopens it without a word,
// session/load replays its conversation first, and the reopened session
// remembers it ("recall"). A cancelled turn is not stored.
func TestZeroClawSessionStore(t *testing.T) {
	store := t.TempDir()
	c, sid := ready(t, "zeroclaw-v1", "ZCB_ACPTEST_STORE="+store)
	c.Send(prompt(3, sid, "my name is Ada"))
	c.until(3, nil)
	c.Send(prompt(4, sid, "use a tool"))
	c.until(4, nil)
	c.Send(prompt(5, sid, "slow story"))
	c.next(nil) // the first tick
	c.Send(cancelFrame(sid))
	c.until(5, nil)
	c.Send(prompt(6, sid, "recall"))
	if notes, resp := c.until(6, nil); chunkTexts(notes) != Recall(2, "use a tool") || result(t, resp)["content"] != Recall(2, "use a tool") {
		t.Errorf("recall in the first process: %q %v", chunkTexts(notes), resp)
	}
	if _, err := os.Stat(filepath.Join(store, "sessions", "acp-sessions.json")); err != nil {
		t.Fatalf("no store file: %v", err)
	}
	_ = c.Stdin.Close()
	if code := c.exitCode(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	earlier := 3 // turns stored: each subtest adds one
	for _, method := range []string{"session/resume", "session/load"} {
		t.Run(method, func(t *testing.T) {
			defer func() { earlier++ }()
			c, r := initialize(t, "zeroclaw-v1", "ZCB_ACPTEST_STORE="+store)
			caps, _ := r["agentCapabilities"].(map[string]any)
			if sc, _ := caps["sessionCapabilities"].(map[string]any); caps["loadSession"] != true || sc["resume"] == nil || sc["close"] == nil {
				t.Errorf("capabilities %v", caps)
			}
			c.Send(`{"jsonrpc":"2.0","id":2,"method":"` + method + `","params":{"sessionId":"` + sid + `","mcpServers":[]}}`)
			notes, resp := c.until(2, nil)
			result(t, resp)
			var kinds []string
			for _, n := range notes {
				u, _ := n["params"].(map[string]any)["update"].(map[string]any)
				kinds = append(kinds, fmt.Sprint(u["sessionUpdate"]))
			}
			want := ""
			if method == "session/load" {
				want = "user_message_chunk agent_message_chunk user_message_chunk tool_call tool_call_update agent_message_chunk" +
					strings.Repeat(" user_message_chunk agent_message_chunk", earlier-2)
			}
			if got := strings.Join(kinds, " "); got != want {
				t.Errorf("replayed %q, want %q", got, want)
			}
			c.Send(`{"jsonrpc":"2.0","id":3,"method":"` + method + `","params":{"sessionId":"` + sid + `","mcpServers":[]}}`)
			if _, resp := c.until(3, nil); rpcCode(resp) != -32602 {
				t.Errorf("reopening a live session answered %v, want -32602", resp)
			}
			c.Send(`{"jsonrpc":"2.0","id":4,"method":"` + method + `","params":{"sessionId":"nope","mcpServers":[]}}`)
			if _, resp := c.until(4, nil); rpcCode(resp) != -32000 {
				t.Errorf("an unknown session answered %v, want -32000", resp)
			}
			c.Send(prompt(5, sid, "recall"))
			if notes, _ := c.until(5, nil); chunkTexts(notes) != Recall(earlier, "recall") {
				t.Errorf("recall after %s: %q", method, chunkTexts(notes))
			}
			// session/close forgets the live session; the store keeps it.
			c.Send(`{"jsonrpc":"2.0","id":6,"method":"session/close","params":{"sessionId":"` + sid + `"}}`)
			c.until(6, nil)
			c.Send(`{"jsonrpc":"2.0","id":7,"method":"session/resume","params":{"sessionId":"` + sid + `"}}`)
			if _, resp := c.until(7, nil); resp["error"] != nil {
				t.Errorf("resume after close answered %v", resp)
			}
		})
	}
}

// Without its store (ZCB_ACPTEST_STORE=off) zeroclaw-v1 advertises none of
// its methods and knows no earlier session; with ZCB_ACPTEST_RESTORE=load
// it loads but cannot resume.
func TestZeroClawStoreOffAndLoadOnly(t *testing.T) {
	c, r := initialize(t, "zeroclaw-v1", "ZCB_ACPTEST_STORE=off")
	caps, _ := r["agentCapabilities"].(map[string]any)
	if sc, _ := caps["sessionCapabilities"].(map[string]any); caps["loadSession"] != false || len(sc) != 0 {
		t.Errorf("capabilities without a store %v", caps)
	}
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"s"}}`)
	if _, resp := c.until(2, nil); rpcCode(resp) != -32000 {
		t.Errorf("resume without a store answered %v, want -32000", resp)
	}

	c, r = initialize(t, "zeroclaw-v1", "ZCB_ACPTEST_STORE="+t.TempDir(), "ZCB_ACPTEST_RESTORE=load")
	caps, _ = r["agentCapabilities"].(map[string]any)
	if sc, _ := caps["sessionCapabilities"].(map[string]any); caps["loadSession"] != true || sc["resume"] != nil {
		t.Errorf("load-only capabilities %v", caps)
	}
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"s"}}`)
	if _, resp := c.until(2, nil); rpcCode(resp) != -32601 {
		t.Errorf("resume on a load-only agent answered %v, want -32601", resp)
	}
}
