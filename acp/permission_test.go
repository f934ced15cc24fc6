package acp

import (
	"context"
	"encoding/json"
	"testing"
)

func TestPolicyDecide(t *testing.T) {
	kid := false
	p := &Policy{Allow: []string{"shell"}, Deny: []string{"file_write"}, KidMode: func() bool { return kid }}
	checkDecide(t, p, &kid, []decideCase{
		{"allowed tool", false, PermissionRequest{Tool: "shell"}, Allow},
		{"unknown tool allowed", false, PermissionRequest{Tool: "web_search"}, Allow},
		{"denied tool", false, PermissionRequest{Tool: "file_write"}, Deny},
		{"camera allowed without kid mode", false, PermissionRequest{Tool: "camera.take_photo"}, Allow},
		{"camera denied in kid mode", true, PermissionRequest{Tool: "camera.take_photo"}, Deny},
		{"self. prefix stripped", true, PermissionRequest{Tool: "self.camera.take_photo"}, Deny},
		{"question cancelled", false, PermissionRequest{Tool: "ask_user", ToolCallID: "ask-user-1"}, Cancel},
	})
}

// decideCase is a request, whether kid mode is on, and the decision it
// should get.
type decideCase struct {
	name string
	kid  bool
	req  PermissionRequest
	want Decision
}

// checkDecide checks p's decision on each case, setting *kid (which p's
// KidMode reads) as the case says.
func checkDecide(t *testing.T, p *Policy, kid *bool, cases []decideCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			*kid = tt.kid
			if got := p.Decide(context.Background(), tt.req); got != tt.want {
				t.Errorf("Decide = %v, want %v", got, tt.want)
			}
		})
	}
}

// "kind:" entries match a request's ACP tool kind, whether its tool is
// identified or not: the way to refuse the shell commands of agents that
// name no tool (codex-acp, gemini-cli).
func TestPolicyKindEntries(t *testing.T) {
	kid := false
	p := &Policy{Deny: []string{"kind:Delete"}, KidDeny: []string{"camera.take_photo", " kind:execute "}, KidMode: func() bool { return kid }}
	checkDecide(t, p, &kid, []decideCase{
		{"unidentified command allowed", false, PermissionRequest{ToolCallID: "c1", Title: "ls -la", Kind: "execute"}, Allow},
		{"unidentified command refused in kid mode", true, PermissionRequest{ToolCallID: "c1", Title: "ls -la", Kind: "execute"}, Deny},
		{"identified command refused in kid mode by its kind", true, PermissionRequest{Tool: "Bash", Kind: "execute"}, Deny},
		{"identified command allowed without kid mode", false, PermissionRequest{Tool: "Bash", Kind: "execute"}, Allow},
		{"kind matched in any case, identified or not", false, PermissionRequest{ToolCallID: "c2", Title: "rm x", Kind: "delete"}, Deny},
		{"another kind in kid mode, identified", true, PermissionRequest{Tool: "read_file", Kind: "read"}, Allow},
		{"camera still refused by name", true, PermissionRequest{Tool: "camera.take_photo", Kind: "other"}, Deny},
		{"a tool named like an entry is not a kind", false, PermissionRequest{Tool: "kind:delete"}, Allow},
	})
}

// A tool name read from codex-acp's title may be a display name
// ("Approve Camera"): it matches the lists, but kid mode refuses it unless
// the allow list names it, as it refuses an unidentified tool.
func TestPolicyGuessedTool(t *testing.T) {
	kid := false
	p := &Policy{Deny: []string{"weather"}, Allow: []string{"forecast"}, KidMode: func() bool { return kid }}
	checkDecide(t, p, &kid, []decideCase{
		{"guessed, kid mode off: allowed", false, PermissionRequest{Tool: "Camera", Guessed: true}, Allow},
		{"guessed, kid mode on: refused", true, PermissionRequest{Tool: "Camera", Guessed: true}, Deny},
		{"guessed name on the deny list", false, PermissionRequest{Tool: "weather", Guessed: true}, Deny},
		{"guessed name on the allow list, kid mode on", true, PermissionRequest{Tool: "forecast", Guessed: true}, Allow},
		{"ZeroClaw's title names the tool: kid mode allows what no list names", true, PermissionRequest{Tool: "weather_now"}, Allow},
	})
}

func TestPolicyUnidentifiedTool(t *testing.T) {
	for _, tt := range []struct {
		name     string
		kid      bool
		denyUnid bool
		want     Decision
	}{
		{"kid mode refuses it", true, false, Deny},
		{"allowed with kid mode off", false, false, Allow},
		{"refused by ZEROCLAW_PERMISSION_UNIDENTIFIED=deny", false, true, Deny},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &Policy{Deny: []string{"shell"}, DenyUnidentified: tt.denyUnid, KidMode: func() bool { return tt.kid }}
			if got := p.Decide(context.Background(), PermissionRequest{ToolCallID: "cmd-1", Title: "ls -la"}); got != tt.want {
				t.Errorf("Decide = %v, want %v", got, tt.want)
			}
		})
	}
	p := &Policy{KidMode: func() bool { return true }}
	if got := p.Decide(context.Background(), PermissionRequest{ToolCallID: "ask-user-1", Title: "which one?"}); got != Cancel {
		t.Errorf("a question under kid mode: %v, want cancel", got)
	}
}

// Every approval title ZeroClaw ships (channel-approval-title in en, es,
// fr, ja and zh-CN), codex-acp's and gemini-cli's name the tool; prose and
// command lines do not.
func TestTitleTool(t *testing.T) {
	for _, tt := range []struct{ title, want string }{
		{"Approve camera.take_photo?", "camera.take_photo"},
		{"¿Aprobar camera.take_photo?", "camera.take_photo"},
		{"Approuver camera.take_photo ?", "camera.take_photo"},
		{"Approuver camera.take_photo\u202f?", "camera.take_photo"},
		{"camera.take_photo を承認しますか？", "camera.take_photo"},
		{"批准 camera.take_photo？", "camera.take_photo"},
		{"Approve \u2068self.camera.take_photo\u2069?", "self.camera.take_photo"},
		{"APPROVE shell?", "shell"},
		{"Approve weather", "weather"},                                          // codex-acp, an MCP tool's title
		{"Approve MCP tool call", ""},                                           // codex-acp without a title
		{"Approve Take a photo", ""},                                            // a display title, not a name
		{"self.camera.take_photo (robot MCP Server)", "self.camera.take_photo"}, // gemini-cli
		{"ls -la /tmp (robot MCP Server)", ""},
		{"ls -la /tmp", ""},
		{"Modifying critical configuration file", ""},
		{"shell", ""}, // a bare title names nothing
		{"", ""},
		{"Approve ?", ""},
	} {
		if got := titleTool(tt.title); got != tt.want {
			t.Errorf("titleTool(%q) = %q, want %q", tt.title, got, tt.want)
		}
	}
}

func TestIdentifyTool(t *testing.T) {
	earlier := map[string]string{"toolu_1": "mcp__robot__camera.take_photo", "call-7": ""}
	lookup := func(id string) string { return earlier[id] }
	for _, tt := range []struct {
		name     string
		toolName string
		tc       permissionToolCall
		want     string
		source   toolSource
	}{
		{"legacy toolName", "camera.take_photo", permissionToolCall{ID: "x"}, "camera.take_photo", fromRequest},
		{"name field", "", permissionToolCall{ID: "x", Name: "shell", Title: "Approve weather?"}, "shell", fromRequest},
		{"claude _meta", "", permissionToolCall{ID: "x", Meta: json.RawMessage(`{"claudeCode":{"toolName":"Bash"}}`)}, "Bash", fromRequest},
		{"same-id tool_call", "", permissionToolCall{ID: "toolu_1", Title: "mcp__robot__camera.take_photo"}, "mcp__robot__camera.take_photo", fromToolCall},
		{"same-id tool_call naming nothing", "", permissionToolCall{ID: "call-7", Title: "ls"}, "", ""},
		{"zeroclaw rawInput", "", permissionToolCall{ID: "approval-1", Title: "Approve file_edit?", RawInput: json.RawMessage(`{"tool":"weather"}`)}, "weather", fromRawInput},
		{"rawInput with arguments names nothing", "", permissionToolCall{ID: "a", RawInput: json.RawMessage(`{"tool":"x","path":"/tmp"}`)}, "", ""},
		{"zeroclaw title", "", permissionToolCall{ID: "approval-2", Title: "Approve file_edit?", RawInput: json.RawMessage(`{"path":"a","newText":"b"}`)}, "file_edit", fromTitle},
		{"gemini built-in tool", "", permissionToolCall{ID: "run_shell_command-1-1", Title: "ls -la", Kind: "execute"}, "", ""},
		{"prose name field ignored", "", permissionToolCall{ID: "x", Name: "Take a photo"}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, src := identifyTool(tt.toolName, tt.tc, lookup)
			if got != tt.want || src != tt.source {
				t.Errorf("identifyTool = %q from %q, want %q from %q", got, src, tt.want, tt.source)
			}
		})
	}
}

func TestNormaliseTool(t *testing.T) {
	for in, want := range map[string]string{
		" self.camera.take_photo ":      "camera.take_photo",
		"mcp__robot__camera.take_photo": "camera.take_photo",
		"mcp__robot__self.weather":      "weather",
		"mcp__broken":                   "mcp__broken",
		"shell":                         "shell",
	} {
		if got := normaliseTool(in); got != want {
			t.Errorf("normaliseTool(%q) = %q, want %q", in, got, want)
		}
	}
}
