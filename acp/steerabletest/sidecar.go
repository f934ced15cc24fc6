package steerabletest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/reexec"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/sidecarwire"
)

func run(mode string) int {
	switch mode {
	case "demo":
		var in io.Reader = os.Stdin
		if path := os.Getenv("ZCB_STEERTEST_RECORD"); path != "" {
			rec, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				fmt.Fprintln(os.Stderr, "steertest: record:", err)
				return 1
			}
			defer func() { _ = rec.Close() }()
			in = io.TeeReader(os.Stdin, rec) // whole lines: the bridge writes a frame per write
		}
		err := demoagent.ServeSteerable(context.Background(), in, os.Stdout, os.Stderr,
			demoagent.Options{ChunkDelay: envDuration("ZCB_STEERTEST_DELAY", 5*time.Millisecond)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "steertest: demo:", err)
			return 1
		}
		return 0
	case "sidecar", "quiet-ready", "marker-only", "never-ready", "slow-ready", "hang", "stall-stream",
		"crash-mid-stream", "flood", "error", "stream-error", "ignore-shutdown", "ignore-sigterm",
		"unknown-streams", "early-chunk":
	default:
		fmt.Fprintf(os.Stderr, "steertest: unknown mode %q\n", mode)
		return 2
	}
	f := &fake{
		mode: mode, started: time.Now(),
		delay:    envDuration("ZCB_STEERTEST_DELAY", 5*time.Millisecond),
		stateDir: os.Getenv("ZCB_STEERTEST_STATE_DIR"),
		sessions: map[string]sidecarwire.Session{}, streams: map[string]chan struct{}{},
	}
	f.rpc = jsonrpc.NewConn(os.Stdout, jsonrpc.Options{Handle: f.handle, Noise: f.unreadable, Received: f.recordLine,
		Oversize: func() { fmt.Fprintln(os.Stderr, "steertest: dropped a line over 64 MiB") }})
	if mode == "ignore-sigterm" {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	} else {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() {
			<-term // the sidecar's handler stops it as system.shutdown does
			fmt.Fprintf(os.Stderr, "steertest: SIGTERM %d\n", os.Getpid())
			f.notify("lifecycle.shutdown", map[string]string{"reason": "normal"})
			os.Exit(0)
		}()
	}
	if path := os.Getenv("ZCB_STEERTEST_RECORD"); path != "" {
		rec, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "steertest: record:", err)
			return 1
		}
		f.record = rec
	}
	f.loadSessions()
	if mode == "slow-ready" {
		time.Sleep(envDuration("ZCB_STEERTEST_DELAY", time.Second))
		f.delay = 5 * time.Millisecond
	}
	if mode != "quiet-ready" && mode != "never-ready" {
		b, _ := json.Marshal(f.health())
		fmt.Fprintf(os.Stderr, "steertest: booting\n__SIDECAR_READY__:%s\n", b)
	}
	if os.Getenv("ZCB_STEERTEST_NOISE") != "" {
		f.line([]byte("INFO steerable_sidecar booting (a log line on the wrong stream)"))
	}
	if mode != "marker-only" && mode != "never-ready" {
		f.notify("lifecycle.ready", map[string]any{"version": "0.1.0-test", "protocolVersion": "0.1.0",
			"pid": os.Getpid(), "listenInfo": map[string]string{"transport": "stdio"}})
	}
	f.readStdin()
	if mode == "ignore-shutdown" || mode == "ignore-sigterm" {
		for {
			time.Sleep(time.Hour) // only a signal ends it
		}
	}
	f.notify("lifecycle.shutdown", map[string]string{"reason": "eof"})
	return 0
}

// fake is one fake sidecar process. Frames are read on the main
// goroutine; each stream runs on its own.
type fake struct {
	mode     string
	delay    time.Duration
	started  time.Time
	stateDir string
	record   *os.File

	rpc *jsonrpc.Conn // stdin and stdout

	mu       sync.Mutex
	n        int
	sessions map[string]sidecarwire.Session
	streams  map[string]chan struct{} // closed to cancel
}

// readStdin serves the bridge's frames until stdin ends.
func (f *fake) readStdin() {
	if err := f.rpc.Run(os.Stdin); !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "steertest: read:", err)
	}
}

// recordLine keeps a line read, for Requests.
func (f *fake) recordLine(line []byte) {
	if f.record != nil {
		_, _ = f.record.Write(append(line[:len(line):len(line)], '\n'))
	}
}

// unreadable answers a line that is not JSON as the sidecar does; JSON
// that is not an object is ignored, as a frame without an id.
func (f *fake) unreadable(_ []byte, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "steertest: bad frame: %v\n", err)
		f.fail(nil, sidecarwire.ParseError(err))
	}
}

// line writes a line as it is. A write to a bridge that is gone is no
// error for a fake; neither is one below.
func (f *fake) line(b []byte) { _ = f.rpc.WriteLine(b) }

// result answers id; a nil v is sent as no result member, as the
// sidecar does.
func (f *fake) result(id json.RawMessage, v any) { _ = f.rpc.Send(sidecarwire.Answer(id, v, nil)) }

func (f *fake) fail(id json.RawMessage, err *sidecarwire.Error) {
	_ = f.rpc.Send(sidecarwire.Answer(id, nil, err))
}

func (f *fake) notify(method string, params any) { _ = f.rpc.Notify(method, params) }

func (f *fake) hangs(method string) bool {
	if f.mode != "hang" {
		return false
	}
	on := os.Getenv("ZCB_STEERTEST_HANG")
	return on == "" || on == "*" || on == method
}

func (f *fake) handle(fr *jsonrpc.Message) {
	if !fr.IsRequest() {
		return // a notification: the sidecar ignores them
	}
	if f.hangs(fr.Method) {
		fmt.Fprintf(os.Stderr, "steertest: hanging on %s\n", fr.Method)
		return
	}
	switch fr.Method {
	case "":
		f.fail(fr.ID, sidecarwire.MissingMethod())
	case "system.ping":
		f.result(fr.ID, f.health())
	case "system.shutdown":
		fmt.Fprintln(os.Stderr, "steertest: shutdown")
		f.result(fr.ID, nil)
		if f.mode == "ignore-shutdown" || f.mode == "ignore-sigterm" {
			return
		}
		// The sidecar stops reading, says so and exits; its streams end
		// unannounced.
		f.notify("lifecycle.shutdown", map[string]string{"reason": "normal"})
		os.Exit(0)
	case "system.shutdown_now":
		f.result(fr.ID, nil)
		f.notify("lifecycle.shutdown", map[string]string{"reason": "normal"})
		os.Exit(0)
	case "agent.session.create":
		s, err := sidecarwire.Create(fr.Params, newSessionID, time.Now().UTC().Format(time.RFC3339Nano))
		if err != nil {
			fmt.Fprintf(os.Stderr, "steertest: session.create refused: %s\n", err.Message)
			f.fail(fr.ID, err)
			return
		}
		f.mu.Lock()
		f.sessions[s.SessionID] = s
		f.mu.Unlock()
		f.saveSession(s)
		fmt.Fprintf(os.Stderr, "steertest: session.create %s chat %s\n", s.SessionID, s.ChatID)
		f.result(fr.ID, s)
	case "agent.session.resume":
		sid, err := sidecarwire.Resume(fr.Params)
		if err != nil {
			f.fail(fr.ID, err)
			return
		}
		f.mu.Lock()
		s, ok := f.sessions[sid]
		f.mu.Unlock()
		fmt.Fprintf(os.Stderr, "steertest: session.resume %s known=%v\n", sid, ok)
		if !ok {
			f.fail(fr.ID, sidecarwire.NotFound(sid))
			return
		}
		f.result(fr.ID, s)
	case "agent.session.list":
		f.mu.Lock()
		list := []sidecarwire.Session{}
		for _, s := range f.sessions {
			list = append(list, s)
		}
		f.mu.Unlock()
		f.result(fr.ID, list)
	case "agent.chat.stream":
		f.chat(fr)
	case "agent.chat.cancel":
		id, err := sidecarwire.Cancel(fr.Params)
		if err != nil {
			f.fail(fr.ID, err)
			return
		}
		fmt.Fprintf(os.Stderr, "steertest: cancel %s\n", id)
		if f.mode != "stall-stream" {
			f.mu.Lock()
			if ch := f.streams[id]; ch != nil {
				delete(f.streams, id)
				close(ch)
			}
			f.mu.Unlock()
		}
		f.result(fr.ID, nil)
	default:
		f.fail(fr.ID, sidecarwire.UnknownMethod(fr.Method))
	}
}

// health is the sidecar's SidecarHealth: its ready marker and
// system.ping's answer. The stock sidecar registers no tools and runs no
// traces.
func (f *fake) health() map[string]any {
	return map[string]any{"status": "ok", "version": "0.1.0-test", "protocolVersion": "0.1.0",
		"uptimeMs": time.Since(f.started).Milliseconds(), "pid": os.Getpid(), "pythonVersion": "3.12.6",
		"platform": "linux-test", "loadedTools": 0, "activeTraces": 0}
}

// newSessionID makes up a session id as the sidecar does.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "sess_" + hex.EncodeToString(b[:])
}

// chat answers agent.chat.stream and starts its stream.
func (f *fake) chat(fr *jsonrpc.Message) {
	p, err := sidecarwire.ChatParams(fr.Params, true)
	if err != nil {
		fmt.Fprintf(os.Stderr, "steertest: chat refused: %s\n", err.Message)
		f.fail(fr.ID, err)
		return
	}
	if f.mode == "error" {
		code := envInt("ZCB_STEERTEST_CODE", -32021)
		f.fail(fr.ID, &sidecarwire.Error{Code: code, Message: "requested failure", Kind: errorKind(code)})
		return
	}
	text := ""
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == "user" {
			text = p.Messages[i].Content
			break
		}
	}
	cancel := make(chan struct{})
	f.mu.Lock()
	f.n++
	id := p.StreamID
	if id == "" {
		id = "str_" + strconv.Itoa(f.n)
	}
	f.streams[id] = cancel
	f.mu.Unlock()
	chunk := func(delta string) {
		if f.mode == "unknown-streams" {
			f.notify("stream.chunk", map[string]any{"streamId": "s_ghost", "delta": "ghost "})
			f.notify("stream.done", map[string]any{"streamId": "s_ghost", "ok": true})
		}
		f.notify("stream.chunk", map[string]any{"streamId": id, "delta": delta})
	}
	parts := thirds(Echo(text))
	if f.mode == "early-chunk" {
		chunk(parts[0])
		parts = parts[1:]
	}
	f.result(fr.ID, map[string]string{"streamId": id})
	go f.stream(id, text, parts, chunk, cancel)
}

// stream runs one stream to its end.
func (f *fake) stream(id, text string, parts []string, chunk func(string), cancel chan struct{}) {
	done := func(params map[string]any) {
		f.mu.Lock()
		delete(f.streams, id)
		f.mu.Unlock()
		params["streamId"] = id
		f.notify("stream.done", params)
		if f.mode == "unknown-streams" {
			f.notify("stream.chunk", map[string]any{"streamId": id, "delta": "late "})
		}
	}
	cancelled := func() { done(map[string]any{"ok": false, "cancelled": true}) }
	wait := func(d time.Duration) bool {
		select {
		case <-cancel:
			return false
		case <-time.After(d):
			return true
		}
	}
	switch f.mode {
	case "stall-stream":
		return
	case "crash-mid-stream":
		if reexec.Bump("steertest", f.stateDir, "crashes", "ZCB_STEERTEST_CRASHES") {
			chunk(parts[0])
			time.Sleep(20 * time.Millisecond)
			fmt.Fprintln(os.Stderr, "steertest: crashing mid-stream")
			os.Exit(4)
		}
	case "flood":
		n, size := envInt("ZCB_STEERTEST_FLOOD", 5000), envInt("ZCB_STEERTEST_FLOOD_BYTES", 1)
		b, _ := jsonrpc.EncodeNotification("stream.chunk", map[string]any{"streamId": id, "delta": strings.Repeat("x", size)})
		for range n {
			f.line(b)
		}
		done(map[string]any{"ok": true})
		return
	case "stream-error":
		chunk(parts[0])
		kind := os.Getenv("ZCB_STEERTEST_KIND")
		if kind == "" {
			kind = "ConnectError"
		}
		f.mu.Lock()
		delete(f.streams, id)
		f.mu.Unlock()
		f.notify("stream.error", map[string]any{"streamId": id, "kind": kind, "message": "requested failure"})
		return
	}
	if strings.Contains(text, "slow") {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			chunk("tick ")
			if !wait(20 * time.Millisecond) {
				cancelled()
				return
			}
		}
		done(map[string]any{"ok": true})
		return
	}
	for i, part := range parts {
		if i > 0 && !wait(f.delay) {
			cancelled()
			return
		}
		chunk(part)
	}
	done(map[string]any{"ok": true, "cancelled": false})
}

// loadSessions reads the sessions an earlier process of this test created
// (a sidecar whose embedder gives it a database).
func (f *fake) loadSessions() {
	if f.stateDir == "" {
		return
	}
	b, _ := os.ReadFile(filepath.Join(f.stateDir, "sessions"))
	for _, line := range bytes.Split(b, []byte("\n")) {
		var s sidecarwire.Session
		if json.Unmarshal(line, &s) == nil && s.SessionID != "" {
			f.sessions[s.SessionID] = s
		}
	}
}

func (f *fake) saveSession(s sidecarwire.Session) {
	if f.stateDir == "" {
		return
	}
	fh, err := os.OpenFile(filepath.Join(f.stateDir, "sessions"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "steertest: sessions:", err)
		return
	}
	b, _ := json.Marshal(s)
	_, _ = fh.Write(append(b, '\n'))
	_ = fh.Close()
}

// errorKind is the kind the sidecar gives an error code it answers.
func errorKind(code int) string {
	switch code {
	case -32021:
		return "budget_exhausted"
	case -32020:
		return "policy_denied"
	case -32030:
		return "tool_failed"
	case sidecarwire.CodeInvalidParams:
		return "invalid_params"
	case sidecarwire.CodeNotFound:
		return "invalid_request"
	}
	return "internal" // -32603, and -32011, its storage failure
}

// thirds splits s into three pieces at rune boundaries (fewer for very
// short texts); joined, they give s back.
func thirds(s string) []string {
	r := []rune(s)
	if len(r) < 3 {
		return []string{s}
	}
	a, b := len(r)/3, 2*len(r)/3
	return []string{string(r[:a]), string(r[a:b]), string(r[b:])}
}

var (
	envInt      = reexec.EnvInt
	envDuration = reexec.EnvDuration
)
