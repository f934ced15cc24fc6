package acptest

import (
	"context"
	"fmt"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

// Shape is whose wire shape a scripted tool call and its permission
// request take. Each follows the agent's source; docs/architecture.md
// ("What permission requests carry") has the table.
type Shape int

const (
	// ZeroClaw is ZeroClaw 0.8.4 and later, one tool after the other: the
	// permission request first (toolCallId "approval-<n>", title "Approve
	// <tool>?" in the child's locale — Reply.Locale —, kind execute and
	// rawInput {"tool": <tool>}, or, for file_edit and file_write, kind edit
	// and rawInput their arguments), then, once
	// allowed, the tool's tool_call (toolCallId "call-<n>", name and title
	// the tool), its run and its tool_call_update. A cancel interrupts a
	// running tool; the approval wait ignores it.
	ZeroClaw Shape = iota
	// ZeroClawMay is ZeroClaw 0.8.0-beta-1 (May 2026): every tool_call of
	// the response first, then, tool by tool, its request (English title,
	// three options) and its run, then every tool_call_update. A cancel
	// neither interrupts a running tool nor the approval wait: the turn ends
	// "cancelled" once the tools are done.
	ZeroClawMay
	// Codex is codex-acp, one tool after the other: the request first, with
	// the call's own id; an MCP tool's title is "Approve <tool>", a shell
	// command's (Tool.Title) its command line, with kind execute; once
	// allowed, the tool_call ("Tool: robot/<tool>") with the same id. A
	// cancel also abandons the approval wait.
	Codex
	// Claude is claude-agent-acp: every tool_call of the message first
	// (toolCallId "toolu_<n>", title and _meta.claudeCode.toolName
	// "mcp__robot__<tool>"), then, tool by tool, the request with the same
	// id, title and rawInput but no name.
	Claude
	// Gemini is gemini-cli, one tool after the other: the request alone,
	// with no tool_call before it (title "<tool> (robot MCP Server)", or
	// Tool.Title for a built-in tool such as a shell command; no rawInput,
	// no name), then a tool_call_update once the tool ran.
	Gemini
)

// Tool is one tool a scripted reply calls.
type Tool struct {
	// Name is the tool's name.
	Name string
	// Title, for Codex and Gemini, makes the tool a built-in one shown by
	// this title (a command line), whose request names no tool.
	Title string
	// NoAsk runs the tool without a permission request.
	NoAsk bool
	// Runs is how long the tool runs once allowed.
	Runs time.Duration
	// Until, when set, runs the tool until it is closed (after Runs).
	Until <-chan struct{}
}

// Asked is one permission request a scripted tool made and its answer.
type Asked struct {
	SessionID string
	Tool      string
	// Outcome is the chosen optionId, "cancelled", or "error: …".
	Outcome string
}

// zeroclawTitles is ZeroClaw's "channel-approval-title" in each locale it
// ships (crates/zeroclaw-runtime/locales/*/cli.ftl, after 0.8.4).
var zeroclawTitles = map[string]string{
	"en":    "Approve %s?",
	"es":    "¿Aprobar %s?",
	"fr":    "Approuver %s ?",
	"ja":    "%s を承認しますか？",
	"zh-CN": "批准 %s？",
}

// Locales are the locales ZeroClaw translates its approval title into.
var Locales = []string{"en", "es", "fr", "ja", "zh-CN"}

// toolPlayer plays a reply's tools on one agent-side connection; raw
// writes a whole JSON-RPC line beside the SDK's own frames.
type toolPlayer struct {
	conn   *acpsdk.AgentSideConnection
	raw    func(line []byte) error
	sid    string
	shape  Shape
	locale string
	asked  func(Asked)
	seq    *int
	mu     *sync.Mutex
}

func (p *toolPlayer) next() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	*p.seq++
	return *p.seq
}

// update sends one session/update with update as its update object.
func (p *toolPlayer) update(u map[string]any) error {
	b, err := jsonrpc.EncodeNotification("session/update", map[string]any{"sessionId": p.sid, "update": u})
	if err != nil {
		return err
	}
	return p.raw(append(b, '\n'))
}

// call is one tool of the reply with its ids.
type call struct {
	Tool
	id, approvalID string
}

// play runs tools the way p.shape's agent does. It reports whether the
// turn was cancelled meanwhile.
func (p *toolPlayer) play(ctx context.Context, tools []Tool) (cancelled bool, err error) {
	calls := make([]call, len(tools))
	for i, t := range tools {
		n := p.next()
		c := call{Tool: t, id: fmt.Sprintf("call-%d", n), approvalID: fmt.Sprintf("approval-%d", n)}
		switch p.shape {
		case Claude:
			c.id = fmt.Sprintf("toolu_%d", n)
		case Gemini:
			c.id = fmt.Sprintf("%s-%d-%d", t.Name, time.Now().UnixMilli(), n)
		}
		calls[i] = c
	}
	batch := p.shape == ZeroClawMay || p.shape == Claude
	if batch {
		for _, c := range calls {
			if err := p.toolCall(c); err != nil {
				return false, err
			}
		}
	}
	ran := make([]bool, len(calls))
	for i, c := range calls {
		allowed := true
		if !c.NoAsk {
			allowed = p.ask(ctx, c)
		}
		if allowed && !batch && p.shape != Gemini {
			if err := p.toolCall(c); err != nil {
				return false, err
			}
		}
		if allowed && !p.run(ctx, c) {
			return true, nil
		}
		ran[i] = allowed
		if allowed && !batch {
			if err := p.finish(c, true); err != nil {
				return false, err
			}
		}
		if ctx.Err() != nil && p.shape != ZeroClawMay {
			return true, nil
		}
	}
	if batch {
		for i, c := range calls {
			if err := p.finish(c, ran[i]); err != nil {
				return false, err
			}
		}
	}
	return ctx.Err() != nil, nil
}

// toolCall sends c's tool_call update.
func (p *toolPlayer) toolCall(c call) error {
	switch p.shape {
	case ZeroClaw, ZeroClawMay:
		return p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": c.id, "name": c.Name, "title": c.Name,
			"kind": zeroclawKind(c.Name), "rawInput": map[string]any{}, "status": "pending"})
	case Codex:
		return p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": c.id, "title": "Tool: robot/" + c.Name,
			"status": "in_progress", "rawInput": map[string]any{"server": "robot", "tool": c.Name, "arguments": map[string]any{}}})
	case Claude:
		return p.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": c.id, "title": claudeTitle(c.Tool),
			"kind": "other", "status": "pending", "rawInput": map[string]any{}, "content": []any{},
			"_meta": map[string]any{"claudeCode": map[string]any{"toolName": claudeName(c.Tool)}}})
	}
	return nil
}

// finish sends c's tool_call_update.
func (p *toolPlayer) finish(c call, ran bool) error {
	status, out := "completed", "ok"
	if !ran {
		status, out = "failed", "Denied by user."
	}
	u := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": c.id, "status": status, "rawOutput": out}
	switch p.shape {
	case ZeroClaw, ZeroClawMay:
		u["name"], u["title"] = c.Name, c.Name
	case Gemini:
		u["title"] = geminiTitle(c.Tool)
	}
	return p.update(u)
}

// run runs c's tool for its time; under ZeroClawMay the run ignores the
// turn's cancellation. It reports false when a cancel interrupted it.
func (p *toolPlayer) run(ctx context.Context, c call) bool {
	wait := ctx
	if p.shape == ZeroClawMay {
		wait = context.Background()
	}
	if c.Runs > 0 {
		t := time.NewTimer(c.Runs)
		defer t.Stop()
		select {
		case <-t.C:
		case <-wait.Done():
			return false
		}
	}
	if c.Until != nil {
		select {
		case <-c.Until:
		case <-wait.Done():
			return false
		}
	}
	return true
}

// ask sends c's permission request and reports whether an allow option
// was chosen.
func (p *toolPlayer) ask(ctx context.Context, c call) bool {
	req := acpsdk.RequestPermissionRequest{SessionId: acpsdk.SessionId(p.sid)}
	waitCtx := context.Background() // approval waits ignore the turn's cancellation…
	allow := map[string]bool{}
	switch p.shape {
	case ZeroClaw, ZeroClawMay:
		format := zeroclawTitles["en"]
		if f, ok := zeroclawTitles[p.locale]; ok && p.shape == ZeroClaw {
			format = f
		}
		kind := acpsdk.ToolKind(zeroclawKind(c.Name))
		var raw any = map[string]any{"tool": c.Name}
		if kind == acpsdk.ToolKindEdit { // file_edit, file_write: their arguments
			raw = map[string]any{"path": "notes.txt", "oldText": "a", "newText": "b"}
		}
		req.ToolCall = acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId(c.approvalID), Title: acpsdk.Ptr(fmt.Sprintf(format, c.Name)),
			Kind: &kind, Status: acpsdk.Ptr(acpsdk.ToolCallStatusPending), RawInput: raw,
			Content: []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(c.Name + " {}"))}}
		req.Options = []acpsdk.PermissionOption{
			{OptionId: "allow-once", Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "allow-always", Name: "Always allow", Kind: acpsdk.PermissionOptionKindAllowAlways},
		}
		if p.shape == ZeroClaw && kind == acpsdk.ToolKindEdit {
			req.Options = append(req.Options, acpsdk.PermissionOption{OptionId: "reject-with-edit", Name: "Reject with edit", Kind: "reject_with_edit"})
		}
		req.Options = append(req.Options, acpsdk.PermissionOption{OptionId: "reject-once", Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce})
		allow["allow-once"], allow["allow-always"] = true, true
	case Codex:
		waitCtx = ctx // …but codex-acp's: it aborts them
		if c.Title != "" {
			req.ToolCall = acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId(c.id), Title: acpsdk.Ptr(c.Title),
				Kind: acpsdk.Ptr(acpsdk.ToolKindExecute), Status: acpsdk.Ptr(acpsdk.ToolCallStatusPending),
				RawInput: map[string]any{"call_id": c.id, "command": []string{"bash", "-lc", c.Title}, "cwd": "/tmp"}}
			req.Options = []acpsdk.PermissionOption{
				{OptionId: "approved", Name: "Yes", Kind: acpsdk.PermissionOptionKindAllowOnce},
				{OptionId: "abort", Name: "No, and tell Codex what to do differently", Kind: acpsdk.PermissionOptionKindRejectOnce},
			}
			allow["approved"] = true
			break
		}
		req.ToolCall = acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId(c.id), Title: acpsdk.Ptr("Approve " + c.Name),
			Status: acpsdk.Ptr(acpsdk.ToolCallStatusPending),
			RawInput: map[string]any{"server_name": "robot", "id": "mcp_tool_call_approval_" + c.id,
				"request": map[string]any{"_meta": map[string]any{"codex_approval_kind": "mcp_tool_call", "tool_title": c.Name}}}}
		req.Options = []acpsdk.PermissionOption{
			{OptionId: "approved", Name: "Allow", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "cancel", Name: "Cancel", Kind: acpsdk.PermissionOptionKindRejectOnce},
		}
		allow["approved"] = true
	case Claude:
		req.ToolCall = acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId(c.id), Title: acpsdk.Ptr(claudeTitle(c.Tool)),
			Kind: acpsdk.Ptr(acpsdk.ToolKindOther), RawInput: map[string]any{}}
		req.Options = []acpsdk.PermissionOption{
			{OptionId: "allow_always", Name: "Always Allow", Kind: acpsdk.PermissionOptionKindAllowAlways},
			{OptionId: "allow", Name: "Allow", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
		}
		allow["allow"], allow["allow_always"] = true, true
	case Gemini:
		kind := acpsdk.ToolKindOther
		if c.Title != "" {
			kind = acpsdk.ToolKindExecute
		}
		req.ToolCall = acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId(c.id), Title: acpsdk.Ptr(geminiTitle(c.Tool)),
			Kind: &kind, Status: acpsdk.Ptr(acpsdk.ToolCallStatusPending), Locations: []acpsdk.ToolCallLocation{},
			Content: []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock("{}"))}}
		req.Options = []acpsdk.PermissionOption{
			{OptionId: "proceed_always_tool", Name: "Allow tool for this session", Kind: acpsdk.PermissionOptionKindAllowAlways},
			{OptionId: "proceed_once", Name: "Allow", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "cancel", Name: "Deny", Kind: acpsdk.PermissionOptionKindRejectOnce},
		}
		allow["proceed_once"], allow["proceed_always_tool"] = true, true
	}
	resp, err := p.conn.RequestPermission(waitCtx, req)
	outcome := "cancelled"
	switch {
	case err != nil:
		outcome = "error: " + err.Error()
	case resp.Outcome.Selected != nil:
		outcome = string(resp.Outcome.Selected.OptionId)
	}
	if p.asked != nil {
		p.asked(Asked{SessionID: p.sid, Tool: c.Name, Outcome: outcome})
	}
	return allow[outcome]
}

// zeroclawKind is ZeroClaw's approval kind for a tool.
func zeroclawKind(tool string) string {
	if tool == "file_edit" || tool == "file_write" {
		return "edit"
	}
	return "execute"
}

func claudeName(t Tool) string { return "mcp__robot__" + t.Name }

// claudeTitle is claude-agent-acp's title of an MCP tool: its name.
func claudeTitle(t Tool) string { return claudeName(t) }

// geminiTitle is gemini-cli's title of an MCP tool, or a built-in tool's
// display title.
func geminiTitle(t Tool) string {
	if t.Title != "" {
		return t.Title
	}
	return t.Name + " (robot MCP Server)"
}
