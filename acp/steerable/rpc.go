package steerable

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
)

// The sidecar's methods and notifications the bridge uses.
const (
	methodPing          = "system.ping"
	methodShutdown      = "system.shutdown"
	methodSessionCreate = "agent.session.create"
	methodSessionResume = "agent.session.resume"
	methodChatStream    = "agent.chat.stream"
	methodChatCancel    = "agent.chat.cancel"

	noteReady    = "lifecycle.ready"
	noteShutdown = "lifecycle.shutdown"
	noteChunk    = "stream.chunk"
	noteDone     = "stream.done"
	noteError    = "stream.error"

	// readyMarker opens the sidecar's ready line on stderr.
	readyMarker = "__SIDECAR_READY__:"
)

// codeMethodNotFound answers a request from the sidecar: the bridge
// serves none.
const codeMethodNotFound = -32601

// maxAnswering bounds the answers to the sidecar's own requests written at
// once; the bridge serves none, and a sidecar sending a flood of them gets
// the excess ignored rather than a goroutine each.
const maxAnswering = 8

// outbound is a request; "jsonrpc" comes first on the wire.
type outbound struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// inbound is any frame from the sidecar: a response (id, no method), a
// notification (method, no id) or a request (both).
type inbound struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *wireError      `json:"error"`
}

// wireError is an error answer: the sidecar adds its kind of failure
// ("invalid_params", "internal", "policy_denied" …) to JSON-RPC's fields.
type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Kind    string          `json:"kind,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// call is a request waiting for its response.
type call struct {
	method string
	ch     chan reply // cap 1
	// onResult runs on the reader goroutine when a result arrives, before
	// the next frame is read: agent.chat.stream binds its stream id there,
	// so the chunks that follow the answer find their turn.
	onResult func(json.RawMessage) error
}

type reply struct {
	result json.RawMessage
	err    error
}

// send writes one frame; the writer serialises frames and bounds each
// write, so a sidecar that stops reading cannot hold the bridge.
func (c *conn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%w: writing to the sidecar: %v", acp.ErrAgentGone, err)
	}
	return nil
}

// call sends a request and waits for its answer within ctx. A request
// given up is forgotten: its late answer is logged and dropped.
func (c *conn) call(ctx context.Context, method string, params any, onResult func(json.RawMessage) error) (json.RawMessage, error) {
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	id := c.nextID.Add(1)
	cl := &call{method: method, ch: make(chan reply, 1), onResult: onResult}
	c.mu.Lock()
	c.pending[id] = cl
	if method == methodChatStream {
		c.streamCalls++
	}
	c.mu.Unlock()
	defer c.forgetCall(id, method)
	if err := c.send(outbound{JSONRPC: "2.0", ID: id, Method: method, Params: params}); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-cl.ch:
		return r.result, r.err
	case <-ctx.Done():
		if err := c.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if method == methodChatStream {
			c.orphan(id)
		}
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	case <-c.done:
		return nil, fmt.Errorf("%s: %w", method, c.Err())
	}
}

// forgetCall removes a finished or abandoned call. Notifications for
// unknown streams are held only while an agent.chat.stream answer is
// awaited (the sidecar may stream before its answer is written); once none
// is, what is held is dropped.
func (c *conn) forgetCall(id int64, method string) {
	c.mu.Lock()
	delete(c.pending, id)
	dropped := 0
	if method == methodChatStream {
		if c.streamCalls--; c.streamCalls == 0 {
			dropped = len(c.early)
			c.early = nil
		}
	}
	c.mu.Unlock()
	for range dropped {
		c.dropped("unknown_stream")
	}
}

// maxOrphans bounds the abandoned agent.chat.stream calls remembered.
const maxOrphans = 64

// orphan remembers an agent.chat.stream given up before its answer: if the
// answer comes after all, its stream is cancelled (the sidecar has no
// session close that would stop it) instead of running on unheard.
func (c *conn) orphan(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[id] == nil {
		return // answered meanwhile
	}
	for k := range c.orphans {
		if len(c.orphans) < maxOrphans {
			break
		}
		delete(c.orphans, k)
	}
	c.orphans[id] = true
}

// notify sends a request whose answer nobody waits for (agent.chat.cancel
// is best effort); its answer arrives for an unknown id and is logged.
func (c *conn) notify(method string, params any) error {
	return c.send(outbound{JSONRPC: "2.0", ID: c.nextID.Add(1), Method: method, Params: params})
}

// read handles the sidecar's stdout until it ends, then marks the
// connection dead. It never blocks on a turn: notifications go into
// bounded mailboxes, and answers to the sidecar's requests are written by
// other goroutines.
func (c *conn) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		var tooLong bool
		line, tooLong, err = acp.ReadLine(br, c.cfg.MaxLine)
		switch {
		case tooLong:
			c.log.Warn("discarded sidecar stdout line over the size limit", "limit", c.cfg.MaxLine)
			c.dropped("oversize")
		case len(line) > 0:
			c.frame(line)
		}
		if err != nil {
			break
		}
	}
	cause := "stdout closed"
	if !errors.Is(err, io.EOF) {
		cause = "reading stdout: " + err.Error()
	}
	c.setCause(cause)
	c.markDead(fmt.Errorf("%w: connection closed", acp.ErrAgentGone))
}

// frame dispatches one line.
func (c *conn) frame(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var f inbound
	if line[0] != '{' || json.Unmarshal(line, &f) != nil {
		c.noise(string(truncate(line, 4096))) // redacted on this much, then cut to 512
		return
	}
	hasID := len(f.ID) > 0 && string(f.ID) != "null"
	switch {
	case f.Method == "" && hasID:
		c.response(f)
	case f.Method == "" && f.Error != nil:
		c.log.Warn("sidecar reported an error for a request it could not read", "code", f.Error.Code, "message", f.Error.Message)
	case f.Method != "" && hasID:
		c.answerUnserved(f.ID, f.Method)
	case f.Method != "":
		c.notification(f.Method, f.Params)
	default:
		c.log.Warn("sidecar sent a frame with neither id nor method")
	}
}

// response hands an answer to its waiting call.
func (c *conn) response(f inbound) {
	id, ok := parseID(f.ID)
	c.mu.Lock()
	cl := c.pending[id]
	if ok && cl != nil {
		delete(c.pending, id)
	}
	orphan := ok && c.orphans[id]
	delete(c.orphans, id)
	c.mu.Unlock()
	if orphan && f.Error == nil {
		var r struct {
			StreamID string `json:"streamId"`
		}
		if json.Unmarshal(f.Result, &r) == nil && r.StreamID != "" {
			c.log.Debug("cancelling a stream answered after its turn gave up", "stream", r.StreamID)
			c.sendCancel(r.StreamID)
		}
		return
	}
	if !ok || cl == nil {
		if f.Error != nil {
			c.log.Debug("sidecar answered a request nobody waits for", "id", string(f.ID), "code", f.Error.Code, "message", f.Error.Message)
		} else {
			c.log.Trace("sidecar answered a request nobody waits for", "id", string(f.ID))
		}
		return
	}
	var r reply
	switch {
	case f.Error != nil:
		r.err = rpcError(cl.method, f.Error)
	case cl.onResult != nil:
		r.result = f.Result
		r.err = cl.onResult(f.Result)
	default:
		r.result = f.Result
	}
	cl.ch <- r
}

// answerUnserved refuses a request from the sidecar: the bridge serves
// none. The answer is written on its own goroutine, so a sidecar that is
// not reading its stdin cannot stall the reader.
func (c *conn) answerUnserved(id json.RawMessage, method string) {
	if c.answering.Add(1) > maxAnswering {
		c.answering.Add(-1)
		c.log.Debug("ignoring sidecar request: too many unanswered", "method", method)
		return
	}
	frame := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{Code: codeMethodNotFound, Message: "Method not found: " + method}}
	if !c.goBackground(func() {
		defer c.answering.Add(-1)
		if err := c.send(frame); err != nil {
			c.log.Debug("could not answer sidecar request", "method", method, "error", err)
		}
	}) {
		c.answering.Add(-1)
	}
}

// parseID reads a response id: the bridge sends integers, which a sidecar
// may echo back as strings.
func parseID(raw json.RawMessage) (int64, bool) {
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return n, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// rpcError converts a JSON-RPC error: the sidecar's own failure classes
// (by its error kind or code) become an *acp.AgentError of their kind; the
// others an *acp.RPCError (so a message naming a lost session lets the
// pool retry on a new one).
func rpcError(method string, e *wireError) error {
	if kind := cmp.Or(kindForClass(e.Kind), kindForCode(e.Code)); kind != "" {
		return &acp.AgentError{Kind: kind, Method: method, Code: e.Code, Class: e.Kind, Message: e.Message}
	}
	return &acp.RPCError{Method: method, Code: e.Code, Message: e.Message}
}

// kindForCode maps the codes the sidecar (steerable-framework 0.2.3)
// raises for its own failure classes to their kinds. Its published
// catalogue lists -32001…-32005 instead, which it never raises; -32004 is
// its "session not found".
func kindForCode(code int) string {
	switch code {
	case -32021:
		return acp.KindBudgetExhausted
	case -32020:
		return acp.KindPolicyDenied
	case -32030:
		return acp.KindToolDispatch
	case -32011:
		return acp.KindStorage
	}
	return ""
}

// transportClasses are, lowercased without punctuation, the parts of the
// exception class names a stream.error carries when the model provider
// could not be reached or refused the request (httpx's ConnectError,
// ReadTimeout, RemoteProtocolError, HTTPStatusError …; the anthropic
// SDK's APIConnectionError, APIStatusError, RateLimitError …).
var transportClasses = []string{"transport", "connect", "timeout", "network", "protocolerror", "readerror",
	"writeerror", "proxyerror", "httpstatus", "apistatus", "ratelimit", "authentication", "internalserver", "overloaded"}

// kindForClass maps a failure class to one of our kinds: an error
// answer's kind (budget_exhausted, policy_denied, tool_failed) or the
// exception class a stream.error names (the runtime's
// BudgetExhaustedError, PolicyDeniedError, ToolDispatchError,
// StorageError, TransportError, or the HTTP client's; see
// transportClasses). A code given as the class is read as one.
func kindForClass(class string) string {
	if n, err := strconv.Atoi(strings.TrimSpace(class)); err == nil {
		return kindForCode(n)
	}
	var b strings.Builder
	for _, r := range strings.ToLower(class) {
		if r >= 'a' && r <= 'z' {
			b.WriteRune(r)
		}
	}
	k := b.String()
	switch {
	case k == "":
		return ""
	case strings.Contains(k, "budget"):
		return acp.KindBudgetExhausted
	case strings.Contains(k, "policy"):
		return acp.KindPolicyDenied
	case strings.HasPrefix(k, "tool"):
		return acp.KindToolDispatch
	case strings.Contains(k, "storage"):
		return acp.KindStorage
	}
	for _, t := range transportClasses {
		if strings.Contains(k, t) {
			return acp.KindTransport
		}
	}
	return ""
}

func truncate(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[:n]
}
