package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// ZeroClawMCP is the robot's tools as an MCP server of ZeroClaw's
// config.toml: a stdio server running `<Command> mcp` that reads the
// bridge's token file, in a bundle of the same name granted to the agent
// the bridge talks to (ZeroClaw reads no mcpServers from session/new).
type ZeroClawMCP struct {
	// Name is the server's and its bundle's name (robottools.Name); ""
	// when the bridge serves no tools: the route answers 409.
	Name string
	// Command is the bridge binary, run as `<Command> mcp`.
	Command string
	// TokenFile is the token file the bridge writes, passed as
	// DOTTY_MCP_TOKEN_FILE.
	TokenFile string
	// Agent is the agent granted the bundle (ZEROCLAW_AGENT_ALIAS); ""
	// means ZeroClaw's acp.default_agent, else its only agent.
	Agent string
}

// TOML is the server's and the bundle's tables as they are written, for
// an operator to add by hand.
func (m ZeroClawMCP) TOML() string { return m.serverTable() + "\n" + m.bundleTable() }

func (m ZeroClawMCP) serverTable() string {
	return fmt.Sprintf("[[mcp.servers]]\nname = %s\ntransport = \"stdio\"\ncommand = %s\nargs = [\"mcp\"]\nenv = { DOTTY_MCP_TOKEN_FILE = %s }\n",
		tomlString(m.Name), tomlString(m.Command), tomlString(m.TokenFile))
}

func (m ZeroClawMCP) bundleTable() string {
	key := m.Name
	if !bareKey().MatchString(key) {
		key = tomlString(key)
	}
	return fmt.Sprintf("[mcp_bundles.%s]\nservers = [%s]\n", key, tomlString(m.Name))
}

// mcpServer is POST /admin/mcp-server: it adds the robot's tools to the
// voice agent's config.toml, or brings their entry up to date, and with
// restart (when the file changed) restarts the agent child, which reads
// its MCP servers at start. 404 when the file is missing; 409 when it is
// not valid TOML or cannot be edited safely (nothing written).
func (h *Handler) mcpServer(c echo.Context) error {
	f, err := parse(c)
	if err != nil {
		return err
	}
	restart := f.Bool("restart")
	if err := f.Err(); err != nil {
		return err
	}
	m := h.cfg.ZeroClawMCP
	if m.Name == "" || m.Command == "" || m.TokenFile == "" {
		return httpapi.NewError(http.StatusConflict, "the robot's tools are not served (DOTTY_MCP_ENABLED)")
	}
	h.modelMu.Lock() // one config.toml edit at a time
	defer h.modelMu.Unlock()
	path := h.cfg.VoiceConfig
	b, rerr := os.ReadFile(path) // #nosec G304 -- ZEROCLAW_VOICE_CFG, never the caller's
	if errors.Is(rerr, fs.ErrNotExist) || path == "" {
		return httpapi.NewError(http.StatusNotFound, "config not found: "+path)
	}
	if rerr != nil {
		return httpapi.NewError(http.StatusInternalServerError, "could not read "+path+": "+rerr.Error())
	}
	out, agent, err := addZeroClawMCP(string(b), m)
	if err != nil {
		return httpapi.NewError(http.StatusConflict, path+": "+err.Error()+"; nothing was written")
	}
	changed := out != string(b)
	if changed {
		if err := WriteAtomic(path, []byte(out), 0o600); err != nil {
			return httpapi.NewError(http.StatusInternalServerError, "could not write "+path+": "+err.Error())
		}
		h.log.Info("robot tools registered in the agent's config", "config", path, "server", m.Name, "agent", agent)
	}
	restarted := false
	if changed && restart && h.cfg.Agent != nil {
		restarted = h.cfg.Agent.Restart("robot tools registered")
	}
	return httpapi.WriteJSON(c, http.StatusOK, struct {
		OK        bool   `json:"ok"`
		Config    string `json:"config"`
		Server    string `json:"server"`
		Agent     string `json:"agent"`
		Changed   bool   `json:"changed"`
		Restarted bool   `json:"restarted"`
	}{true, path, m.Name, agent, changed, restarted})
}
