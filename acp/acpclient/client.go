package acpclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/childlog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

const (
	methodInitialize        = "initialize"
	methodSessionNew        = "session/new"
	methodSessionLoad       = "session/load"
	methodSessionResume     = "session/resume"
	methodSessionPrompt     = "session/prompt"
	methodSessionCancel     = "session/cancel"
	methodSessionClose      = "session/close"
	methodSessionStop       = "session/stop"
	methodSessionUpdate     = "session/update"
	methodSessionEvent      = "session/event"
	methodRequestPermission = "session/request_permission"

	// retireTimeout bounds one session/close or session/stop.
	retireTimeout = 2 * time.Second
)

// Client is one initialised ACP connection to one agent process (one
// generation). It is safe for concurrent use. Clients come from a
// Supervisor, or from Dial for an agent reached over in-process pipes.
type Client struct {
	gen uint64
	cfg Config
	// initTimeout and cancelGrace are the supervisor's (agentconn.Child).
	initTimeout time.Duration
	cancelGrace time.Duration
	caps        Caps
	adapter     adapter
	conn        *acp.Connection
	log         hclog.Logger
	metrics     *agentconn.Metrics
	perm        agentconn.Permissioner
	cwd         string // cwd sent to non-ZeroClaw v1 agents

	// procLease serialises turns for agents that serve one turn at a time.
	procLease chan struct{}
	// recycle asks the owner to replace this client's process.
	recycle func(reason string)

	end *agentconn.Ending

	// bg runs the requests that open sessions (NewSession,
	// ResumeSession), refused once Wait waits; late counts those given up
	// but still open.
	bg   agentconn.Background
	late atomic.Int32

	// cause keeps the SDK's last "connection closed" cause (supervised
	// clients only).
	cause *closeCause

	mu       sync.Mutex
	turns    map[string]*agentconn.Mailbox // by agent session id
	sessions map[string]bool               // live sessions created on this client
	opening  map[string]int                // sessions being resumed or loaded: their updates are replayed history
	calls    toolCalls                     // tool_call updates of running turns
	warned   map[string]bool               // causes of unidentified permission requests already logged at WARN

	// tokens are the sessions' robot-tools tokens, revoked with their
	// sessions and all at once when the client dies.
	tokens sessionTokens
}

func newClient(ch agentconn.Child, cfg Config) *Client {
	return &Client{
		gen:         ch.Gen,
		cfg:         cfg,
		initTimeout: ch.InitTimeout,
		cancelGrace: ch.CancelGrace,
		log:         cmp.Or(ch.Log, hclog.NewNullLogger()),
		metrics:     ch.Metrics,
		perm:        cfg.Permissions,
		recycle:     func(string) {},
		end:         agentconn.NewEnding(),
		turns:       make(map[string]*agentconn.Mailbox),
		sessions:    make(map[string]bool),
		opening:     make(map[string]int),
		warned:      make(map[string]bool),
		tokens:      sessionTokens{tools: cfg.Tools},
	}
}

// Dial connects to an agent over ch.Stdin (the agent's input) and
// ch.Stdout (its output), runs initialize and detects the dialect; of ch it
// also reads InitTimeout and CancelGrace (both required), Log and Metrics.
// The client dies when ch.Stdout ends. It is meant for agents in the same
// process (tests, benchmarks); supervised children are opened by
// Protocol.Open.
func Dial(ctx context.Context, cfg Config, ch agentconn.Child) (*Client, error) {
	cfg = cfg.withDefaults()
	ch.Gen = 1
	c := newClient(ch, cfg)
	lw := &jsonrpc.LockedWriter{W: ch.Stdin}
	g := newStdoutGuard(ch.Stdout, lw, c.log, c.dropped, c.notification, c.end.Done())
	c.conn = acp.NewConnection(c.handle, lw, g)
	sl, _ := newSlogLogger(c.log.Named("rpc"))
	c.conn.SetLogger(sl)
	g.open()
	go c.watchConn()
	if err := c.initialize(ctx); err != nil {
		c.markDead(err)
		return nil, err
	}
	return c, nil
}

// watchConn marks the client dead when its connection closes.
func (c *Client) watchConn() {
	select {
	case <-c.conn.Done():
		c.markDead(fmt.Errorf("%w: connection closed", agentconn.ErrAgentGone))
	case <-c.end.Done():
	}
}

// initialize sends initialize, detects the dialect and prepares the adapter.
func (c *Client) initialize(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.initTimeout)
	defer cancel()
	params := map[string]any{
		"protocolVersion": acp.ProtocolVersionNumber,
		"clientCapabilities": map[string]any{
			"fs":       map[string]bool{"readTextFile": false, "writeTextFile": false},
			"terminal": false,
		},
		"clientInfo": map[string]string{"name": c.cfg.ClientName, "version": c.cfg.ClientVersion},
	}
	raw, err := acp.SendRequest[json.RawMessage](c.conn, ctx, methodInitialize, params)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("initialize: no answer within %s: %w", c.initTimeout, ctx.Err())
		}
		return fmt.Errorf("initialize: %w", c.rpcErr(methodInitialize, err))
	}
	caps, err := detectDialect(raw)
	if err != nil {
		c.log.Error("agent initialize result not understood", "result", string(raw[:min(len(raw), 2048)]))
		return fmt.Errorf("initialize: %w", err)
	}
	c.caps = caps
	c.adapter = adapterFor(caps)
	if caps.OneTurnPerProcess() {
		c.procLease = make(chan struct{}, 1)
	}
	if caps.Dialect == DialectV1 && !caps.ZeroClaw {
		c.cwd = c.cfg.SessionCwd
		if c.cwd == "" {
			if wd, err := os.Getwd(); err == nil {
				c.cwd = wd
			}
		}
	}
	if c.cfg.Tools != nil && c.cfg.ToolsURL != "" {
		c.log.Info("robot tools for this agent's sessions", "offered", c.toolsTransport())
	}
	if caps.Dialect.Legacy() {
		c.log.Warn("legacy agent dialect: barge-in detaches instead of cancelling and kid-mode tool denial cannot be enforced",
			"dialect", caps.Dialect, "version", caps.AgentVersion)
		if c.cfg.AgentAlias != "" || c.cfg.SessionCwd != "" {
			c.log.Warn("legacy agents ignore the configured agent alias and session cwd")
		}
	}
	return nil
}

// Caps returns what the agent advertised.
func (c *Client) Caps() Caps { return c.caps }

// Done is closed when the client can no longer be used.
func (c *Client) Done() <-chan struct{} { return c.end.Done() }

// Err returns why the client died, or nil while it is alive.
func (c *Client) Err() error {
	if err := c.end.Err(); err != nil {
		return err
	}
	if c.conn != nil {
		select {
		case <-c.conn.Done():
			c.markDead(fmt.Errorf("%w: connection closed", agentconn.ErrAgentGone))
			return c.end.Err()
		default:
		}
	}
	return nil
}

// Acquire makes a Client its own acp.Source: it returns c while c is alive.
func (c *Client) Acquire(context.Context) (agentconn.Conn, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Client) markDead(err error) {
	c.end.End(err, c.tokens.close, nil) // tokens before Done: a session's tools end with its agent
}

func (c *Client) dropped(reason string) { c.metrics.Dropped(reason) }

// rpcErr converts an SDK error into an *RPCError, or ErrAgentGone when the
// connection is gone.
func (c *Client) rpcErr(method string, err error) error {
	if err == nil {
		return nil
	}
	if c.Err() != nil {
		return fmt.Errorf("%s: %w", method, c.Err())
	}
	var re *acp.RequestError
	if errors.As(err, &re) {
		if strings.Contains(re.Error(), "peer disconnected") {
			return fmt.Errorf("%s: %w", method, agentconn.ErrAgentGone)
		}
		return &agentconn.RPCError{Method: method, Code: re.Code, Message: re.Message}
	}
	return fmt.Errorf("%s: %w", method, err)
}

// NewSession creates an agent session, waiting for the agent's answer at
// most InitTimeout and never past ctx (see open).
func (c *Client) NewSession(ctx context.Context) (string, error) {
	params, token := c.sessionParams(ctx)
	return c.open(ctx, methodSessionNew, params, token, c.sessionFromReply)
}

// sessionParams are session/new's params; session/load and session/resume
// take the same (cwd, mcpServers) beside the session id. mcpServers
// offers the robot's tools (toolsEntry) with a token minted for ctx's
// pool key (agentconn.SessionKey, else agentconn.DefaultKey), returned
// for open to bind or revoke; "" when none was minted.
func (c *Client) sessionParams(ctx context.Context) (any, string) {
	params := c.adapter.newSessionParams(c.cfg, c.caps)
	m, ok := params.(map[string]any)
	if !ok {
		return params, ""
	}
	if c.cwd != "" {
		m["cwd"] = c.cwd
	}
	entry, token, ok := c.toolsEntry(cmp.Or(agentconn.SessionKey(ctx), agentconn.DefaultKey))
	if ok {
		m["mcpServers"] = []acp.McpServer{entry}
	}
	return m, token
}

// open sends method, a request that opens a session, and waits for the
// agent's answer at most InitTimeout and never past ctx; record turns the
// answer into the session id and records the session. The request itself
// stays open until the agent answers or the connection ends: the agent may
// still open the session after we stopped waiting, and a session nobody
// recorded would stay open on the agent for the life of the process. Such
// a late session is closed as soon as it arrives; until then it counts in
// LateSessions. token is the robot-tools token params carry: bound to the
// session once it is recorded, revoked when it is not.
func (c *Client) open(ctx context.Context, method string, params any, token string, record func(json.RawMessage, error) (string, error)) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.initTimeout)
	defer cancel()
	type reply struct {
		sid string
		err error
	}
	ch := make(chan reply, 1)
	var handoff sync.Mutex // orders the reply against the caller giving up
	abandoned := false
	// Not the caller's ctx: abandoning the request would lose the reply.
	started := c.bg.Go(func() { // #nosec G118 -- ends with the agent's answer or the connection
		raw, err := acp.SendRequest[json.RawMessage](c.conn, context.Background(), method, params)
		sid, err := record(raw, err)
		if err == nil {
			c.tokens.keep(sid, token)
		} else {
			c.tokens.drop(token)
		}
		handoff.Lock()
		if !abandoned {
			ch <- reply{sid, err}
			handoff.Unlock()
			return
		}
		handoff.Unlock()
		if err == nil {
			c.log.Info("closing an agent session opened after its request was given up", "method", method, "session", sid)
			c.CloseSession(context.Background(), sid)
		}
		c.late.Add(-1)
	})
	if !started {
		c.tokens.drop(token)
		return "", fmt.Errorf("%s: %w", method, c.Err())
	}
	select {
	case r := <-ch:
		return r.sid, r.err
	case <-ctx.Done():
	}
	handoff.Lock()
	defer handoff.Unlock()
	select {
	case r := <-ch: // answered while we gave up
		return r.sid, r.err
	default:
	}
	abandoned = true
	c.late.Add(1)
	return "", fmt.Errorf("%s: %w", method, ctx.Err())
}

// sessionFromReply reads session/new's answer and records the session.
func (c *Client) sessionFromReply(raw json.RawMessage, err error) (string, error) {
	if err != nil {
		err = c.rpcErr(methodSessionNew, err)
		var re *agentconn.RPCError
		if errors.As(err, &re) && re.Code == jsonrpc.CodeInvalidParams {
			c.log.Error("agent refused session/new: check ZEROCLAW_AGENT_ALIAS and ZEROCLAW_SESSION_CWD", "error", re.Message)
		}
		return "", err
	}
	var r struct {
		SessionID  string `json:"sessionId"`
		SessionID2 string `json:"session_id"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || cmp.Or(r.SessionID, r.SessionID2) == "" {
		return "", fmt.Errorf("session/new: no session id in %s", raw[:min(len(raw), 256)])
	}
	sid := cmp.Or(r.SessionID, r.SessionID2)
	c.mu.Lock()
	c.sessions[sid] = true
	c.mu.Unlock()
	return sid, nil
}

// LateSessions counts requests opening a session (session/new, resume,
// load) given up but not yet answered: the agent may hold a session for
// each until it is closed.
func (c *Client) LateSessions() int { return int(c.late.Load()) }

// Wait waits for the requests opening sessions to end; call it once the client is
// dead and its connection closed, so they end promptly.
func (c *Client) Wait() { c.bg.Wait() }

// Prompt sends session/prompt and waits for its result. ctx should outlive
// a barge-in: ending it abandons the result, and the SDK then drops the
// agent's late reply, so the cancelled turn could never be settled.
func (c *Client) Prompt(ctx context.Context, sid, text string) (agentconn.PromptResult, error) {
	raw, err := acp.SendRequest[json.RawMessage](c.conn, ctx, methodSessionPrompt, c.adapter.promptParams(sid, text))
	if err != nil {
		if ctx.Err() != nil {
			return agentconn.PromptResult{}, fmt.Errorf("session/prompt: %w", ctx.Err())
		}
		return agentconn.PromptResult{}, c.rpcErr(methodSessionPrompt, err)
	}
	var r struct {
		StopReason string          `json:"stopReason"`
		Content    json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &r)
	res := agentconn.PromptResult{StopReason: r.StopReason}
	if res.StopReason == "" {
		res.StopReason = string(acp.StopReasonEndTurn)
	}
	if len(r.Content) > 0 {
		var s string
		if json.Unmarshal(r.Content, &s) == nil {
			res.Content, res.HasContent = s, true
		} else if t := blockText(r.Content); t != "" {
			res.Content, res.HasContent = t, true
		}
	}
	return res, nil
}

// CancelTurn asks the agent to stop the session's running turn (v1 only).
func (c *Client) CancelTurn(sid string) error {
	if !c.caps.Cancel() {
		return agentconn.ErrNotSupported
	}
	if err := c.conn.SendNotification(context.Background(), methodSessionCancel, c.adapter.sessionIDParams(sid)); err != nil {
		return c.rpcErr(methodSessionCancel, err)
	}
	return nil
}

// CloseSession ends an agent session: session/close when advertised, else
// session/stop on ZeroClaw, else nothing. Best effort, bounded.
func (c *Client) CloseSession(ctx context.Context, sid string) {
	c.mu.Lock()
	live := c.sessions[sid]
	delete(c.sessions, sid)
	c.calls.dropSession(sid)
	c.mu.Unlock()
	c.tokens.end(sid)
	if !live || c.Err() != nil {
		return
	}
	var method string
	switch {
	case c.caps.Dialect == DialectV1 && c.caps.Close:
		method = methodSessionClose
	case c.caps.ZeroClaw:
		method = methodSessionStop
	default:
		return
	}
	ctx, cancel := context.WithTimeout(ctx, retireTimeout)
	defer cancel()
	if err := c.conn.SendRequestNoResult(ctx, method, c.adapter.sessionIDParams(sid)); err != nil && c.Err() == nil {
		c.log.Debug("session retire failed", "session", sid, "method", method, "error", c.rpcErr(method, err))
	}
}

// ForgetSession drops a session the agent no longer knows.
func (c *Client) ForgetSession(sid string) {
	c.mu.Lock()
	delete(c.sessions, sid)
	c.calls.dropSession(sid)
	c.mu.Unlock()
	c.tokens.end(sid)
}

// retireAll retires every live session concurrently (shutdown path).
func (c *Client) retireAll(ctx context.Context) {
	c.mu.Lock()
	sids := make([]string, 0, len(c.sessions))
	for sid := range c.sessions {
		sids = append(sids, sid)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, sid := range sids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.CloseSession(ctx, sid)
		}()
	}
	wg.Wait()
}

// BeginTurn routes the session's streamed text into m until EndTurn(m).
func (c *Client) BeginTurn(m *agentconn.Mailbox) {
	c.mu.Lock()
	c.turns[m.SessionID()] = m
	c.mu.Unlock()
}

// EndTurn stops routing text into m and forgets its turn's tool calls.
func (c *Client) EndTurn(m *agentconn.Mailbox) {
	c.mu.Lock()
	if sid := m.SessionID(); c.turns[sid] == m {
		delete(c.turns, sid)
		c.calls.dropSession(sid)
	}
	c.mu.Unlock()
}

func (c *Client) activeTurn(sid string) *agentconn.Mailbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turns[sid]
}

// handle is the SDK's MethodHandler: the stdout guard lets only
// session/request_permission through as a request, and no notification.
func (c *Client) handle(ctx context.Context, method string, params json.RawMessage) (any, *acp.RequestError) {
	if method == methodRequestPermission {
		return c.handlePermission(ctx, params), nil
	}
	c.notification(method, params)
	return nil, nil
}

// notification handles one notification from the agent, on the stdout
// guard's reading goroutine and in the order they were sent: it is O(1)
// and never blocks.
func (c *Client) notification(method string, params json.RawMessage) {
	if strings.HasPrefix(method, "_zeroclaw/") {
		if method == "_zeroclaw/history_trimmed" {
			c.log.Info("agent trimmed session history", "details", string(params[:min(len(params), 512)]))
		}
		return
	}
	if c.adapter == nil {
		return
	}
	sid, ev, ok := c.adapter.decode(method, params)
	if !ok {
		c.log.Debug("ignoring agent notification", "method", method)
		return
	}
	c.route(sid, ev)
}

func (c *Client) route(sid string, ev event) {
	if ev.kind != evHistoryTrimmed && c.isOpening(sid) {
		// Replayed history of a session being loaded (or what an agent
		// sends while resuming one): never part of a turn.
		c.dropped("replay")
		return
	}
	switch ev.kind {
	case evText:
		if ev.text == "" {
			return
		}
		t := c.activeTurn(sid)
		if t == nil {
			c.dropped("no_turn")
			return
		}
		if ok, reason := t.Push(ev.text); !ok {
			c.dropped(reason)
		}
	case evToolStart:
		// A title may be a command line, credentials and all.
		c.log.Info("agent tool call", "session", sid, "tool", ev.tool, "title", childlog.RedactSecrets(ev.title), "id", ev.toolID)
		c.noteToolCall(sid, ev)
	case evToolEnd:
		c.log.Debug("agent tool update", "session", sid, "tool", ev.tool, "id", ev.toolID, "status", ev.status)
		c.noteToolCall(sid, ev)
	case evHistoryTrimmed:
		c.log.Info("agent trimmed session history", "session", sid, "details", string(ev.raw[:min(len(ev.raw), 512)]))
	case evThought, evPlan, evCancelMarker:
		c.log.Trace("agent update", "session", sid, "kind", ev.kind)
	default:
		c.log.Debug("unknown agent update", "session", sid, "kind", ev.status)
		c.dropped("unknown_kind")
	}
}

// toolCallCap bounds the tool calls remembered across all sessions.
const toolCallCap = 256

// toolCalls remembers, per session and tool-call id, the tool each
// tool_call update of a running turn named, so that a permission request
// carrying the same toolCallId is decided for that tool. A turn's entries
// go when it ends; beyond toolCallCap entries in all the oldest goes first,
// whichever session it belongs to, so neither a flood of ids nor a churn
// of sessions grows it. Guarded by Client.mu.
type toolCalls struct {
	names map[toolCallKey]string
	order []toolCallKey // insertion order, oldest first
}

type toolCallKey struct{ sid, id string }

func (t *toolCalls) add(sid, id, tool string) {
	k := toolCallKey{sid, id}
	if t.names == nil {
		t.names = make(map[toolCallKey]string)
	}
	if _, ok := t.names[k]; ok {
		if tool != "" {
			t.names[k] = tool
		}
		return
	}
	if len(t.order) >= toolCallCap {
		delete(t.names, t.order[0])
		t.order = append(t.order[:0], t.order[1:]...)
	}
	t.names[k] = tool
	t.order = append(t.order, k)
}

func (t *toolCalls) lookup(sid, id string) string { return t.names[toolCallKey{sid, id}] }

func (t *toolCalls) dropSession(sid string) {
	t.order = slices.DeleteFunc(t.order, func(k toolCallKey) bool {
		if k.sid != sid {
			return false
		}
		delete(t.names, k)
		return true
	})
}

func (t *toolCalls) len() int { return len(t.names) }

// noteToolCall remembers the tool a tool_call update names, for a session
// in a turn only: the session id is the agent's word, and the table must
// not fill with ids it makes up.
func (c *Client) noteToolCall(sid string, ev event) {
	if ev.toolID == "" {
		return
	}
	c.mu.Lock()
	if c.turns[sid] != nil {
		c.calls.add(sid, ev.toolID, ev.tool)
	}
	c.mu.Unlock()
}

// handlePermission answers session/request_permission by policy, choosing
// the option by its kind (display names differ between agents). The tool
// is identified from the request alone (identifyTool).
func (c *Client) handlePermission(ctx context.Context, params json.RawMessage) any {
	var p struct {
		SessionID  string `json:"sessionId"`
		SessionID2 string `json:"session_id"`
		ToolName   string `json:"toolName"`
		Options    *[]struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
		ToolCall permissionToolCall `json:"toolCall"`
	}
	_ = json.Unmarshal(params, &p)
	sid := cmp.Or(p.SessionID, p.SessionID2)
	// Every notification sent ahead of this request, the tool_call update
	// with the same id among them, was handled before the request was read.
	tool, source := identifyTool(p.ToolName, p.ToolCall, func(id string) string {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.calls.lookup(sid, id)
	})
	req := agentconn.PermissionRequest{SessionID: sid, ToolCallID: p.ToolCall.ID, Title: p.ToolCall.Title,
		Kind: p.ToolCall.Kind, Tool: agentconn.NormaliseTool(tool), Guessed: source == fromDisplay}
	question := strings.HasPrefix(req.ToolCallID, "ask-user-")

	decision := c.decide(ctx, req)
	if req.Tool == "" && !question {
		c.unidentified(sid, p.ToolCall, decision)
	}
	c.log.Info("permission decided", "session", sid, "tool", req.Tool, "identified_by", source, "decision", decision)

	if p.Options == nil { // legacy shape
		return map[string]bool{"approved": decision == agentconn.Allow}
	}
	want := ""
	switch decision {
	case agentconn.Allow:
		want = string(acp.PermissionOptionKindAllowOnce)
	case agentconn.Deny:
		want = string(acp.PermissionOptionKindRejectOnce)
	}
	for _, o := range *p.Options {
		if want != "" && o.Kind == want {
			return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(o.OptionID))}
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
}

// toolKinds are ACP's tool kinds; any other kind is logged as "unknown",
// so the causes of unidentified requests stay a small set.
var toolKinds = []string{"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}

// unidentified counts a permission request whose tool could not be
// identified and logs it: at WARN, with the raw toolCall, the first time
// its cause (the fields it had) is seen on this connection, then at Debug.
func (c *Client) unidentified(sid string, tc permissionToolCall, d agentconn.Decision) {
	if c.metrics != nil {
		c.metrics.PermissionUnidentified.WithLabelValues(d.String()).Inc()
	}
	kind := tc.Kind
	switch {
	case kind == "":
		kind = "none"
	case !slices.Contains(toolKinds, kind):
		kind = "unknown"
	}
	cause := fmt.Sprintf("kind=%s title=%t raw_input=%t", kind, tc.Title != "", len(tc.RawInput) > 0)
	c.mu.Lock()
	first := !c.warned[cause]
	c.warned[cause] = true
	c.mu.Unlock()
	raw, _ := json.Marshal(tc)
	lvl := hclog.Debug
	if first {
		lvl = hclog.Warn
	}
	c.log.Log(lvl, "permission request does not identify its tool; kid mode refuses it, else ZEROCLAW_PERMISSION_UNIDENTIFIED decides",
		"session", sid, "cause", cause, "decision", d, "tool_call", childlog.RedactedSnippet(string(raw)))
}

// decide runs the policy; a cancelled turn (or an ended request) answers
// Cancel, also while the policy is still deciding: an agent waiting on an
// unanswered permission would otherwise hold the session for ever.
func (c *Client) decide(ctx context.Context, req agentconn.PermissionRequest) agentconn.Decision {
	t := c.activeTurn(req.SessionID)
	if t != nil && t.IsCancelled() {
		return agentconn.Cancel
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t != nil {
		go func() {
			select {
			case <-t.Cancelled():
				cancel()
			case <-dctx.Done():
			}
		}()
	}
	perm := c.perm
	if perm == nil {
		perm = agentconn.AllowAll{}
	}
	d := perm.Decide(dctx, req)
	if dctx.Err() != nil {
		return agentconn.Cancel
	}
	return d
}

// Protocol is ACP for acp's Supervisor: set it as acp.Config.Protocol.
// Each child gets its own Client: the SDK connection, behind the stdout
// guard.
type Protocol struct{ cfg Config }

var _ agentconn.Protocol = (*Protocol)(nil)

// New returns the protocol for cfg.
func New(cfg Config) *Protocol { return &Protocol{cfg: cfg.withDefaults()} }

// Open implements agentconn.Protocol: it builds the child's Client, the
// SDK connection fed by the stdout guard, whose reader and the connection
// watcher run under ch.Go.
func (p *Protocol) Open(ch agentconn.Child) (agentconn.ChildConn, error) {
	c := newClient(ch, p.cfg)
	c.recycle = ch.Recycle
	g := newStdoutGuard(ch.Stdout, ch.Stdin, c.log.Named("child"), c.dropped, c.notification, c.end.Done())
	c.conn = acp.NewConnection(c.handle, ch.Stdin, g)
	sl, cause := newSlogLogger(c.log.Named("rpc"))
	c.conn.SetLogger(sl)
	c.cause = cause
	g.open()
	ch.Go(c.watchConn)
	return c, nil
}

// Traits implements Conn: v1 agents cancel in protocol and answer every
// prompt, cancelled or not, so a cancelled turn keeps its session; legacy
// ones serve one turn per process; the sessions of an agent that can
// resume or load them (ZeroClaw ≥ 0.8.0 with its session store open)
// outlive its process.
func (c *Client) Traits() agentconn.Traits {
	return agentconn.Traits{
		Cancel:        c.caps.Cancel(),
		Resume:        c.caps.RestoreMethod() != "",
		MaxSessions:   c.caps.MaxSessions,
		InitTimeout:   c.initTimeout,
		CancelGrace:   c.cancelGrace,
		KeepCancelled: c.caps.Cancel(),
	}
}

// TurnLease implements Conn: the process lease of legacy agents.
func (c *Client) TurnLease() chan struct{} { return c.procLease }

// ResumeSession implements Conn: it reopens on this process a session
// opened on an earlier one, with the agent's conversation, by
// session/resume when the agent advertises it, else by session/load (see
// Caps.RestoreMethod), with session/new's params beside the session id
// and within InitTimeout (see open). session/load replays the conversation
// as session/update notifications before its answer: they are dropped and
// counted (dotty_acp_dropped_updates_total{reason="replay"}), never spoken.
// The session keeps its id; an agent that no longer has it refuses
// (ZeroClaw: -32000), and the pool then starts a new one.
func (c *Client) ResumeSession(ctx context.Context, sid string) (string, error) {
	method := c.caps.RestoreMethod()
	if method == "" {
		return "", fmt.Errorf("session resume: %w", agentconn.ErrNotSupported)
	}
	params, token := c.sessionParams(ctx) // a fresh token: the old process's died with it
	if m, ok := params.(map[string]any); ok {
		m["sessionId"] = sid
	}
	c.mu.Lock()
	c.opening[sid]++
	c.mu.Unlock()
	return c.open(ctx, method, params, token, func(_ json.RawMessage, err error) (string, error) {
		// Every notification sent before the answer was handled before
		// the answer was read: the replay is over.
		c.mu.Lock()
		if c.opening[sid]--; c.opening[sid] <= 0 {
			delete(c.opening, sid)
		}
		if err == nil {
			c.sessions[sid] = true
		}
		c.mu.Unlock()
		return sid, c.rpcErr(method, err)
	})
}

// isOpening reports whether sid is being resumed or loaded.
func (c *Client) isOpening(sid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opening[sid] > 0
}

// Recycle implements Conn.
func (c *Client) Recycle(reason string) { c.recycle(reason) }

// Handshake implements ChildConn: initialize and dialect detection.
func (c *Client) Handshake(ctx context.Context) error { return c.initialize(ctx) }

// Info implements ChildConn from the initialize result.
func (c *Client) Info() agentconn.AgentInfo {
	return agentconn.AgentInfo{
		Dialect: string(c.caps.Dialect),
		Name:    c.caps.AgentName,
		Version: c.caps.AgentVersion,
		Details: []any{"zeroclaw", c.caps.ZeroClaw, "session_restore", cmp.Or(c.caps.RestoreMethod(), "none")},
	}
}

// StderrLine implements ChildConn: ACP agents only log on stderr.
func (c *Client) StderrLine(string) {}

// Shutdown implements ChildConn: retire every live session, bounded, and
// revoke every robot-tools token; the supervisor then closes stdin and
// waits for the exit.
func (c *Client) Shutdown(<-chan struct{}) bool {
	ctx, cancel := context.WithTimeout(context.Background(), retireTimeout)
	defer cancel()
	c.retireAll(ctx)
	c.tokens.close()
	return false
}

// Abort implements ChildConn.
func (c *Client) Abort(err error) { c.markDead(err) }

// CloseCause implements ChildConn: the SDK's last "connection closed" cause.
func (c *Client) CloseCause() string {
	if c.cause == nil {
		return ""
	}
	return c.cause.get()
}
