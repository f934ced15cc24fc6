package acptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

// rawConn is the scripted stand-ins' JSON-RPC connection on stdio.
type rawConn struct {
	rpc    *jsonrpc.Conn
	handle func(*jsonrpc.Message)
}

func newRawConn() *rawConn {
	c := &rawConn{}
	c.rpc = jsonrpc.NewConn(os.Stdout, jsonrpc.Options{
		Handle: func(f *jsonrpc.Message) { c.handle(f) },
		Noise: func(_ []byte, err error) {
			if err != nil {
				fmt.Fprintf(os.Stderr, "acptest: bad frame: %v\n", err)
				return
			}
			c.handle(&jsonrpc.Message{}) // JSON, though not an object
		},
		Oversize: func() { fmt.Fprintln(os.Stderr, "acptest: dropped a line over 64 MiB") },
	})
	return c
}

// line writes a line as it is. A write to a bridge that is gone is no
// error for a fake.
func (c *rawConn) line(b []byte) { _ = c.rpc.WriteLine(b) }

func (c *rawConn) send(m jsonrpc.Message, err error) {
	if err != nil {
		panic(err)
	}
	_ = c.rpc.Send(m)
}

func (c *rawConn) result(id json.RawMessage, result any) {
	c.send(jsonrpc.NewResponse(id, result, nil))
}

func (c *rawConn) fail(id json.RawMessage, code int, msg string) {
	c.send(jsonrpc.NewResponse(id, nil, &jsonrpc.Error{Code: code, Message: msg}))
}

func (c *rawConn) notify(method string, params any) {
	c.send(jsonrpc.NewNotification(method, params))
}

// serve calls handle for every frame on stdin until EOF.
func (c *rawConn) serve(handle func(*jsonrpc.Message)) {
	c.handle = handle
	if err := c.rpc.Run(os.Stdin); !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "acptest: read:", err)
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

// zeroclaw is the scripted ZeroClaw 0.8.4 stand-in (and the bigresult mode).
type zeroclaw struct {
	c       *rawConn
	mode    string
	content string // "override" replaces result.content
	alias   string // required agentAlias, if any
	may     bool   // ZeroClaw 0.8.0-beta-1 (ZCB_ACPTEST_ZEROCLAW=0.8.0-beta-1)
	gate    string // a tool runs until this file exists
	// store is the session store, nil when it is off (ZeroClaw then
	// advertises neither loadSession nor any session capability);
	// loadOnly leaves sessionCapabilities.resume out (ZCB_ACPTEST_RESTORE=load).
	store    *zcStore
	loadOnly bool

	mu       sync.Mutex
	prompts  int
	sessions map[string]*zcSession // live sessions of this process
}

// zcSession is a live session; cancel is non-nil while a turn runs.
// history is its conversation, as the agent keeps it in memory (and the
// store on disk).
type zcSession struct {
	cancel  chan struct{}
	history []zcMessage
}

// zcMaxSessions is ZeroClaw's default [acp].max_sessions.
const zcMaxSessions = 10

func runZeroClaw(mode string) int {
	z := &zeroclaw{c: newRawConn(), mode: mode, content: os.Getenv("ZCB_ACPTEST_CONTENT"),
		alias: os.Getenv("ZCB_ACPTEST_REQUIRE_ALIAS"), sessions: map[string]*zcSession{},
		may: os.Getenv("ZCB_ACPTEST_ZEROCLAW") == zeroclawMay, gate: os.Getenv("ZCB_ACPTEST_GATE"),
		loadOnly: os.Getenv("ZCB_ACPTEST_RESTORE") == "load"}
	if dir := os.Getenv("ZCB_ACPTEST_STORE"); mode == "zeroclaw-v1" && dir != "off" {
		st, err := openStore(dir)
		if err != nil { // as ZeroClaw: one warning, then on without a store
			fmt.Fprintln(os.Stderr, "acptest: Failed to open ACP session store:", err)
		}
		z.store = st
	}
	if os.Getenv("ZCB_ACPTEST_OTP") != "" {
		// ZeroClaw's first start with [security.otp] enabled prints its
		// enrollment URI on stdout (src/main.rs, cli-otp-enrollment-uri),
		// and agents echo keys in their errors.
		z.c.line([]byte("Initialized OTP secret for ZeroClaw."))
		z.c.line([]byte("Enrollment URI: otpauth://totp/ZeroClaw:zeroclaw?secret=" + OTPSecret + "&issuer=ZeroClaw&period=30"))
		fmt.Fprintln(os.Stderr, "error: provider rejected the request (api_key="+APIKey+")")
	}
	z.c.serve(z.handle)
	return 0 // like ZeroClaw v1: exit at stdin EOF, abandoning running turns
}

func (z *zeroclaw) initResult() map[string]any {
	if z.mode == "bigresult" {
		return map[string]any{
			"protocolVersion":   1,
			"agentCapabilities": map[string]any{"loadSession": false, "sessionCapabilities": map[string]any{"close": map[string]any{}}},
			"agentInfo":         map[string]string{"name": "acptest-bigresult", "version": "1"},
			"authMethods":       []any{},
		}
	}
	version := "0.8.4"
	if z.may {
		version = zeroclawMay
	}
	// ZeroClaw advertises its store's methods only when the store opened.
	sessionCaps := map[string]any{}
	if z.store != nil {
		sessionCaps["close"] = map[string]any{}
		if !z.loadOnly {
			sessionCaps["resume"] = map[string]any{}
		}
	}
	init := map[string]any{
		"protocolVersion": 1,
		"agentCapabilities": map[string]any{
			"loadSession":         z.store != nil,
			"promptCapabilities":  map[string]bool{"image": false, "audio": false, "embeddedContext": true},
			"mcpCapabilities":     map[string]bool{"http": false, "sse": false},
			"sessionCapabilities": sessionCaps,
		},
		"agentInfo":   map[string]string{"name": "zeroclaw-acp", "title": "ZeroClaw ACP", "version": version},
		"authMethods": []any{},
		"_meta": map[string]any{"zeroclaw": map[string]any{
			"maxSessions": zcMaxSessions, "sessionTimeoutSecs": 3600, "defaultModel": "demo-model"}},
	}
	if os.Getenv("ZCB_ACPTEST_HIDE_LIMITS") != "" {
		delete(init, "_meta") // the limits stay, unannounced
	}
	return init
}

// handle runs on the reader goroutine; prompts get a goroutine each.
func (z *zeroclaw) handle(f *jsonrpc.Message) {
	switch f.Method {
	case "":
		// A response from the client: this agent sends no requests.
	case "initialize":
		z.c.result(f.ID, z.initResult())
	case "session/new":
		var p struct {
			Alias string `json:"agentAlias"`
		}
		_ = json.Unmarshal(f.Params, &p)
		if z.alias != "" && p.Alias != z.alias {
			z.c.fail(f.ID, -32602, "session/new requires agentAlias (configure [acp].default_agent)")
			return
		}
		sid := newSessionID()
		if z.store != nil {
			// Persisted before it is published, as ZeroClaw does.
			if err := z.store.create(sid); err != nil {
				z.c.fail(f.ID, -32603, "Failed to persist session: "+err.Error())
				return
			}
		}
		z.mu.Lock()
		z.sessions[sid] = &zcSession{}
		z.mu.Unlock()
		z.c.result(f.ID, map[string]any{"sessionId": sid, "workspaceDir": "/tmp"})
	case "session/load", "session/resume":
		if f.Method == "session/resume" && z.loadOnly {
			z.c.fail(f.ID, -32601, "Method not found: "+f.Method)
			return
		}
		z.reopen(f)
	case "session/prompt":
		z.startPrompt(f)
	case "session/cancel":
		z.cancel(sessionParam(f.Params))
		if f.ID != nil {
			z.c.result(f.ID, map[string]any{})
		}
	case "session/stop", "session/close":
		sid := sessionParam(f.Params)
		fmt.Fprintf(os.Stderr, "acptest: %s %s\n", f.Method, sid)
		if f.Method == "session/close" {
			z.cancel(sid)
		}
		z.mu.Lock()
		_, ok := z.sessions[sid]
		delete(z.sessions, sid)
		z.mu.Unlock()
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

// reopen answers session/load and session/resume as ZeroClaw does: the
// session comes back from the store with its conversation, -32000 when the
// store does not have it (or is off), -32001 at the session limit, -32602
// when it is live already. session/load first replays the conversation as
// session/update notifications; session/resume replays nothing. Both are
// reported on stderr as "acptest: <method> <id>".
func (z *zeroclaw) reopen(f *jsonrpc.Message) {
	sid := sessionParam(f.Params)
	fmt.Fprintf(os.Stderr, "acptest: %s %s\n", f.Method, sid)
	if die := os.Getenv("ZCB_ACPTEST_DIE_ON_REOPEN"); die != "" {
		if err := os.Remove(die); err == nil { // once: the file is the switch
			fmt.Fprintln(os.Stderr, "acptest: dying on", f.Method)
			os.Exit(7)
		}
	}
	if sid == "" {
		z.c.fail(f.ID, -32602, "Missing required parameter: sessionId")
		return
	}
	var history []zcMessage
	ok := false
	if z.store != nil {
		history, ok = z.store.history(sid)
	}
	z.mu.Lock()
	_, live := z.sessions[sid]
	switch {
	case z.store != nil && len(z.sessions) >= zcMaxSessions:
		z.mu.Unlock()
		z.c.fail(f.ID, -32001, fmt.Sprintf("Maximum session limit reached (%d)", zcMaxSessions))
		return
	case z.store != nil && live:
		z.mu.Unlock()
		z.c.fail(f.ID, -32602, "Session already active: "+sid+". Call session/close first.")
		return
	case !ok:
		z.mu.Unlock()
		z.c.fail(f.ID, -32000, "Session not found: "+sid)
		return
	}
	z.sessions[sid] = &zcSession{history: history}
	z.mu.Unlock()
	if f.Method == "session/load" {
		for _, m := range history {
			z.replay(sid, m)
		}
	}
	z.c.result(f.ID, map[string]any{})
}

// replay sends one stored message the way ZeroClaw's session/load does.
func (z *zeroclaw) replay(sid string, m zcMessage) {
	text := map[string]string{"type": "text", "text": m.Text}
	switch m.Role {
	case "user":
		z.update(sid, map[string]any{"sessionUpdate": "user_message_chunk", "content": text})
	case "assistant":
		z.update(sid, map[string]any{"sessionUpdate": "agent_message_chunk", "content": text})
	case "tool_call":
		z.update(sid, map[string]any{"sessionUpdate": "tool_call", "toolCallId": m.ToolCallID, "name": m.Tool, "title": m.Tool,
			"kind": "execute", "rawInput": json.RawMessage(m.Text), "status": "completed"})
	case "tool_result":
		z.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": m.ToolCallID, "status": "completed",
			"rawOutput": m.Text, "body": m.Text, "content": []any{map[string]any{"type": "content", "content": text}}})
	}
}

// cancel signals sid's running turn, if any.
func (z *zeroclaw) cancel(sid string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if s := z.sessions[sid]; s != nil && s.cancel != nil {
		select {
		case <-s.cancel:
		default:
			close(s.cancel)
		}
	}
}

// startPrompt validates a prompt and marks its session busy before the
// turn's goroutine starts, so a cancel read next always finds the turn.
func (z *zeroclaw) startPrompt(f *jsonrpc.Message) {
	sid := sessionParam(f.Params)
	text, ok := promptText(f.Params, false)
	if !ok || text == "" {
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
	case s.cancel != nil:
		z.mu.Unlock()
		z.c.fail(f.ID, -32002, "Session already has an active prompt turn: "+sid)
		return
	}
	cancel := make(chan struct{})
	s.cancel = cancel
	z.prompts++
	trim := z.prompts%3 == 0
	z.mu.Unlock()
	// The session is idle again before the turn's result is written, so the
	// client may send its next prompt as soon as it reads the result.
	idle := func() {
		z.mu.Lock()
		s.cancel = nil
		z.mu.Unlock()
	}
	go z.turn(f.ID, s, sid, text, trim, cancel, idle)
}

func (z *zeroclaw) update(sid string, u map[string]any) {
	z.c.notify("session/update", map[string]any{"sessionId": sid, "update": u})
}

// turn streams a prompt's reply; it calls idle just before its result. A
// turn that ends well adds its messages to the session's history (and to
// the store) before its result, as ZeroClaw does; a cancelled one adds
// nothing.
func (z *zeroclaw) turn(id json.RawMessage, s *zcSession, sid, text string, trim bool, cancel <-chan struct{}, idle func()) {
	if z.mode == "bigresult" {
		idle()
		// Assembled by hand: encoding/json takes seconds on 12 MiB under -race.
		z.c.line([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"stopReason":"end_turn","_meta":{"pad":"` +
			strings.Repeat("a", 12<<20) + `"}}}`))
		return
	}
	if trim {
		z.c.notify("_zeroclaw/history_trimmed", map[string]any{"sessionId": sid, "droppedMessages": 2, "keptTurns": 5, "reason": "budget"})
	}
	var partial strings.Builder
	chunk := func(t string) {
		z.update(sid, map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]string{"type": "text", "text": t}})
		partial.WriteString(t)
	}
	cancelled := func() {
		if z.may { // no marker before 0.8.1, and another suffix
			idle()
			content := "[interrupted by user]"
			if partial.Len() > 0 {
				content = partial.String() + "\n\n" + content
			}
			z.c.result(id, map[string]any{"sessionId": sid, "stopReason": "cancelled", "content": content})
			return
		}
		z.update(sid, map[string]any{"sessionUpdate": "tool_call", "toolCallId": "turn-cancelled-" + sid,
			"title": "turn-cancelled", "kind": "think", "status": "completed", "rawOutput": "[turn cancelled via client]"})
		idle()
		z.c.result(id, map[string]any{"sessionId": sid, "stopReason": "cancelled",
			"content": partial.String() + "\n\n[turn cancelled via client]"})
	}
	// The reply: an echo, or for "recall" what the conversation held
	// before this turn.
	reply, recall := Echo(text), strings.Contains(text, "recall")
	if recall {
		z.mu.Lock()
		reply = Recall(userTurns(s.history))
		z.mu.Unlock()
	}
	msgs := []zcMessage{{Role: "user", Text: text}}
	if strings.Contains(text, "tool") {
		chunk("😊 let me look. ")
		callID := "call-" + newSessionID()
		msgs = append(msgs, zcMessage{Role: "tool_call", Tool: "shell", ToolCallID: callID, Text: `{"command":"sleep"}`},
			zcMessage{Role: "tool_result", ToolCallID: callID, Text: "done"})
		z.update(sid, map[string]any{"sessionUpdate": "tool_call", "toolCallId": callID, "name": "shell", "title": "shell",
			"kind": "execute", "rawInput": map[string]any{"command": "sleep"}, "status": "pending"})
		if !z.runTool(cancel) {
			cancelled()
			return
		}
		z.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": callID, "name": "shell", "title": "shell",
			"kind": "execute", "status": "completed", "rawOutput": "done", "body": "done"})
		select {
		case <-cancel: // 0.8.0 notices the cancel between tool rounds
			cancelled()
			return
		default:
		}
	}
	if strings.Contains(text, "slow") {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		deadline := time.NewTimer(10 * time.Second)
		defer deadline.Stop()
	ticking:
		for {
			chunk("tick ")
			select {
			case <-cancel:
				cancelled()
				return
			case <-deadline.C:
				break ticking
			case <-tick.C:
			}
		}
	} else {
		parts := []string{"😊 ec", "ho: ", text}
		if recall {
			parts = Thirds(reply)
		}
		for _, t := range parts {
			select {
			case <-cancel:
				cancelled()
				return
			default:
			}
			chunk(t)
		}
	}
	content := reply
	if z.content == "override" {
		content = "😊 from content"
	}
	msgs = append(msgs, zcMessage{Role: "assistant", Text: content})
	z.mu.Lock()
	s.history = append(s.history, msgs...)
	z.mu.Unlock()
	if z.store != nil {
		if err := z.store.appendTurn(sid, msgs...); err != nil {
			fmt.Fprintln(os.Stderr, "acptest: Failed to persist turn; session continues in memory:", err)
		}
	}
	idle()
	z.c.result(id, map[string]any{"sessionId": sid, "stopReason": "end_turn", "content": content})
}

// OTPSecret and APIKey are the secrets zeroclaw-v1 prints with
// ZCB_ACPTEST_OTP set.
const (
	OTPSecret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
	APIKey    = "sk-or-v1-0123456789abcdef0123456789abcdef"
)

// zeroclawMay is the version ZCB_ACPTEST_ZEROCLAW selects ZeroClaw of May
// 2026 with.
const zeroclawMay = "0.8.0-beta-1"

// runTool runs a tool until the file z.gate exists (at most 30 s). ZeroClaw
// 0.8.4 races the tool against the turn's cancel and reports false when
// the cancel won; 0.8.0 runs it to its end whatever happens.
func (z *zeroclaw) runTool(cancel <-chan struct{}) bool {
	if z.may {
		cancel = nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	limit := time.NewTimer(30 * time.Second)
	defer limit.Stop()
	for z.gate != "" && !fileExists(z.gate) {
		select {
		case <-cancel:
			return false
		case <-limit.C:
			return true
		case <-tick.C:
		}
	}
	return true
}

// legacy is the scripted pre-v1 ZeroClaw (L0, L1, L2). It handles one frame
// at a time on the reader goroutine, so a turn blocks all reading.
type legacy struct {
	c        *rawConn
	dialect  string // "l0", "l1", "l2"
	delay    time.Duration
	sessions map[string]bool
}

func runLegacy(mode string) int {
	l := &legacy{c: newRawConn(), dialect: strings.TrimPrefix(mode, "legacy-"),
		delay: envDuration("ZCB_ACPTEST_DELAY", time.Second), sessions: map[string]bool{}}
	l.c.serve(l.handle)
	return 0
}

// key returns the L0 snake_case or the L1/L2 camelCase form of a key.
func (l *legacy) key(camel, snake string) string {
	if l.dialect == "l0" {
		return snake
	}
	return camel
}

// sessionID reads the session id: L0 knows only session_id, later
// dialects prefer sessionId and fall back to session_id.
func (l *legacy) sessionID(params json.RawMessage) string {
	if l.dialect == "l0" {
		var p struct {
			S string `json:"session_id"`
		}
		_ = json.Unmarshal(params, &p)
		return p.S
	}
	return sessionParam(params)
}

// log writes a tracing-style log line: on stdout between frames for L0 and
// L1, on stderr for L2.
func (l *legacy) log(msg string, colour bool) {
	line := "2026-05-17T10:00:00Z  INFO zeroclaw::acp: " + msg
	if colour {
		line = "\x1b[2m2026-05-17T10:00:00Z\x1b[0m \x1b[32m INFO\x1b[0m zeroclaw::acp: " + msg
	}
	if l.dialect == "l2" {
		fmt.Fprintln(os.Stderr, line)
		return
	}
	l.c.line([]byte(line))
}

func (l *legacy) handle(f *jsonrpc.Message) {
	switch f.Method {
	case "":
		// A response from the client: legacy agents send no requests.
	case "initialize":
		l.log("ACP server initialized", true)
		caps := map[string]any{"streaming": true,
			l.key("maxSessions", "max_sessions"): 10, l.key("sessionTimeoutSecs", "session_timeout_secs"): 3600}
		methods := []string{"initialize", "session/new", "session/prompt", "session/stop"}
		version := map[string]string{"l0": "0.6.3", "l1": "0.7.0", "l2": "0.7.4"}[l.dialect]
		if l.dialect == "l2" {
			caps["defaultModel"] = "demo-model"
			methods = append(methods, "session/update", "session/event")
		}
		l.c.result(f.ID, map[string]any{
			l.key("protocolVersion", "protocol_version"): "1.0",
			l.key("serverInfo", "server_info"):           map[string]string{"name": "zeroclaw-acp", "version": version},
			"capabilities":                               caps,
			"methods":                                    methods,
		})
	case "session/new":
		sid := newSessionID()
		l.sessions[sid] = true
		l.log("session created", false)
		l.c.result(f.ID, map[string]any{l.key("sessionId", "session_id"): sid, l.key("workspaceDir", "workspace_dir"): "/tmp"})
	case "session/prompt":
		l.log("prompt received", false)
		l.prompt(f)
	case "session/stop":
		sid := l.sessionID(f.Params)
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

// prompt runs a whole turn before the next frame is read.
func (l *legacy) prompt(f *jsonrpc.Message) {
	sid := l.sessionID(f.Params)
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
	// Only prompts containing "slow" take ZCB_ACPTEST_DELAY per chunk, so a
	// test can make one turn long without slowing every later turn.
	delay := 20 * time.Millisecond
	if strings.Contains(text, "slow") {
		delay = l.delay
	}
	for i, part := range Thirds(Echo(text)) {
		if i > 0 {
			time.Sleep(delay)
		}
		if l.dialect == "l2" {
			l.c.notify("session/update", map[string]any{"sessionId": sid, "update": map[string]any{
				"sessionUpdate": "agent_message_chunk", "content": map[string]string{"type": "text", "text": part}}})
		} else {
			event(map[string]any{"type": "chunk", "content": part})
			l.log("chunk sent", false)
		}
	}
	res := map[string]any{sidKey: sid, "content": Echo(text)}
	if l.dialect == "l2" {
		res["stopReason"] = "end_turn"
	}
	l.c.result(f.ID, res)
}
