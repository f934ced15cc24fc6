package steerable

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

// Dialect is what /health and dotty_acp_dialect report for the sidecar.
const Dialect = "steerable"

// earlyCap bounds the notifications held for streams whose
// agent.chat.stream answer has not been read yet.
const earlyCap = 256

// conn is one sidecar process's connection. The reader goroutine owns the
// wire's input; every other method may run on any goroutine.
type conn struct {
	proto   *Protocol
	cfg     Config
	child   agentconn.Child // the supervisor's timings and metrics
	log     hclog.Logger
	rpc     *jsonrpc.Conn
	noise   func(string)
	recycle func(string)
	clock   clockwork.Clock

	answering atomic.Int32

	readyOnce sync.Once
	ready     chan struct{} // closed at the first ready signal

	end *agentconn.Ending

	// bg runs the background goroutines (ping loop, cancels, answers),
	// refused once Wait has begun.
	bg agentconn.Background

	mu          sync.Mutex
	cause       string
	info        agentconn.AgentInfo
	streamCalls int              // agent.chat.stream answers awaited
	early       []early          // notifications for streams not bound yet
	turns       map[string]*turn // running turns by session id
	streams     map[string]*stream
}

// turn is a running turn's routing entry.
type turn struct {
	mb           *agentconn.Mailbox
	stream       *stream // set once the turn's agent.chat.stream is sent
	cancelWanted bool    // cancelled before its stream id was known
}

// stream is one agent.chat.stream: the text it delivered (what the user
// heard) and how it ended.
type stream struct {
	sid string
	t   *turn // nil when the turn has already ended

	mu        sync.Mutex
	id        string
	reply     strings.Builder
	delivered int
	res       agentconn.PromptResult
	err       error
	finished  chan struct{}
	once      sync.Once
}

// early is a notification held for a stream not yet bound.
type early struct {
	method string
	params json.RawMessage
	id     string
}

func newConn(p *Protocol, ch agentconn.Child) *conn {
	noise := ch.Noise
	if noise == nil {
		noise = func(string) {}
	}
	recycle := ch.Recycle
	if recycle == nil {
		recycle = func(string) {}
	}
	clock := ch.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	log := ch.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := &conn{
		proto: p, cfg: p.cfg, child: ch, log: log,
		noise: noise, recycle: recycle, clock: clock,
		ready:   make(chan struct{}),
		end:     agentconn.NewEnding(),
		info:    agentconn.AgentInfo{Dialect: Dialect},
		turns:   make(map[string]*turn),
		streams: make(map[string]*stream),
	}
	c.rpc = c.newRPC(ch.Stdin)
	return c
}

var _ agentconn.ChildConn = (*conn)(nil)

// Done implements agentconn.Conn.
func (c *conn) Done() <-chan struct{} { return c.end.Done() }

// Err implements agentconn.Conn.
func (c *conn) Err() error { return c.end.Err() }

// markDead ends the connection; the calls still waiting on the sidecar
// are failed once Done is closed.
func (c *conn) markDead(err error) { c.end.End(err, nil, c.rpc.Close) }

// Abort implements agentconn.ChildConn.
func (c *conn) Abort(err error) { c.markDead(err) }

func (c *conn) setCause(s string) {
	c.mu.Lock()
	if c.cause == "" {
		c.cause = s
	}
	c.mu.Unlock()
}

// CloseCause implements agentconn.ChildConn.
func (c *conn) CloseCause() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Wait implements agentconn.ChildConn.
func (c *conn) Wait() { c.bg.Wait() }

func (c *conn) dropped(reason string) {
	c.child.Metrics.Dropped(reason)
}

// Traits implements agentconn.Conn: the sidecar cancels streams in protocol; its
// sessions outlive a restart, resumed or created again with the history
// the bridge keeps (ResumeSession); it has no session limit of its own.
func (c *conn) Traits() agentconn.Traits {
	return agentconn.Traits{Cancel: true, Resume: true, InitTimeout: c.child.InitTimeout, CancelGrace: c.child.CancelGrace}
}

// TurnLease implements agentconn.Conn: the sidecar runs turns concurrently.
func (c *conn) TurnLease() chan struct{} { return nil }

// Recycle implements agentconn.Conn.
func (c *conn) Recycle(reason string) { c.recycle(reason) }

// LateSessions implements agentconn.Conn. A session created after its caller
// gave up is never recorded; the sidecar has no method to close one, so
// it holds nothing the bridge could give back.
func (c *conn) LateSessions() int { return 0 }

// Info implements agentconn.ChildConn from the ready signal and the last ping.
func (c *conn) Info() agentconn.AgentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.info
	i.LoadedProviders = append([]string(nil), i.LoadedProviders...)
	if i.LoadedTools != nil {
		n := *i.LoadedTools
		i.LoadedTools = &n
	}
	return i
}

// readyInfo is what the ready marker, lifecycle.ready and system.ping
// report; unknown fields are ignored. name is not in the spec: the
// bridge's demo sidecar sends it so the dashboard can tell it apart.
type readyInfo struct {
	Status          string            `json:"status"`
	Name            string            `json:"name"`
	Version         string            `json:"version"`
	ProtocolVersion string            `json:"protocolVersion"`
	UptimeMs        *float64          `json:"uptimeMs"`
	LoadedProviders []json.RawMessage `json:"loadedProviders"`
	LoadedTools     json.RawMessage   `json:"loadedTools"`
}

// apply records r's fields that are present.
func (c *conn) applyLocked(r readyInfo) {
	i := &c.info
	i.Status = cmp.Or(r.Status, i.Status)
	i.Name = cmp.Or(r.Name, i.Name)
	i.Version = cmp.Or(r.Version, i.Version)
	i.ProtocolVersion = cmp.Or(r.ProtocolVersion, i.ProtocolVersion)
	if r.UptimeMs != nil {
		i.Uptime = time.Duration(*r.UptimeMs * float64(time.Millisecond))
	}
	if r.LoadedProviders != nil {
		i.LoadedProviders = providerNames(r.LoadedProviders)
	}
	if n, ok := toolCount(r.LoadedTools); ok {
		i.LoadedTools = &n
	}
}

// providerNames reads loadedProviders, whose element type the spec leaves
// open: names, or objects naming one.
func providerNames(raw []json.RawMessage) []string {
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, s)
			continue
		}
		var o struct {
			Name string `json:"name"`
			ID   string `json:"id"`
		}
		if json.Unmarshal(r, &o) == nil && cmp.Or(o.Name, o.ID) != "" {
			out = append(out, cmp.Or(o.Name, o.ID))
		}
	}
	return out
}

// toolCount reads loadedTools: a count, or a list of tools.
func toolCount(raw json.RawMessage) (int, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n, true
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		return len(list), true
	}
	return 0, false
}

// StderrLine implements agentconn.ChildConn: the ready marker may come here.
func (c *conn) StderrLine(line string) {
	i := strings.Index(line, readyMarker)
	if i < 0 {
		return
	}
	var r readyInfo
	if err := json.Unmarshal([]byte(strings.TrimSpace(line[i+len(readyMarker):])), &r); err != nil {
		c.log.Warn("sidecar ready marker not understood; taking it as ready", "error", err)
	}
	c.markReady("stderr marker", r)
}

// markReady records the sidecar's ready signal; the first one wins.
func (c *conn) markReady(via string, r readyInfo) {
	c.mu.Lock()
	c.applyLocked(r)
	c.mu.Unlock()
	c.readyOnce.Do(func() {
		c.log.Debug("sidecar ready", "via", via, "version", r.Version, "protocol_version", r.ProtocolVersion)
		if r.Status != "" && r.Status != "ok" {
			c.log.Warn("sidecar ready with a status other than ok", "status", r.Status)
		}
		close(c.ready)
	})
}

// Handshake implements agentconn.ChildConn: it waits for whichever ready signal
// comes first, the stderr marker or lifecycle.ready (a --quiet-ready
// sidecar sends only the latter), within InitTimeout. Nothing is sent
// before it. Then the health pings start.
func (c *conn) Handshake(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.child.InitTimeout)
	defer cancel()
	select {
	case <-c.ready:
	case <-c.end.Done():
		return fmt.Errorf("waiting for the sidecar's ready signal: %w", c.Err())
	case <-ctx.Done():
		return fmt.Errorf("sidecar sent no ready signal within %s: %w", c.child.InitTimeout, ctx.Err())
	}
	c.bg.Go(c.pingLoop)
	return nil
}

// pingLoop refreshes the health snapshot with system.ping every
// PingInterval, and restarts a sidecar that stops answering: a hung
// sidecar would otherwise fail every turn until its timeout.
func (c *conn) pingLoop() {
	tick := c.clock.NewTicker(c.cfg.PingInterval)
	defer tick.Stop()
	misses := 0
	for {
		switch c.ping() {
		case nil:
			misses = 0
		case context.DeadlineExceeded:
			misses++
			c.log.Warn("sidecar did not answer system.ping", "timeout", c.cfg.PingTimeout, "misses", misses)
			if misses >= c.cfg.PingMisses {
				c.recycle(fmt.Sprintf("sidecar did not answer %d pings", misses))
				return
			}
		}
		select {
		case <-tick.Chan():
		case <-c.end.Done():
			return
		}
	}
}

// ping runs one system.ping: nil when answered (errors too are answers),
// context.DeadlineExceeded when not in time, another error when the
// connection is gone.
func (c *conn) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.PingTimeout)
	defer cancel()
	raw, err := c.call(ctx, methodPing, nil, jsonrpc.CallOptions{})
	switch {
	case c.Err() != nil:
		return c.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case err != nil:
		c.log.Debug("system.ping failed", "error", err)
		return nil
	}
	var r readyInfo
	if err := json.Unmarshal(raw, &r); err != nil {
		c.log.Debug("system.ping result not understood", "error", err)
		return nil
	}
	c.mu.Lock()
	c.applyLocked(r)
	c.mu.Unlock()
	return nil
}

// Shutdown implements agentconn.ChildConn: system.shutdown (the sidecar drains
// its streams, answers and exits), waiting at most StopGrace for the exit.
// A sidecar that ignores it is then sent SIGTERM by the supervisor.
func (c *conn) Shutdown(exited <-chan struct{}) bool {
	if c.Err() != nil {
		return false
	}
	grace := time.NewTimer(c.child.StopGrace)
	defer grace.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answered := make(chan error, 1)
	if !c.bg.Go(func() {
		_, err := c.call(ctx, methodShutdown, nil, jsonrpc.CallOptions{})
		answered <- err
	}) {
		return false
	}
	for {
		select {
		case <-exited:
			return true
		case err := <-answered:
			answered = nil
			if err != nil && ctx.Err() == nil && c.Err() == nil {
				c.log.Warn("sidecar refused system.shutdown", "error", err)
			}
		case <-grace.C:
			c.log.Warn("sidecar did not exit after system.shutdown; closing stdin and sending SIGTERM", "grace", c.child.StopGrace)
			return true
		}
	}
}

// sessionResult reads an AgentSession: the sidecar's answer carries the
// session's key, sessionId (what agent.session.resume takes), and no id;
// session_id, id and a bare string are read in that order when it is
// missing.
func sessionResult(method string, raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, nil
	}
	var r struct {
		SessionID  string `json:"sessionId"`
		SessionID2 string `json:"session_id"`
		ID         string `json:"id"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || cmp.Or(r.SessionID, r.SessionID2, r.ID) == "" {
		return "", fmt.Errorf("%s: no session id in %s", method, raw[:min(len(raw), 256)])
	}
	return cmp.Or(r.SessionID, r.SessionID2, r.ID), nil
}

// chatIDHash is how many hex digits of the key's SHA-256 a chat id ends in.
const chatIDHash = 16

// chatIDKept is how many characters of the key a chat id keeps.
const chatIDKept = 24

// ChatID is the chatId agent.session.create names key's conversation
// with. The sidecar requires one (a string; its SQL storage holds 191
// characters). It is stable for a key, across restarts of the sidecar and
// of the bridge, and at most 47 ASCII characters: "dotty-", the key's
// first 24 characters of [A-Za-z0-9._-] (others become "_"), "-", and 16
// hex digits of the key's SHA-256, so distinct keys do not share one.
func ChatID(key string) string {
	var b strings.Builder
	b.WriteString("dotty-")
	n := 0
	for _, r := range key {
		if n == chatIDKept {
			break
		}
		n++
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(key))
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(sum[:])[:chatIDHash])
	return b.String()
}

// createParams are agent.session.create's: the sidecar requires chatId;
// it defaults userId ("local"), currentStage and scenario itself and makes
// up the sessionId.
type createParams struct {
	ChatID string `json:"chatId"`
}

// NewSession implements agentconn.Conn: agent.session.create, bounded by
// InitTimeout, for the pool key ctx carries (agentconn.DefaultKey when none).
// The new session's history starts empty.
func (c *conn) NewSession(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.child.InitTimeout)
	defer cancel()
	sid, err := c.create(ctx)
	if err != nil {
		return "", err
	}
	c.proto.hist.create(sid)
	return sid, nil
}

func (c *conn) create(ctx context.Context) (string, error) {
	key := cmp.Or(agentconn.SessionKey(ctx), agentconn.DefaultKey)
	raw, err := c.call(ctx, methodSessionCreate, createParams{ChatID: ChatID(key)}, jsonrpc.CallOptions{})
	if err != nil {
		return "", err
	}
	return sessionResult(methodSessionCreate, raw)
}

// ResumeSession implements agentconn.Conn: agent.session.resume of a session
// opened before the sidecar restarted, or, when the sidecar no longer has
// it, agent.session.create (the sidecar keeps its sessions in memory
// unless its embedder gives it a database, so after its own restart it
// answers -32004 "session not found"). Either way the bridge's history of
// the session carries over, so the conversation goes on. Both are bounded
// by one InitTimeout.
func (c *conn) ResumeSession(ctx context.Context, sid string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.child.InitTimeout)
	defer cancel()
	raw, err := c.call(ctx, methodSessionResume, map[string]string{"sessionId": sid}, jsonrpc.CallOptions{})
	if err == nil {
		id, perr := sessionResult(methodSessionResume, raw)
		if perr != nil {
			id = sid // an empty answer: the sidecar resumed what it was asked
		}
		c.proto.hist.rename(sid, id)
		return id, nil
	}
	// On failure the history stays: the pool forgets it (ForgetSession)
	// when it gives the session up, and keeps it when this process died
	// too, so the next one is asked again.
	if c.Err() != nil || ctx.Err() != nil {
		return "", err
	}
	c.log.Info("sidecar cannot resume the session; creating a new one for the conversation", "session", sid, "error", err)
	id, err := c.create(ctx)
	if err != nil {
		return "", err
	}
	c.proto.hist.rename(sid, id)
	return id, nil
}

// CloseSession implements agentconn.Conn. The sidecar has no method to close a
// session; the bridge forgets its history.
func (c *conn) CloseSession(_ context.Context, sid string) { c.ForgetSession(sid) }

// ForgetSession implements agentconn.Conn.
func (c *conn) ForgetSession(sid string) { c.proto.hist.forget(sid) }

// BeginTurn implements agentconn.Conn.
func (c *conn) BeginTurn(m *agentconn.Mailbox) {
	c.mu.Lock()
	c.turns[m.SessionID()] = &turn{mb: m}
	c.mu.Unlock()
}

// EndTurn implements agentconn.Conn.
func (c *conn) EndTurn(m *agentconn.Mailbox) {
	c.mu.Lock()
	if t := c.turns[m.SessionID()]; t != nil && t.mb == m {
		delete(c.turns, m.SessionID())
		if t.stream != nil {
			t.stream.mu.Lock()
			t.stream.t = nil
			t.stream.mu.Unlock()
		}
	}
	c.mu.Unlock()
}

// chatParams is agent.chat.stream's payload, what the sidecar reads of it:
// it builds the model's provider from provider (required) and model
// (required), baseUrl and apiKey; it sends temperature and messages. It
// reads no session: the conversation is the messages.
type chatParams struct {
	Provider    string    `json:"provider,omitempty"`
	Model       string    `json:"model,omitempty"`
	BaseURL     string    `json:"baseUrl,omitempty"`
	APIKey      string    `json:"apiKey,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	Messages    []Message `json:"messages"`
}

// Prompt implements agentconn.Conn: agent.chat.stream with the session's
// history and text, then the stream's notifications until stream.done or
// stream.error. The exchange joins the history when the stream ends: whole,
// or, after a barge-in, as far as it was delivered.
func (c *conn) Prompt(ctx context.Context, sid, text string) (agentconn.PromptResult, error) {
	st := &stream{sid: sid, finished: make(chan struct{})}
	c.mu.Lock()
	if t := c.turns[sid]; t != nil {
		st.t, t.stream = t, st
	}
	c.mu.Unlock()
	defer c.unbind(st)

	params := chatParams{
		Provider: c.cfg.Provider, Model: c.cfg.Model, BaseURL: c.cfg.BaseURL,
		APIKey: string(c.cfg.APIKey), Temperature: c.cfg.Temperature,
		Messages: c.proto.hist.messages(sid, text),
	}
	c.mu.Lock()
	c.streamCalls++
	c.mu.Unlock()
	_, err := c.call(ctx, methodChatStream, params, jsonrpc.CallOptions{
		OnResult: func(res json.RawMessage) error { return c.bind(st, res) },
		OnLate:   c.lateStream,
	})
	c.streamCallDone()
	if err != nil {
		if ctx.Err() != nil {
			c.cancelBound(st) // answered just as the turn gave up
		}
		return agentconn.PromptResult{}, err
	}
	select {
	case <-st.finished:
	case <-ctx.Done():
		if err := c.Err(); err != nil {
			return agentconn.PromptResult{}, fmt.Errorf("%s: %w", methodChatStream, err)
		}
		return agentconn.PromptResult{}, fmt.Errorf("%s: %w", methodChatStream, ctx.Err())
	case <-c.end.Done():
		return agentconn.PromptResult{}, fmt.Errorf("%s: stream %s: %w", methodChatStream, st.id, c.Err())
	}
	st.mu.Lock()
	res, err, reply := st.res, st.err, st.reply.String()
	cut := res.StopReason == agentconn.StopCancelled || (st.t != nil && st.t.mb.IsCancelled())
	st.mu.Unlock()
	if err != nil {
		return agentconn.PromptResult{}, err
	}
	c.proto.hist.add(sid, text, reply, cut)
	return res, nil
}

// streamCallDone ends an agent.chat.stream call. Notifications for unknown
// streams are held only while such an answer is awaited (the sidecar may
// stream before its answer is written); once none is, what is held is
// dropped.
func (c *conn) streamCallDone() {
	c.mu.Lock()
	dropped := 0
	if c.streamCalls--; c.streamCalls == 0 {
		dropped = len(c.early)
		c.early = nil
	}
	c.mu.Unlock()
	for range dropped {
		c.dropped("unknown_stream")
	}
}

// bind runs on the reader goroutine with agent.chat.stream's answer: the
// stream's chunks, which follow it on the wire, are routed from now on, and
// any that overtook it are delivered first.
func (c *conn) bind(st *stream, res json.RawMessage) error {
	var r struct {
		StreamID  string `json:"streamId"`
		StreamID2 string `json:"stream_id"`
	}
	if err := json.Unmarshal(res, &r); err != nil || cmp.Or(r.StreamID, r.StreamID2) == "" {
		return fmt.Errorf("%s: no streamId in %s", methodChatStream, res[:min(len(res), 256)])
	}
	id := cmp.Or(r.StreamID, r.StreamID2)
	c.mu.Lock()
	st.mu.Lock()
	st.id = id
	cancel := st.t != nil && st.t.cancelWanted
	st.mu.Unlock()
	c.streams[id] = st
	var replay []early
	kept := c.early[:0]
	for _, e := range c.early {
		if e.id == id {
			replay = append(replay, e)
		} else {
			kept = append(kept, e)
		}
	}
	c.early = kept
	c.mu.Unlock()
	for _, e := range replay {
		c.notification(e.method, e.params)
	}
	if cancel {
		c.sendCancel(id)
	}
	return nil
}

// unbind forgets a stream whose Prompt has returned; anything the sidecar
// still sends for it is dropped as for an unknown stream.
func (c *conn) unbind(st *stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.mu.Lock()
	id := st.id
	st.mu.Unlock()
	if id != "" && c.streams[id] == st {
		delete(c.streams, id)
	}
	if t := st.t; t != nil && t.stream == st {
		t.stream = nil
	}
}

// cancelBound cancels st's stream if it has an id and has not ended.
func (c *conn) cancelBound(st *stream) {
	st.mu.Lock()
	id := st.id
	st.mu.Unlock()
	select {
	case <-st.finished:
	default:
		if id != "" {
			c.sendCancel(id)
		}
	}
}

// CancelTurn implements agentconn.Conn: agent.chat.cancel for the session's
// stream at once, without waiting for its answer; a stream whose id is not
// known yet is cancelled as soon as its answer arrives.
func (c *conn) CancelTurn(sid string) error {
	c.mu.Lock()
	t := c.turns[sid]
	var id string
	if t != nil {
		if t.stream != nil {
			t.stream.mu.Lock()
			id = t.stream.id
			t.stream.mu.Unlock()
		}
		if id == "" {
			t.cancelWanted = true
		}
	}
	c.mu.Unlock()
	if id == "" {
		return nil
	}
	return c.cancelStream(id)
}

func (c *conn) cancelStream(id string) error {
	if err := c.notify(methodChatCancel, map[string]string{"streamId": id}); err != nil {
		return fmt.Errorf("%s: %w", methodChatCancel, err)
	}
	return nil
}

// sendCancel cancels a stream from the reader goroutine, which must never
// write (a sidecar blocked writing its stdout would not read its stdin).
func (c *conn) sendCancel(id string) {
	c.bg.Go(func() {
		if err := c.cancelStream(id); err != nil {
			c.log.Debug("agent.chat.cancel not sent", "stream", id, "error", err)
		}
	})
}

// notification handles one notification on the reader goroutine, in O(1)
// and without blocking.
func (c *conn) notification(method string, params json.RawMessage) {
	switch method {
	case noteChunk, noteDone, noteError:
		c.streamNote(method, params)
	case noteReady:
		var r readyInfo
		_ = json.Unmarshal(params, &r)
		c.markReady("lifecycle.ready", r)
	case noteShutdown:
		var r struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(params, &r)
		c.log.Info("sidecar is shutting down", "reason", r.Reason)
	default:
		c.log.Debug("ignoring sidecar notification", "method", method)
	}
}

// streamParams are the params of stream.chunk, stream.done and
// stream.error together.
type streamParams struct {
	StreamID     string          `json:"streamId"`
	Delta        json.RawMessage `json:"delta"`
	ToolCall     json.RawMessage `json:"toolCall"`
	Usage        json.RawMessage `json:"usage"`
	FinishReason string          `json:"finishReason"`
	OK           *bool           `json:"ok"`
	Cancelled    bool            `json:"cancelled"`
	Kind         string          `json:"kind"`
	Message      string          `json:"message"`
	Code         int             `json:"code"`
}

func (c *conn) streamNote(method string, params json.RawMessage) {
	var p streamParams
	if err := json.Unmarshal(params, &p); err != nil {
		c.log.Debug("sidecar stream notification not understood", "method", method, "error", err)
		c.dropped("unknown_kind")
		return
	}
	c.mu.Lock()
	st := c.streams[p.StreamID]
	if st == nil {
		held := c.streamCalls > 0 && len(c.early) < earlyCap
		if held {
			c.early = append(c.early, early{method: method, params: params, id: p.StreamID})
		}
		c.mu.Unlock()
		if !held {
			c.log.Trace("dropping a notification for an unknown stream", "method", method, "stream", p.StreamID)
			c.dropped("unknown_stream")
		}
		return
	}
	if method != noteChunk {
		delete(c.streams, p.StreamID) // nothing after its end belongs to it
	}
	c.mu.Unlock()
	switch method {
	case noteChunk:
		c.chunk(st, p)
	case noteDone:
		res := agentconn.PromptResult{StopReason: agentconn.StopEndTurn}
		var err error
		switch {
		case p.Cancelled:
			res.StopReason = agentconn.StopCancelled
		case p.OK != nil && !*p.OK:
			err = fmt.Errorf("%s: stream %s ended without success", methodChatStream, p.StreamID)
		default:
			st.mu.Lock()
			res.StopReason = cmp.Or(st.res.StopReason, agentconn.StopEndTurn)
			st.mu.Unlock()
		}
		st.finish(res, err)
	case noteError:
		kind := kindForCode(p.Code)
		if kind == "" {
			kind = kindForClass(p.Kind)
		}
		st.finish(agentconn.PromptResult{}, &agentconn.AgentError{Kind: kind, Method: methodChatStream, Code: p.Code, Class: p.Kind, Message: p.Message})
	}
}

// chunk delivers a stream.chunk's text to the turn, within the reply cap.
func (c *conn) chunk(st *stream, p streamParams) {
	if len(p.ToolCall) > 0 && string(p.ToolCall) != "null" {
		c.log.Info("agent tool call", "session", st.sid, "stream", p.StreamID, "tool", toolName(p.ToolCall))
	}
	if len(p.Usage) > 0 && string(p.Usage) != "null" {
		c.log.Trace("agent usage", "stream", p.StreamID, "usage", string(p.Usage[:min(len(p.Usage), 256)]))
	}
	text := deltaText(p.Delta)
	st.mu.Lock()
	defer st.mu.Unlock()
	if p.FinishReason != "" {
		st.res.StopReason = stopReason(p.FinishReason)
	}
	if text == "" {
		return
	}
	if st.delivered+len(text) > c.cfg.MaxReply {
		c.dropped("reply_cap")
		return
	}
	if st.t != nil {
		if ok, reason := st.t.mb.Push(text); !ok {
			c.dropped(reason)
			return
		}
	}
	st.delivered += len(text)
	st.reply.WriteString(text)
}

// finish ends the stream once.
func (st *stream) finish(res agentconn.PromptResult, err error) {
	st.once.Do(func() {
		st.mu.Lock()
		st.res, st.err = res, err
		st.mu.Unlock()
		close(st.finished)
	})
}

// deltaText reads a chunk's delta: a string, or an object with its text.
func deltaText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
		Text    string `json:"text"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return cmp.Or(o.Content, o.Text)
	}
	return ""
}

// toolName reads a tool call's name, OpenAI-shaped or flat.
func toolName(raw json.RawMessage) string {
	var t struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &t)
	return cmp.Or(t.Function.Name, t.Name)
}

// stopReason maps an OpenAI finish reason to the stop reasons the bridge
// logs (ACP's).
func stopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	default:
		return agentconn.StopEndTurn
	}
}
