package admin

import (
	"os"
	"strings"
	"testing"
)

// zeroclawConfig is a ZeroClaw 0.8 config.toml with comments, another MCP
// server and one agent.
const zeroclawConfig = `# ZeroClaw's config: the family's voice agent.
default_temperature = 0.7

[providers]
fallback = "local"

[mcp]
enabled = true

# The calendar server stays as it is.
[[mcp.servers]]
name = "calendar"
command = "/usr/bin/cal-mcp" # keep this comment
args = []

[agents.default]
model_provider = "local"
skill_bundles = ["home"]

# Tail comment of the file.
`

// zeroclawConfigWithTools is zeroclawConfig after /admin/mcp-server: the
// agent granted the bundle, the server and the bundle appended.
var zeroclawConfigWithTools = strings.Replace(zeroclawConfig, "[agents.default]\n",
	"[agents.default]\nmcp_bundles = [\"dotty-robot\"]\nacp_enable_mcp = true\n", 1) + `
# The desk robot's tools (zeroclaw-bridge mcp), added by the bridge.
[[mcp.servers]]
name = "dotty-robot"
transport = "stdio"
command = "/usr/local/bin/zeroclaw-bridge"
args = ["mcp"]
env = { DOTTY_MCP_TOKEN_FILE = "/root/.zeroclaw/workspace/memory/mcp-token.json" }

# The desk robot's tools (zeroclaw-bridge mcp), added by the bridge.
[mcp_bundles.dotty-robot]
servers = ["dotty-robot"]
`

var robotTools = ZeroClawMCP{Name: "dotty-robot", Command: "/usr/local/bin/zeroclaw-bridge",
	TokenFile: "/root/.zeroclaw/workspace/memory/mcp-token.json"}

// TestMCPServerRoute: POST /admin/mcp-server adds the robot's tools to a
// real config.toml keeping every other line, restarts the agent once, and
// a second call changes nothing; a malformed file is a 409 and left as it
// was; the guards of every /admin route hold.
func TestMCPServerRoute(t *testing.T) {
	a := newAdminEnv(t, func(c *Config) { c.ZeroClawMCP = robotTools })
	path := a.cfg.VoiceConfig
	if code, body := a.post("/admin/mcp-server", `{"restart":true}`); code != 404 || body != `{"detail":"config not found: `+path+`"}` {
		t.Errorf("missing config: %d %s", code, body)
	}
	if err := os.WriteFile(path, []byte(zeroclawConfig), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		peer    string
		headers []string
		code    int
	}{
		{"192.168.1.20:5555", nil, 403},
		{"127.0.0.1:5555", []string{"Origin", "http://evil.example"}, 403},
		{"127.0.0.1:5555", []string{"Host", "evil.example:8080"}, 403},
		{"127.0.0.1:5555", []string{"Content-Type", "text/plain"}, 415},
	} {
		if code, body := a.do("/admin/mcp-server", `{"restart":true}`, r.peer, r.headers...); code != r.code {
			t.Errorf("%s %v: %d %s, want %d", r.peer, r.headers, code, body, r.code)
		}
	}
	for _, body := range []string{`{}`, `{"restart":[]}`, `[`} {
		if code, got := a.post("/admin/mcp-server", body); code != 422 {
			t.Errorf("body %s: %d %s, want 422", body, code, got)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != zeroclawConfig || len(a.agent.restarts) != 0 {
		t.Fatalf("a refused request changed the file or restarted the agent: %q %v", b, a.agent.restarts)
	}

	code, body := a.post("/admin/mcp-server", `{"restart":true}`)
	want := `{"ok":true,"config":"` + path + `","server":"dotty-robot","agent":"default","changed":true,"restarted":true}`
	if code != 200 || body != want {
		t.Errorf("first call: %d %s, want %s", code, body, want)
	}
	b, _ := os.ReadFile(path)
	if string(b) != zeroclawConfigWithTools {
		t.Errorf("config.toml after the call:\n%s\nwant:\n%s", b, zeroclawConfigWithTools)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after the edit: %v %v, want the file's own 0640", fi.Mode(), err)
	}
	code, body = a.post("/admin/mcp-server", `{"restart":true}`)
	if code != 200 || !strings.Contains(body, `"changed":false,"restarted":false`) {
		t.Errorf("second call: %d %s, want nothing changed", code, body)
	}
	if again, _ := os.ReadFile(path); string(again) != string(b) || len(a.agent.restarts) != 1 {
		t.Errorf("second call changed the file (%v) or restarted again: %v", string(again) != string(b), a.agent.restarts)
	}

	malformed := zeroclawConfig + "\n[agents.default\nmodel = 1\n"
	if err := os.WriteFile(path, []byte(malformed), 0o600); err != nil {
		t.Fatal(err)
	}
	code, body = a.post("/admin/mcp-server", `{"restart":true}`)
	if code != 409 || !strings.Contains(body, "not valid TOML") || !strings.Contains(body, "nothing was written") {
		t.Errorf("malformed config: %d %s, want 409 saying it is not valid TOML", code, body)
	}
	if b, _ := os.ReadFile(path); string(b) != malformed || len(a.agent.restarts) != 1 {
		t.Errorf("a malformed config was changed or the agent restarted: %v", a.agent.restarts)
	}

	off := newAdminEnv(t, nil) // the bridge serves no tools
	if err := os.WriteFile(off.cfg.VoiceConfig, []byte(zeroclawConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := off.post("/admin/mcp-server", `{"restart":false}`); code != 409 || !strings.Contains(body, "DOTTY_MCP_ENABLED") {
		t.Errorf("tools off: %d %s, want 409", code, body)
	}
}

// TestAddZeroClawMCP: the edit on the shapes a config.toml comes in.
func TestAddZeroClawMCP(t *testing.T) {
	for _, tc := range []struct {
		name, alias, doc string
		want             string // a part of the result; "" with err
		agent            string
		err              string
	}{
		{name: "no agents: the server and bundle only", doc: "[mcp]\nenabled = true\n",
			want: "[mcp]\nenabled = true\n\n# The desk robot's tools", agent: ""},
		{name: "an old entry is brought up to date in place",
			doc: "[[mcp.servers]]\nname = \"dotty-robot\"\ncommand = \"/old/zeroclaw-bridge\"\nargs = [\"mcp\"]\n\n[x]\ny = 1\n",
			want: "[[mcp.servers]]\nname = \"dotty-robot\"\ntransport = \"stdio\"\ncommand = \"/usr/local/bin/zeroclaw-bridge\"\nargs = [\"mcp\"]\n" +
				"env = { DOTTY_MCP_TOKEN_FILE = \"/root/.zeroclaw/workspace/memory/mcp-token.json\" }\n\n[x]\ny = 1\n"},
		{name: "a multi-line bundle list gains the bundle",
			doc:  "[agents.voice]\nacp_enable_mcp = false\nmcp_bundles = [\n  \"files\", # files\n  \"web\",\n]\nmodel_provider = \"x\"\n",
			want: "[agents.voice]\nacp_enable_mcp = true\nmcp_bundles = [\"files\", \"web\", \"dotty-robot\"]\nmodel_provider = \"x\"\n", agent: "voice"},
		{name: "acp.default_agent chooses among several", doc: "[acp]\ndefault_agent = \"b\"\n[agents.a]\n[agents.b]\n",
			want: "[agents.a]\n[agents.b]\nmcp_bundles = [\"dotty-robot\"]\nacp_enable_mcp = true\n", agent: "b"},
		{name: "ZEROCLAW_AGENT_ALIAS chooses", alias: "a", doc: "[agents.a]\n[agents.b]\n",
			want: "[agents.a]\nmcp_bundles = [\"dotty-robot\"]\nacp_enable_mcp = true\n[agents.b]\n", agent: "a"},
		{name: "several agents, none chosen", doc: "[agents.a]\n[agents.b]\n", err: "ZEROCLAW_AGENT_ALIAS"},
		{name: "an alias that is no agent", alias: "c", doc: "[agents.a]\n", err: `no agent "c"`},
		{name: "an agent without a table of its own", doc: "agents.a.model_provider = \"x\"\n", err: "has no [agents.a] table"},
		{name: "servers written inline", doc: "[mcp]\nservers = []\n", err: "add this by hand"},
		{name: "not TOML", doc: "[mcp\n", err: "not valid TOML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := robotTools
			m.Agent = tc.alias
			out, agent, err := addZeroClawMCP(tc.doc, m)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || agent != tc.agent || !strings.Contains(out, tc.want) {
				t.Fatalf("got agent %q, err %v:\n%s\nwant agent %q and a part:\n%s", agent, err, out, tc.agent, tc.want)
			}
			if again, _, err := addZeroClawMCP(out, m); err != nil || again != out {
				t.Errorf("a second edit changed the result (err %v):\n%s", err, again)
			}
		})
	}
}

// TestZeroClawMCPTOML: the tables printed for the operator are the ones
// written, and valid TOML.
func TestZeroClawMCPTOML(t *testing.T) {
	out, _, err := addZeroClawMCP("", robotTools)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range strings.Split(robotTools.TOML(), "\n\n") {
		if !strings.Contains(out, strings.TrimSpace(table)) {
			t.Errorf("printed table not in the written file:\n%s", table)
		}
	}
	if err := robotTools.check(robotTools.TOML(), ""); err != nil {
		t.Error(err)
	}
}
