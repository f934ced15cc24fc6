package acpclient

import (
	"encoding/json"
	"strings"
	"unicode"
)

// toolSource says where identifyTool found a request's tool.
type toolSource string

const (
	fromRequest  toolSource = "request"   // a name field of the request
	fromToolCall toolSource = "tool_call" // the tool_call update with the request's toolCallId
	fromRawInput toolSource = "raw_input" // ZeroClaw's rawInput {"tool": name}
	fromTitle    toolSource = "title"     // an approval title of a known agent
	// fromDisplay is codex-acp's "Approve <title>" of an MCP tool, which
	// gives the tool's display title when it has one, not its name.
	fromDisplay toolSource = "display_title"
)

// permissionToolCall is the toolCall of a session/request_permission.
type permissionToolCall struct {
	ID       string          `json:"toolCallId"`
	Title    string          `json:"title"`
	Name     string          `json:"name"`
	Kind     string          `json:"kind"`
	RawInput json.RawMessage `json:"rawInput"`
	Meta     json.RawMessage `json:"_meta"`
}

// identifyTool names the tool of one permission request from that request
// alone: an explicit name (toolName, toolCall.name, claude-agent-acp's
// _meta.claudeCode.toolName), then earlier(id), the name a tool_call update
// with the same toolCallId gave earlier in the turn, then ZeroClaw's
// rawInput {"tool": name}, then the title when it is an approval title of
// a known agent. It never looks at the session's other tools: ZeroClaw ≥
// 0.8.4 and codex-acp ask before the tool's tool_call, ZeroClaw 0.8.0 sends
// every tool_call of a response before the first request, and gemini-cli
// sends none. "" means the tool cannot be identified.
func identifyTool(toolName string, tc permissionToolCall, earlier func(id string) string) (string, toolSource) {
	if n := cmpTool(tc.Name, toolName, metaToolName(tc.Meta)); n != "" {
		return n, fromRequest
	}
	if tc.ID != "" && earlier != nil {
		if n := earlier(tc.ID); n != "" {
			return n, fromToolCall
		}
	}
	if n := rawInputTool(tc.RawInput); n != "" {
		return n, fromRawInput
	}
	if n := titleTool(tc.Title); n != "" {
		if displayTitle(tc.Title) {
			return n, fromDisplay
		}
		return n, fromTitle
	}
	return "", ""
}

// cmpTool returns the first of names that is a plausible tool name.
func cmpTool(names ...string) string {
	for _, n := range names {
		if n = strings.TrimSpace(n); toolName(n) {
			return n
		}
	}
	return ""
}

// metaToolName reads claude-agent-acp's _meta.claudeCode.toolName.
func metaToolName(meta json.RawMessage) string {
	if len(meta) == 0 {
		return ""
	}
	var m struct {
		ClaudeCode struct {
			ToolName string `json:"toolName"`
		} `json:"claudeCode"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return ""
	}
	return m.ClaudeCode.ToolName
}

// rawInputTool reads ZeroClaw's approval rawInput, {"tool": name} for every
// tool but file_edit and file_write (whose rawInput is their arguments).
// Any other rawInput is the tool's own arguments, which name nothing.
func rawInputTool(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '{' {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) != 1 {
		return ""
	}
	var name string
	if json.Unmarshal(m["tool"], &name) != nil {
		return ""
	}
	return cmpTool(name)
}

// approvalPrefixes are the approval titles (matched in any case) that put the
// tool's name after a verb: ZeroClaw's "channel-approval-title" in the
// locales it ships (en "Approve {tool}?", es "¿Aprobar {tool}?", fr
// "Approuver {tool} ?", zh-CN "批准 {tool}？"; ja puts it first, see
// approvalSuffixJA) and codex-acp's MCP tool approvals ("Approve
// {tool_title}", no question mark).
var approvalPrefixes = []string{"approve ", "¿aprobar ", "approuver ", "批准 "}

// approvalSuffixJA is ZeroClaw's Japanese approval title, "{tool} を承認しますか？".
const approvalSuffixJA = "を承認しますか"

// geminiMCPSuffix ends gemini-cli's title of an MCP tool, "{tool} ({server} MCP Server)".
const geminiMCPSuffix = " MCP Server)"

// titleTool reads the tool's name from an approval title of a known agent
// (see approvalPrefixes); "" for any other title, such as the command
// line codex-acp and gemini-cli show for a shell command.
func titleTool(title string) string {
	// Fluent may wrap a placeable in Unicode isolation marks.
	title = strings.NewReplacer("\u2068", "", "\u2069", "").Replace(title)
	if i := strings.Index(title, " ("); i > 0 && strings.HasSuffix(title, geminiMCPSuffix) {
		return cmpTool(title[:i])
	}
	t := strings.TrimRightFunc(strings.TrimSpace(title), func(r rune) bool {
		return r == '?' || r == '？' || unicode.IsSpace(r)
	})
	if name, ok := strings.CutSuffix(t, approvalSuffixJA); ok {
		return cmpTool(name)
	}
	for _, p := range approvalPrefixes {
		if len(t) > len(p) && strings.EqualFold(t[:len(p)], p) {
			return cmpTool(t[len(p):])
		}
	}
	return ""
}

// displayTitle reports codex-acp's approval title, "Approve <title>"
// without ZeroClaw's question mark.
func displayTitle(title string) bool {
	t := strings.TrimSpace(title)
	return len(t) > len("Approve ") && strings.EqualFold(t[:len("Approve ")], "Approve ") &&
		!strings.HasSuffix(t, "?") && !strings.HasSuffix(t, "？")
}

// toolName reports whether s looks like a tool's name rather than prose:
// letters, digits and "_.-:/", nothing else. A display title such as
// "Take a photo" or codex-acp's "Approve MCP tool call" names no tool.
func toolName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_.-:/", r) {
			return false
		}
	}
	return true
}

// updateTool names the tool of a tool_call or tool_call_update: its name
// field (ZeroClaw), claude-agent-acp's _meta.claudeCode.toolName, or
// codex-acp's "Tool: {server}/{tool}" title, or "" when it names none (a
// title alone is usually prose or a command line).
func updateTool(name string, meta json.RawMessage, title string) string {
	if n := cmpTool(name, metaToolName(meta)); n != "" {
		return n
	}
	if rest, ok := strings.CutPrefix(title, "Tool: "); ok {
		return cmpTool(rest[strings.LastIndex(rest, "/")+1:])
	}
	return titleTool(title)
}
