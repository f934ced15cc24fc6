package agentconn

import (
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Decision is a Permissioner's answer to one permission request.
type Decision int

const (
	// Allow approves the tool call once.
	Allow Decision = iota
	// Deny rejects the tool call once.
	Deny
	// Cancel answers "cancelled": nobody can decide (questions for a user,
	// a cancelled turn).
	Cancel
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	default:
		return "cancel"
	}
}

// PermissionRequest is what the agent asked, reduced to what a policy needs.
type PermissionRequest struct {
	// SessionID is the agent session the request belongs to.
	SessionID string
	// Tool is the tool's name as identified from the request itself (by the
	// protocol), with any "self." or "mcp__<server>__" prefix removed;
	// empty when the request does not identify its tool.
	Tool string
	// ToolCallID is the agent's id for the call ("ask-user-…" for questions).
	ToolCallID string
	// Title is the agent's human-readable title.
	Title string
	// Kind is the agent's tool kind (execute, edit, read, …), "" if none.
	Kind string
	// Guessed is set when Tool was read from codex-acp's "Approve <title>",
	// which gives an MCP tool's display title when it has one: a name that
	// may not be the tool's. It still matches the lists, but kid mode
	// treats a guessed tool that is not on the allow list as unidentified.
	Guessed bool
}

// Permissioner decides permission requests. Decide may block, but must
// return promptly once ctx ends (the turn was cancelled); the answer is then
// ignored and the agent told "cancelled".
type Permissioner interface {
	Decide(ctx context.Context, req PermissionRequest) Decision
}

// Policy is bridge.py's permission rule set: tools on Deny are refused,
// tools on KidDeny are refused while KidMode reports true, everything else
// is allowed; tools on neither Allow nor a deny list are allowed and logged.
// A request whose tool cannot be identified is refused while kid mode is on
// (it could be a tool kid mode refuses); with kid mode off it is refused
// only with DenyUnidentified.
type Policy struct {
	// Allow lists tools allowed silently.
	Allow []string
	// AllowLive, when set, adds the current /admin/safety allow list, read
	// at every decision.
	AllowLive func() []string
	// Deny lists tools always refused.
	Deny []string
	// KidDeny lists tools refused while kid mode is on
	// (ZEROCLAW_PERMISSION_KID_DENY; nil: camera.take_photo). Every list
	// may hold "kind:<kind>" entries too (see KindPrefix).
	KidDeny []string
	// KidMode reports kid mode live; nil means off.
	KidMode func() bool
	// DenyUnidentified refuses requests whose tool cannot be identified
	// also while kid mode is off (ZEROCLAW_PERMISSION_UNIDENTIFIED=deny).
	DenyUnidentified bool
	// Logger records unknown tools. Nil discards.
	Logger hclog.Logger
}

// DefaultKidDeny is the kid-mode deny list of bridge.py.
var DefaultKidDeny = []string{"camera.take_photo"}

// Decide implements Permissioner.
func (p *Policy) Decide(_ context.Context, req PermissionRequest) Decision {
	if strings.HasPrefix(req.ToolCallID, "ask-user-") {
		return Cancel
	}
	kid := p.KidMode != nil && p.KidMode()
	tool := NormaliseTool(req.Tool)
	kidDeny := p.KidDeny
	if kidDeny == nil {
		kidDeny = DefaultKidDeny
	}
	if matches(p.Deny, tool, req.Kind) || (kid && matches(kidDeny, tool, req.Kind)) {
		return Deny
	}
	allowed := matches(p.Allow, tool, req.Kind) || (p.AllowLive != nil && contains(p.AllowLive(), tool))
	if tool == "" || (kid && req.Guessed && !allowed) {
		// Nothing says which tool this is (or only a display title): it
		// may be one a list refuses.
		if kid || p.DenyUnidentified {
			return Deny
		}
		return Allow
	}
	if !allowed && p.Logger != nil {
		p.Logger.Info("allowing tool not on the allow list", "tool", tool, "session", req.SessionID)
	}
	return Allow
}

func contains(list []string, tool string) bool {
	return tool != "" && slices.ContainsFunc(list, func(s string) bool { return NormaliseTool(s) == tool })
}

// KindPrefix marks a list entry that matches a request's ACP tool kind
// rather than its tool: "kind:execute" matches every request of kind
// execute (a shell command of any agent, identified or not).
const KindPrefix = "kind:"

// matches reports whether list names tool, or has a "kind:" entry for kind.
func matches(list []string, tool, kind string) bool {
	if contains(list, tool) {
		return true
	}
	kind = strings.TrimSpace(kind)
	return kind != "" && slices.ContainsFunc(list, func(s string) bool {
		k, ok := strings.CutPrefix(strings.TrimSpace(s), KindPrefix)
		return ok && strings.EqualFold(strings.TrimSpace(k), kind)
	})
}

// NormaliseTool trims a tool name and removes the prefixes agents add to
// the same tool: "self." (the robot's own MCP tools) and claude-agent-acp's
// "mcp__<server>__".
func NormaliseTool(s string) string {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "mcp__"); ok {
		if _, tool, ok := strings.Cut(rest, "__"); ok && tool != "" {
			s = tool
		}
	}
	return strings.TrimPrefix(s, "self.")
}

// AllowAll is the Permissioner that allows every request.
type AllowAll struct{}

// Decide implements Permissioner.
func (AllowAll) Decide(context.Context, PermissionRequest) Decision { return Allow }
