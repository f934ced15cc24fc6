package agentconn

import (
	"context"
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

func TestNormaliseTool(t *testing.T) {
	for in, want := range map[string]string{
		" self.camera.take_photo ":      "camera.take_photo",
		"mcp__robot__camera.take_photo": "camera.take_photo",
		"mcp__robot__self.weather":      "weather",
		"mcp__broken":                   "mcp__broken",
		"shell":                         "shell",
	} {
		if got := NormaliseTool(in); got != want {
			t.Errorf("NormaliseTool(%q) = %q, want %q", in, got, want)
		}
	}
}
