package acptest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// frame is an inbound JSON-RPC message.
type frame struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// rawConn writes JSON-RPC lines to stdout, one whole line at a time.
type rawConn struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func newRawConn() *rawConn { return &rawConn{w: bufio.NewWriterSize(os.Stdout, 64<<10)} }

func (c *rawConn) line(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.w.Write(b)
	_ = c.w.WriteByte('\n')
	_ = c.w.Flush()
}

func (c *rawConn) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c.line(b)
}

func (c *rawConn) result(id json.RawMessage, result any) {
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (c *rawConn) fail(id json.RawMessage, code int, msg string) {
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (c *rawConn) notify(method string, params any) {
	c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// readFrames calls handle for every JSON line on stdin until EOF.
func readFrames(handle func(frame)) {
	r := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		var f frame
		if len(strings.TrimSpace(string(line))) > 0 && json.Unmarshal(line, &f) == nil {
			handle(f)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintln(os.Stderr, "acptest: read:", err)
			}
			return
		}
	}
}

// sessionParam reads the session id under either key.
func sessionParam(params json.RawMessage) string {
	var p struct {
		A string `json:"sessionId"`
		B string `json:"session_id"`
	}
	_ = json.Unmarshal(params, &p)
	if p.A != "" {
		return p.A
	}
	return p.B
}

// promptText reads a prompt given as a string or as content blocks; ok is
// false when the prompt is neither (or an array where strict is set).
func promptText(params json.RawMessage, strict bool) (text string, ok bool) {
	var p struct {
		Prompt json.RawMessage `json:"prompt"`
	}
	_ = json.Unmarshal(params, &p)
	if json.Unmarshal(p.Prompt, &text) == nil {
		return text, true
	}
	if strict {
		return "", false
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(p.Prompt, &blocks) != nil {
		return "", false
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n\n"), true
}

// zeroclaw is the scripted ZeroClaw 0.8.4 stand-in.
type zeroclaw struct {
	c       *rawConn
	mode    string
	content string // "override" replaces result.content

	mu       sync.Mutex
	n        int
	prompts  int
	sessions map[string]*zcSession
	turns    sync.WaitGroup
}

type zcSession struct {
	busy   bool
	cancel chan struct{}
}

func runZeroClaw(mode string) int {
	z := &zeroclaw{c: newRawConn(), mode: mode, content: os.Getenv("ZCB_ACPTEST_CONTENT"), sessions: map[string]*zcSession{}}
	readFrames(z.handle)
	z.turns.Wait()
	return 0
}

func (z *zeroclaw) handle(f frame) {
	switch f.Method {
	case "initialize":
		z.c.result(f.ID, map[string]any{
			"protocolVersion": 1,
			"agentCapabilities": map[string]any{
				"loadSession":         true,
				"promptCapabilities":  map[string]bool{"image": false, "audio": false, "embeddedContext": true},
				"mcpCapabilities":     map[string]bool{"http": false, "sse": false},
				"sessionCapabilities": map[string]any{"resume": map[string]any{}, "close": map[string]any{}},
			},
			"agentInfo":   map[string]string{"name": "zeroclaw-acp", "title": "ZeroClaw ACP", "version": "0.8.4"},
			"authMethods": []any{},
			"_meta":       map[string]any{"zeroclaw": map[string]any{"maxSessions": 10, "sessionTimeoutSecs": 3600, "defaultModel": "demo-model"}},
		})
	case "session/new":
		var p struct {
			Alias string `json:"agentAlias"`
		}
		_ = json.Unmarshal(f.Params, &p)
		if want := os.Getenv("ZCB_ACPTEST_REQUIRE_ALIAS"); want != "" && p.Alias != want {
			z.c.fail(f.ID, -32602, "session/new requires agentAlias (configure [acp].default_agent)")
			return
		}
		z.mu.Lock()
		z.n++
		sid := fmt.Sprintf("zc-%d-%d", os.Getpid(), z.n)
		z.sessions[sid] = &zcSession{}
		z.mu.Unlock()
		z.c.result(f.ID, map[string]any{"sessionId": sid, "workspaceDir": "/tmp"})
	case "session/prompt":
		z.turns.Add(1)
		go func() {
			defer z.turns.Done()
			z.prompt(f)
		}()
	case "session/cancel":
		sid := sessionParam(f.Params)
		z.mu.Lock()
		if s := z.sessions[sid]; s != nil && s.busy {
			select {
			case <-s.cancel:
			default:
				close(s.cancel)
			}
		}
		z.mu.Unlock()
		if f.ID != nil {
			z.c.result(f.ID, map[string]any{})
		}
	case "session/stop", "session/close":
		sid := sessionParam(f.Params)
		z.mu.Lock()
		_, ok := z.sessions[sid]
		delete(z.sessions, sid)
		z.mu.Unlock()
		fmt.Fprintf(os.Stderr, "acptest: %s %s\n", f.Method, sid)
		switch {
		case !ok:
			z.c.fail(f.ID, -32000, "Session not found: "+sid)
		case f.Method == "session/stop":
			z.c.result(f.ID, map[string]any{"sessionId": sid, "stopped": true})
		default:
			z.c.result(f.ID, map[string]any{})
		}
	default:
		if f.ID != nil {
			z.c.fail(f.ID, -32601, "Method not found: "+f.Method)
		}
	}
}

func (z *zeroclaw) prompt(f frame) {
	sid := sessionParam(f.Params)
	text, ok := promptText(f.Params, false)
	if !ok {
		z.c.fail(f.ID, -32602, "Missing required parameter: prompt")
		return
	}
	z.mu.Lock()
	s := z.sessions[sid]
	switch {
	case s == nil:
		z.mu.Unlock()
		z.c.fail(f.ID, -32000, "Session not found: "+sid)
		return
	case s.busy:
		z.mu.Unlock()
		z.c.fail(f.ID, -32002, "Session already has an active prompt turn: "+sid)
		return
	}
	s.busy, s.cancel = true, make(chan struct{})
	z.prompts++
	trim := z.prompts%3 == 0
	cancel := s.cancel
	z.mu.Unlock()
	defer func() {
		z.mu.Lock()
		s.busy = false
		z.mu.Unlock()
	}()

	if z.mode == "bigresult" {
		z.c.result(f.ID, map[string]any{"sessionId": sid, "stopReason": "end_turn", "_meta": map[string]string{"pad": strings.Repeat("a", 12<<20)}})
		return
	}
	if trim {
		z.c.notify("_zeroclaw/history_trimmed", map[string]any{"sessionId": sid, "droppedMessages": 2, "keptTurns": 5, "reason": "budget"})
	}
	chunk := func(t string) {
		z.c.notify("session/update", map[string]any{"sessionId": sid, "update": map[string]any{
			"sessionUpdate": "agent_message_chunk", "content": map[string]string{"type": "text", "text": t}}})
	}
	var partial strings.Builder
	chunks := []string{"😊 ec", "ho: ", text}
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		var next string
		if strings.Contains(text, "slow") {
			next = "tick "
		} else if i < len(chunks) {
			next = chunks[i]
		} else {
			break
		}
		select {
		case <-cancel:
			z.c.notify("session/update", map[string]any{"sessionId": sid, "update": map[string]any{
				"sessionUpdate": "tool_call", "toolCallId": "turn-cancelled-" + sid, "title": "turn-cancelled",
				"kind": "think", "status": "completed", "rawOutput": "[turn cancelled via client]"}})
			z.c.result(f.ID, map[string]any{"sessionId": sid, "stopReason": "cancelled",
				"content": partial.String() + "\n\n[turn cancelled via client]"})
			return
		case <-deadline:
			next = ""
		default:
		}
		if next == "" {
			break
		}
		chunk(next)
		partial.WriteString(next)
		if strings.Contains(text, "slow") {
			time.Sleep(50 * time.Millisecond)
		}
	}
	content := echoReply(text)
	if z.content == "override" {
		content = "😊 from content"
	}
	z.c.result(f.ID, map[string]any{"sessionId": sid, "stopReason": "end_turn", "content": content})
}

// legacy is the scripted pre-v1 ZeroClaw (L0, L1, L2).
type legacy struct {
	c        *rawConn
	dialect  string // "l0", "l1", "l2"
	delay    time.Duration
	n        int
	sessions map[string]bool
}

func runLegacy(mode string) int {
	l := &legacy{c: newRawConn(), dialect: strings.TrimPrefix(mode, "legacy-"),
		delay: envDuration("ZCB_ACPTEST_DELAY", time.Second), sessions: map[string]bool{}}
	readFrames(l.handle) // strictly sequential: a turn blocks reading
	return 0
}

// key returns the L0 snake_case or L1/L2 camelCase form of a key.
func (l *legacy) key(camel, snake string) string {
	if l.dialect == "l0" {
		return snake
	}
	return camel
}

// noise prints a tracing log line on stdout, as L0 and L1 did.
func (l *legacy) noise(msg string, colour bool) {
	if l.dialect == "l2" {
		return
	}
	line := "2026-05-17T10:00:00Z  INFO zeroclaw::acp: " + msg
	if colour {
		line = "\x1b[2m2026-05-17T10:00:00Z\x1b[0m \x1b[32m INFO\x1b[0m zeroclaw::acp: " + msg
	}
	l.c.line([]byte(line))
}

func (l *legacy) handle(f frame) {
	switch f.Method {
	case "initialize":
		l.noise("initialize", true)
		caps := map[string]any{"streaming": true, l.key("maxSessions", "max_sessions"): 10, l.key("sessionTimeoutSecs", "session_timeout_secs"): 3600}
		methods := []string{"initialize", "session/new", "session/prompt", "session/stop", "session/event"}
		versions := map[string]string{"l0": "0.6.3", "l1": "0.7.0", "l2": "0.7.4"}
		if l.dialect == "l2" {
			caps["defaultModel"] = "demo-model"
			methods = append(methods, "session/update")
		}
		l.c.result(f.ID, map[string]any{
			l.key("protocolVersion", "protocol_version"): "1.0",
			l.key("serverInfo", "server_info"):           map[string]string{"name": "zeroclaw-acp", "version": versions[l.dialect]},
			"capabilities":                               caps,
			"methods":                                    methods,
		})
	case "session/new":
		l.n++
		sid := fmt.Sprintf("legacy-%d-%d", os.Getpid(), l.n)
		l.sessions[sid] = true
		l.c.result(f.ID, map[string]any{l.key("sessionId", "session_id"): sid, l.key("workspaceDir", "workspace_dir"): "/tmp"})
	case "session/prompt":
		l.noise("prompt received", false)
		l.prompt(f)
	case "session/stop":
		sid := sessionParam(f.Params)
		fmt.Fprintf(os.Stderr, "acptest: session/stop %s\n", sid)
		if !l.sessions[sid] {
			l.c.fail(f.ID, -32000, "Session not found: "+sid)
			return
		}
		delete(l.sessions, sid)
		l.c.result(f.ID, map[string]any{l.key("sessionId", "session_id"): sid, "stopped": true})
	default:
		if f.ID != nil {
			l.c.fail(f.ID, -32601, "Method not found: "+f.Method)
		}
	}
}

func (l *legacy) prompt(f frame) {
	sid := sessionParam(f.Params)
	text, ok := promptText(f.Params, l.dialect != "l2")
	if !ok {
		l.c.fail(f.ID, -32602, "Missing required parameter: prompt")
		return
	}
	if !l.sessions[sid] {
		l.c.fail(f.ID, -32000, "Session not found: "+sid)
		return
	}
	if strings.Contains(text, "FAIL") {
		delete(l.sessions, sid)
		l.c.fail(f.ID, -32603, "Agent turn failed: requested")
		return
	}
	sidKey := l.key("sessionId", "session_id")
	event := func(params map[string]any) {
		params[sidKey] = sid
		l.c.notify("session/event", params)
	}
	if l.dialect != "l2" {
		event(map[string]any{"type": "thinking", "content": "hmm"})
		event(map[string]any{"type": "tool_call", "name": "shell", "args": map[string]string{"command": "ls"}})
		event(map[string]any{"type": "tool_result", "name": "shell", "output": "ok"})
	}
	delay := 20 * time.Millisecond
	if strings.Contains(text, "slow") {
		delay = l.delay
	}
	for i, part := range thirds(echoReply(text)) {
		if i > 0 {
			time.Sleep(delay)
		}
		if l.dialect == "l2" {
			l.c.notify("session/update", map[string]any{"sessionId": sid, "update": map[string]any{
				"sessionUpdate": "agent_message_chunk", "content": map[string]string{"type": "text", "text": part}}})
		} else {
			event(map[string]any{"type": "chunk", "content": part})
			l.noise("chunk sent", false)
		}
	}
	res := map[string]any{sidKey: sid, "content": echoReply(text)}
	if l.dialect == "l2" {
		res["stopReason"] = "end_turn"
	}
	l.c.result(f.ID, res)
}
