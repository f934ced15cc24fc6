package steerable

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
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

// maxAnswering bounds the answers to the sidecar's own requests written at
// once; the bridge serves none, and a sidecar sending a flood of them gets
// the excess ignored rather than a goroutine each.
const maxAnswering = 8

// sidecarWriter is the sidecar's stdin: a failed write means the sidecar
// is gone. The stdin writer bounds each write, so a sidecar that stops
// reading cannot hold the bridge.
type sidecarWriter struct{ w io.Writer }

func (s sidecarWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("%w: writing to the sidecar: %v", agentconn.ErrAgentGone, err)
	}
	return n, nil
}

// newRPC is the connection to the sidecar's stdio.
func (c *conn) newRPC(stdin io.Writer) *jsonrpc.Conn {
	return jsonrpc.NewConn(sidecarWriter{stdin}, jsonrpc.Options{
		MaxLine: c.cfg.MaxLine,
		Handle:  c.frame,
		Noise: func(line []byte, _ error) {
			c.noise(string(line[:min(len(line), 4096)])) // redacted on this much, then cut to 512
		},
		Oversize: func() {
			c.log.Warn("discarded sidecar stdout line over the size limit", "limit", c.cfg.MaxLine)
			c.dropped("oversize")
		},
	})
}

// call sends a request and waits for its answer within ctx. A request
// given up is forgotten (its late answer is logged and dropped) unless
// opts.OnLate keeps it.
func (c *conn) call(ctx context.Context, method string, params any, opts jsonrpc.CallOptions) (json.RawMessage, error) {
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	res, err := c.rpc.Call(ctx, method, params, opts)
	var we *jsonrpc.Error
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &we):
		return nil, rpcError(method, we)
	case errors.Is(err, jsonrpc.ErrClosed) || (ctx.Err() != nil && errors.Is(err, ctx.Err())):
		if dead := c.Err(); dead != nil {
			return nil, fmt.Errorf("%s: %w", method, dead)
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	case errors.Is(err, agentconn.ErrAgentGone):
		return nil, fmt.Errorf("%s: %w", method, err) // writing the request
	default:
		return nil, err // opts.OnResult's
	}
}

// notify sends a request whose answer nobody waits for (agent.chat.cancel
// is best effort); its answer arrives for an unknown id and is logged.
func (c *conn) notify(method string, params any) error {
	return c.rpc.Post(method, params)
}

// read handles the sidecar's stdout until it ends, then marks the
// connection dead. It never blocks on a turn: notifications go into
// bounded mailboxes, and answers to the sidecar's requests are written by
// other goroutines.
func (c *conn) read(r io.Reader) {
	err := c.rpc.Run(r)
	cause := "stdout closed"
	if !errors.Is(err, io.EOF) {
		cause = "reading stdout: " + err.Error()
	}
	c.setCause(cause)
	c.markDead(fmt.Errorf("%w: connection closed", agentconn.ErrAgentGone))
}

// frame handles one frame that is not the answer to a waiting call.
func (c *conn) frame(f *jsonrpc.Message) {
	switch {
	case f.Method == "" && f.HasID():
		if f.Error != nil {
			c.log.Debug("sidecar answered a request nobody waits for", "id", string(f.ID), "code", f.Error.Code, "message", f.Error.Message)
		} else {
			c.log.Trace("sidecar answered a request nobody waits for", "id", string(f.ID))
		}
	case f.Method == "" && f.Error != nil:
		c.log.Warn("sidecar reported an error for a request it could not read", "code", f.Error.Code, "message", f.Error.Message)
	case f.Method != "" && f.HasID():
		c.answerUnserved(f.ID, f.Method)
	case f.Method != "":
		c.notification(f.Method, f.Params)
	default:
		c.log.Warn("sidecar sent a frame with neither id nor method")
	}
}

// lateStream gets the answer to an agent.chat.stream given up before it:
// its stream is cancelled (the sidecar has no session close that would
// stop it) instead of running on unheard.
func (c *conn) lateStream(f *jsonrpc.Message) {
	if f.Error != nil {
		return
	}
	var r struct {
		StreamID string `json:"streamId"`
	}
	if json.Unmarshal(f.Result, &r) == nil && r.StreamID != "" {
		c.log.Debug("cancelling a stream answered after its turn gave up", "stream", r.StreamID)
		c.sendCancel(r.StreamID)
	}
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
	refusal := &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method}
	if !c.bg.Go(func() {
		defer c.answering.Add(-1)
		if err := c.rpc.Reply(id, nil, refusal); err != nil {
			c.log.Debug("could not answer sidecar request", "method", method, "error", err)
		}
	}) {
		c.answering.Add(-1)
	}
}

// rpcError converts a JSON-RPC error: the sidecar's own failure classes
// (by its error kind or code) become an *agentconn.AgentError of their kind; the
// others an *agentconn.RPCError (so a message naming a lost session lets the
// pool retry on a new one).
func rpcError(method string, e *jsonrpc.Error) error {
	if kind := cmp.Or(kindForClass(e.Kind), kindForCode(e.Code)); kind != "" {
		return &agentconn.AgentError{Kind: kind, Method: method, Code: e.Code, Class: e.Kind, Message: e.Message}
	}
	return &agentconn.RPCError{Method: method, Code: e.Code, Message: e.Message}
}

// kindForCode maps the codes the sidecar (steerable-framework 0.2.3)
// raises for its own failure classes to their kinds. Its published
// catalogue lists -32001…-32005 instead, which it never raises; -32004 is
// its "session not found".
func kindForCode(code int) string {
	switch code {
	case -32021:
		return agentconn.KindBudgetExhausted
	case -32020:
		return agentconn.KindPolicyDenied
	case -32030:
		return agentconn.KindToolDispatch
	case -32011:
		return agentconn.KindStorage
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
		return agentconn.KindBudgetExhausted
	case strings.Contains(k, "policy"):
		return agentconn.KindPolicyDenied
	case strings.HasPrefix(k, "tool"):
		return agentconn.KindToolDispatch
	case strings.Contains(k, "storage"):
		return agentconn.KindStorage
	}
	for _, t := range transportClasses {
		if strings.Contains(k, t) {
			return agentconn.KindTransport
		}
	}
	return ""
}
