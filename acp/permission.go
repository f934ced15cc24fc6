package acp

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
	// Tool is the tool name with any "self." prefix removed; empty when the
	// request named none.
	Tool string
	// ToolCallID is the agent's id for the call ("ask-user-…" for questions).
	ToolCallID string
	// Title is the agent's human-readable title.
	Title string
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
type Policy struct {
	// Allow lists tools allowed silently.
	Allow []string
	// AllowLive, when set, adds the current /admin/safety allow list, read
	// at every decision.
	AllowLive func() []string
	// Deny lists tools always refused.
	Deny []string
	// KidDeny lists tools refused while kid mode is on
	// (default camera.take_photo).
	KidDeny []string
	// KidMode reports kid mode live; nil means off.
	KidMode func() bool
	// Logger records unknown tools. Nil discards.
	Logger hclog.Logger
}

// DefaultKidDeny is the kid-mode deny list of bridge.py.
var DefaultKidDeny = []string{"camera.take_photo"}

// Decide implements Permissioner.
func (p *Policy) Decide(_ context.Context, req PermissionRequest) Decision {
	tool := normaliseTool(req.Tool)
	if strings.HasPrefix(req.ToolCallID, "ask-user-") {
		return Cancel
	}
	if contains(p.Deny, tool) {
		return Deny
	}
	kidDeny := p.KidDeny
	if kidDeny == nil {
		kidDeny = DefaultKidDeny
	}
	if p.KidMode != nil && p.KidMode() && contains(kidDeny, tool) {
		return Deny
	}
	listed := contains(p.Allow, tool) || (p.AllowLive != nil && contains(p.AllowLive(), tool))
	if !listed && p.Logger != nil {
		p.Logger.Info("allowing tool not on the allow list", "tool", tool, "session", req.SessionID)
	}
	return Allow
}

func contains(list []string, tool string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return normaliseTool(s) == tool })
}

func normaliseTool(s string) string {
	return strings.TrimPrefix(strings.TrimSpace(s), "self.")
}

type allowAll struct{}

func (allowAll) Decide(context.Context, PermissionRequest) Decision { return Allow }
