// Package robottools is the robot's tools, served over MCP to whichever
// agent is the brain: look, set_state, set_mood, take_photo, list_songs,
// play_song, who_is_here, today, memory_lookup and remember.
//
// Every request carries a bearer token minted for one agent session (Mint)
// and is refused unless it comes from this host. A tool call acts on the
// robot of its token's pool key (SetDevice), or records the key's mood for
// its next reply (TakeMood), goes through the agent's permission policy
// under the tool's name, is rate-limited per token and counted in dotty_mcp_tool_calls_total{tool,outcome}. Failures are tool
// errors the model can read, never protocol errors, and every piece of
// outside text a tool returns passes prompttext.Line.
//
// The tools reuse tier1's logic (memory search, song matching, the photo
// freshness rule, the kid-safety review gate) and depend on small
// interfaces: Robot (xiaozhi's admin API), Voice (*tier1.Handler), Room
// and Calendar.
package robottools

import (
	"context"
	"net/http"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// Texts of calls refused before their tool runs.
const (
	RateLimited = "Too many robot tool calls in this conversation; wait a minute, then try again."
	NotAllowed  = "The household's tool policy does not allow this tool."
	AccessEnded = "This conversation's access to the robot has ended."
)

// Name is the MCP server's name, in every agent's list of MCP servers.
const Name = "dotty-robot"

// Instructions tell the model what the tools are for.
const Instructions = "Tools to act through the desk robot you speak through: turn its head, " +
	"set its state, see through its camera, play songs, know who is in the room and what is on today, " +
	"and look up or remember facts about the household."

// implementation names the server (and the stdio relay) to its clients.
func implementation() *mcp.Implementation {
	return &mcp.Implementation{Name: Name, Title: "Dotty, the desk robot", Version: "1"}
}

// Server serves the robot's tools. Safe for concurrent use.
type Server struct {
	cfg    Config
	log    hclog.Logger
	clock  clockwork.Clock
	calls  *prometheus.CounterVec
	mcp    *mcp.Server
	tables *tables
	access *httpapi.Access
}

// New returns the server; cfg must pass Validate.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, tables: newTables(cfg)}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	if s.clock == nil {
		s.clock = clockwork.NewRealClock()
	}
	if s.access = cfg.Access; s.access == nil {
		s.access = httpapi.NewAccess(httpapi.AccessConfig{Logger: s.log})
	}
	if s.cfg.Permissions == nil {
		s.cfg.Permissions = agentconn.AllowAll{}
	}
	var reg prometheus.Registerer
	if cfg.Registry != nil {
		reg = cfg.Registry
	}
	s.calls = NewMetrics(reg).ToolCalls
	s.mcp = mcp.NewServer(implementation(), &mcp.ServerOptions{Instructions: Instructions})
	s.addTools()
	s.mcp.AddReceivingMiddleware(s.gate)
	return s, nil
}

// Handler serves MCP over streamable HTTP, stateless (every request
// stands alone, so no session table outlives a request). It refuses a
// peer that is not on this host (httpapi.LoopbackPeer), a Host that does
// not name this machine or an Origin of another site (the bridge's Access
// rule) with 403, a request without a live bearer token with 401, and a
// body that is not JSON with 415 (the SDK's check).
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Stateless: true})
	authed := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !httpapi.LoopbackPeer(r):
			http.Error(w, "robot tools are served to this host only", http.StatusForbidden)
		case !s.access.LocalHost(r.Host) || !s.access.LocalOrigin(r):
			http.Error(w, "cross-site request refused", http.StatusForbidden)
		default:
			authed.ServeHTTP(w, r)
		}
	})
}

// verify is the bearer-token check: a live token, else 401.
func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	g, _, ok := s.tables.lookup(token)
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: g.key, Extra: map[string]any{tokenExtra: token}}, nil
}

const tokenExtra = "token"

// call is what a tool handler knows of its call: the grant it acts for,
// its key's robot, and the outcome it reports to the gate.
type call struct {
	grant   grant
	device  string
	outcome string
}

type callKey struct{}

// gate runs before every tool: the permission policy, the rate limit,
// then the tool, and counts the call.
func (s *Server) gate(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || r.Params == nil || !knownTool(r.Params.Name) {
			return next(ctx, method, req)
		}
		name := r.Params.Name
		var token string
		if r.Extra != nil && r.Extra.TokenInfo != nil {
			token, _ = r.Extra.TokenInfo.Extra[tokenExtra].(string)
		}
		g, dev, live := s.tables.lookup(token)
		switch {
		case !live:
			return s.refuse(name, outcomeRefused, AccessEnded), nil
		case s.cfg.Permissions.Decide(ctx, agentconn.PermissionRequest{SessionID: g.session,
			Tool: agentconn.NormaliseTool(name), ToolCallID: "mcp-" + name}) != agentconn.Allow:
			s.log.Info("robot tool refused by the permission policy", "tool", name, "key", g.key)
			return s.refuse(name, outcomeRefused, NotAllowed), nil
		case !s.waitTurn(ctx, g.limiter):
			s.log.Debug("robot tool rate-limited", "tool", name, "key", g.key)
			return s.refuse(name, outcomeRateLimited, RateLimited), nil
		}
		c := &call{grant: g, device: dev}
		res, err := next(context.WithValue(ctx, callKey{}, c), method, req)
		outcome := outcomeOK
		if tr, ok := res.(*mcp.CallToolResult); err != nil || !ok || tr.IsError {
			outcome = outcomeError
			if c.outcome != "" {
				outcome = c.outcome
			}
		}
		s.calls.WithLabelValues(name, outcome).Inc()
		return res, err
	}
}

// waitTurn takes one call from l, waiting for it (reservations are served
// in order) at most RateWait and never past ctx; false when the call must
// be refused.
func (s *Server) waitTurn(ctx context.Context, l *rate.Limiter) bool {
	now := s.clock.Now()
	r := l.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if !r.OK() || d > s.cfg.RateWait {
		r.CancelAt(now)
		return false
	}
	if d == 0 {
		return true
	}
	select {
	case <-s.clock.After(d):
		return true
	case <-ctx.Done():
		r.CancelAt(s.clock.Now())
		return false
	}
}

// refuse counts a call refused before its tool ran and answers it as a
// tool error.
func (s *Server) refuse(tool, outcome, text string) *mcp.CallToolResult {
	s.calls.WithLabelValues(tool, outcome).Inc()
	return failed(text)
}

// callOf returns the call a tool handler runs for.
func callOf(ctx context.Context) *call {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c
	}
	return &call{}
}
