package acpclient

import (
	"encoding/json"
	"testing"
)

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
