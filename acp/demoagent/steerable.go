package demoagent

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
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/sidecarwire"
)

// The steerable sidecar's protocol version the demo speaks.
const steerableProtocolVersion = "0.1.0"

// steerableMaxLine bounds one request line; the bridge's are far smaller.
const steerableMaxLine = 8 << 20

// ServeSteerable runs the demo agent as a steerable sidecar (JSON-RPC 2.0,
// one object per line, the protocol of `python -m steerable_sidecar`) on
// the given streams: in is what the bridge writes, out what it reads, and
// errOut the stderr where the sidecar logs and, unless Options.QuietReady
// is set, announces itself with its __SIDECAR_READY__ marker; a
// lifecycle.ready notification follows on out either way.
//
// It answers system.ping (a health snapshot), system.shutdown and
// system.shutdown_now (it then returns), agent.session.create, .resume
// (sessions live in memory, so a restarted demo resumes none) and .list,
// agent.chat.stream and agent.chat.cancel, reading their params as the
// real sidecar does and refusing what it refuses with its errors (see
// acp/internal/sidecarwire: a create needs a chatId, a resume a sessionId,
// a cancel a streamId), except that a chat needs no model or provider: the
// demo has none. A chat is answered with {"streamId"} at once, then Reply
// of the last user message streamed as stream.chunk notifications
// ([Chunks], [Options.ChunkDelay] apart) and a stream.done;
// agent.chat.cancel ends it at once with cancelled:true.
//
// It returns nil at EOF on in, after a shutdown request, or when ctx
// ends, with the same guarantees as Serve: every goroutine it started has
// ended, and nothing is written to out afterwards.
func ServeSteerable(ctx context.Context, in io.Reader, out, errOut io.Writer, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if errOut == nil {
		errOut = io.Discard
	}
	life, endLife := context.WithCancel(context.Background())
	defer endLife()
	s := &sidecar{
		life: life, delay: opts.ChunkDelay, log: log, out: newOutput(out),
		started: time.Now(), sessions: make(map[string]sidecarwire.Session), streams: make(map[string]context.CancelFunc),
	}
	s.rpc = jsonrpc.NewConn(s.out, jsonrpc.Options{MaxLine: steerableMaxLine, Handle: s.handle,
		Noise: s.unreadable, Oversize: s.oversize})
	src := newInput(in)
	src.open()

	ready := map[string]any{"status": "ok", "name": Name, "version": "1",
		"protocolVersion": steerableProtocolVersion, "pid": os.Getpid()}
	if !opts.QuietReady {
		b, _ := json.Marshal(ready)
		_, _ = fmt.Fprintf(errOut, "__SIDECAR_READY__:%s\n", b)
	}
	s.notify("lifecycle.ready", map[string]any{"name": Name, "version": "1",
		"protocolVersion": steerableProtocolVersion, "pid": os.Getpid(), "listenInfo": map[string]string{"transport": "stdio"}})

	stop := make(chan string, 1) // the reader's reason for ending
	read := make(chan struct{})
	go func() {
		defer close(read)
		stop <- s.readRequests(src)
	}()
	waitReader := true
	var reason string
	select {
	case reason = <-stop:
	case <-ctx.Done():
		reason = "context"
		waitReader = src.interrupt()
	}
	if reason == "eof" || reason == "normal" {
		s.notify("lifecycle.shutdown", map[string]string{"reason": reason})
	}
	endLife()
	grace, cancelGrace := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancelGrace()
	if waitReader {
		select {
		case <-read:
		case <-grace.Done():
			log.Warn("reader still blocked after shutdown grace; abandoning it")
		}
	}
	if !s.waitStreams() {
		log.Warn("streams still running after shutdown grace (is anyone reading out?)")
	}
	if !s.out.close(grace.Done()) {
		log.Warn("write to out still blocked after shutdown grace (is anyone reading out?)")
	}
	if err := src.failure(); err != nil {
		return fmt.Errorf("demo agent: reading requests: %w", err)
	}
	return nil
}

// sidecar is the demo's steerable state; the reader goroutine handles
// requests in order, and each stream runs on its own goroutine.
type sidecar struct {
	life    context.Context
	delay   time.Duration
	log     hclog.Logger
	out     *output
	rpc     *jsonrpc.Conn
	started time.Time
	running sync.WaitGroup

	mu       sync.Mutex
	n        int
	sessions map[string]sidecarwire.Session
	order    []string // session ids, oldest first: the table's eviction order
	streams  map[string]context.CancelFunc
	stop     string // a shutdown request's stop reason (set on the reader goroutine)
}

// maxDemoSessions bounds the demo sidecar's sessions: the protocol has no
// close, so the oldest is forgotten past it (a resume of it is then
// refused, and the bridge creates the conversation again).
const maxDemoSessions = 256

// readRequests handles requests until EOF or a shutdown request, and
// returns why it stopped: "eof", "normal" (system.shutdown), "now"
// (system.shutdown_now) or "error".
func (s *sidecar) readRequests(in io.Reader) string {
	err := s.rpc.Run(in)
	switch {
	case s.stop != "":
		return s.stop
	case errors.Is(err, io.EOF):
		return "eof"
	default:
		return "error"
	}
}

// unreadable answers a line that is not JSON as the sidecar does; JSON
// that is not an object is ignored, as a frame without an id.
func (s *sidecar) unreadable(_ []byte, err error) {
	if err != nil {
		s.answer(nil, nil, sidecarwire.ParseError(err))
	}
}

// oversize answers a line over steerableMaxLine as unparseable: as the
// sidecar answers a truncated frame.
func (s *sidecar) oversize() {
	_, _, err := jsonrpc.Decode([]byte("{"))
	s.answer(nil, nil, sidecarwire.ParseError(err))
}

// stopAfter ends the reading after the request being handled.
func (s *sidecar) stopAfter(reason string) {
	s.stop = reason
	s.rpc.StopReading()
}

// handle serves one frame.
func (s *sidecar) handle(r *jsonrpc.Message) {
	if !r.IsRequest() {
		return // a notification: the demo needs none
	}
	switch r.Method {
	case "":
		s.answer(r.ID, nil, sidecarwire.MissingMethod())
	case "system.ping":
		s.answer(r.ID, s.health(), nil)
	case "system.shutdown":
		s.cancelStreams()
		s.waitStreams() // every stream sends its stream.done first
		s.answer(r.ID, nil, nil)
		s.stopAfter("normal")
	case "system.shutdown_now":
		s.answer(r.ID, nil, nil)
		s.stopAfter("now")
	case "agent.session.create":
		sess, err := sidecarwire.Create(r.Params, newSessionID, time.Now().UTC().Format(time.RFC3339Nano))
		if err == nil {
			s.mu.Lock()
			if _, ok := s.sessions[sess.SessionID]; !ok {
				s.order = append(s.order, sess.SessionID)
			}
			s.sessions[sess.SessionID] = sess
			for len(s.sessions) > maxDemoSessions {
				delete(s.sessions, s.order[0])
				s.order = s.order[1:]
			}
			s.mu.Unlock()
		}
		s.answer(r.ID, sess, err)
	case "agent.session.resume":
		sid, err := sidecarwire.Resume(r.Params)
		if err != nil {
			s.answer(r.ID, nil, err)
			break
		}
		s.mu.Lock()
		sess, ok := s.sessions[sid]
		s.mu.Unlock()
		if !ok {
			s.answer(r.ID, nil, sidecarwire.NotFound(sid))
			break
		}
		s.answer(r.ID, sess, nil)
	case "agent.session.list":
		s.answer(r.ID, s.listSessions(), nil)
	case "agent.chat.stream":
		s.chat(r)
	case "agent.chat.cancel":
		id, err := sidecarwire.Cancel(r.Params)
		if err == nil {
			s.mu.Lock()
			if cancel := s.streams[id]; cancel != nil {
				cancel()
			}
			s.mu.Unlock()
		}
		s.answer(r.ID, nil, err)
	default:
		s.answer(r.ID, nil, sidecarwire.UnknownMethod(r.Method))
	}
}

func (s *sidecar) health() map[string]any {
	s.mu.Lock()
	active := len(s.streams)
	s.mu.Unlock()
	return map[string]any{
		"status": "ok", "name": Name, "version": "1", "protocolVersion": steerableProtocolVersion,
		"uptimeMs": time.Since(s.started).Milliseconds(), "pid": os.Getpid(),
		"loadedProviders": []string{}, "loadedTools": 0, "activeTraces": active, "checks": map[string]any{},
	}
}

// newSessionID makes up a session id.
func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "demo-" + hex.EncodeToString(b[:])
}

func (s *sidecar) listSessions() []sidecarwire.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sidecarwire.Session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		out = append(out, sess)
	}
	return out
}

// chat answers agent.chat.stream with its stream id, then streams the
// reply on a goroutine: the answer is on the wire before the first chunk.
func (s *sidecar) chat(r *jsonrpc.Message) {
	p, err := sidecarwire.ChatParams(r.Params, false)
	if err != nil {
		s.answer(r.ID, nil, err)
		return
	}
	text := ""
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == "user" {
			text = messageText(p.Messages[i].Raw)
			break
		}
	}
	ctx, cancel := context.WithCancel(s.life)
	s.mu.Lock()
	s.n++
	id := p.StreamID
	if id == "" || s.streams[id] != nil {
		id = "s_" + strconv.Itoa(s.n)
	}
	s.streams[id] = cancel
	s.mu.Unlock()
	s.answer(r.ID, map[string]string{"streamId": id}, nil)
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		defer func() {
			s.mu.Lock()
			delete(s.streams, id)
			s.mu.Unlock()
			cancel()
		}()
		reply := Reply(text)
		s.log.Debug("chat", "stream", id, "prompt_bytes", len(text), "reply", reply)
		for i, piece := range Chunks(reply) {
			if (i > 0 && !Pause(ctx, s.delay)) || ctx.Err() != nil {
				s.notify("stream.done", map[string]any{"streamId": id, "ok": false, "cancelled": true})
				return
			}
			s.notify("stream.chunk", map[string]any{"streamId": id, "delta": piece})
		}
		s.notify("stream.done", map[string]any{"streamId": id, "ok": true})
	}()
}

// messageText reads a message's content: a string, or OpenAI content parts.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// waitStreams waits for the running streams, at most shutdownGrace.
func (s *sidecar) waitStreams() bool {
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		close(done)
	}()
	t := time.NewTimer(shutdownGrace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

func (s *sidecar) cancelStreams() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.streams {
		cancel()
	}
}

// sent logs a frame that could not be written.
func (s *sidecar) sent(err error) {
	if err != nil && !errors.Is(err, errServeStopped) {
		s.log.Debug("writing a frame", "error", err)
	}
}

// answer answers request id with result, or err when not nil, as the
// sidecar does (a nil result is no result member).
func (s *sidecar) answer(id json.RawMessage, result any, err *sidecarwire.Error) {
	if err != nil {
		s.log.Debug("request refused", "error", err)
	}
	s.sent(s.rpc.Send(sidecarwire.Answer(id, result, err)))
}

func (s *sidecar) notify(method string, params any) { s.sent(s.rpc.Notify(method, params)) }
