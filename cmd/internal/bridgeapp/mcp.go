package bridgeapp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acpclient"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/robottools"
)

// The stdio relay's environment.
const (
	envMCPURL       = acpclient.EnvToolsURL
	envMCPToken     = acpclient.EnvToolsToken
	envMCPTokenFile = "DOTTY_MCP_TOKEN_FILE" // #nosec G101 -- a variable's name, not a credential
)

// mcpEnv is the relay's environment, documented with the settings.
var mcpEnv = []string{envMCPURL, envMCPToken, envMCPTokenFile}

// mcpTokenFile is the token file's name in the bridge's state directory
// (the directory of VOICE_MEMORY_DB).
const mcpTokenFile = "mcp-token.json" // #nosec G101 -- a file's name, not a credential

// mcpUsage is `zeroclaw-bridge mcp -h`.
const mcpUsage = `zeroclaw-bridge mcp: the robot's tools as an MCP server on stdin/stdout, relayed
to the running bridge's MCP endpoint (for an agent that spawns its MCP servers).

Environment:
  DOTTY_MCP_URL         the bridge's MCP endpoint, http://127.0.0.1:<port>/mcp
  DOTTY_MCP_TOKEN       the bearer token; with DOTTY_MCP_URL, as the bridge hands them to an agent
  DOTTY_MCP_TOKEN_FILE  without DOTTY_MCP_TOKEN: the bridge's token file, JSON {"url","token"},
                        read at every call (default: mcp-token.json beside VOICE_MEMORY_DB,
                        /root/.zeroclaw/workspace/memory/mcp-token.json)

Flags:
`

// runMCP is `zeroclaw-bridge mcp`: it serves the robot's tools on the
// process's stdin and stdout (robottools.Relay) until stdin closes or
// SIGINT/SIGTERM arrives. Logs go to stderr; stdout is the protocol.
func runMCP(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	fs, level := subcommandFlags("mcp", stderr)
	fs.Usage = func() { fmt.Fprint(stderr, mcpUsage); fs.PrintDefaults() }
	printTOML := fs.Bool("print-zeroclaw-config", false, "print the tables that give ZeroClaw the robot's tools (for its config.toml) and exit")
	lvl, help, err := parseSubcommand(fs, args, level)
	if help || err != nil {
		return err
	}
	if *printTOML {
		return printZeroClawMCP(lookupEnv, stdout)
	}
	creds, err := mcpCredentials(lookupEnv)
	if err != nil {
		return &usageError{err}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := hclog.New(&hclog.LoggerOptions{Name: "zeroclaw-bridge-mcp", Level: lvl, Output: stderr})
	return robottools.Relay(ctx, robottools.RelayConfig{Credentials: creds, Logger: log}, &mcp.StdioTransport{})
}

// mcpCredentials reads the relay's environment: DOTTY_MCP_URL and
// DOTTY_MCP_TOKEN together, else the token file (DOTTY_MCP_TOKEN_FILE or
// the default), read at every call.
func mcpCredentials(lookupEnv func(string) (string, bool)) (func() (robottools.Credentials, error), error) {
	url, _ := lookupEnv(envMCPURL)
	token, _ := lookupEnv(envMCPToken)
	switch {
	case token != "" && url == "":
		return nil, fmt.Errorf("%s is set without %s", envMCPToken, envMCPURL)
	case token != "":
		if err := robottools.CheckURL(url); err != nil {
			return nil, fmt.Errorf("invalid %s: %w", envMCPURL, err)
		}
		c := robottools.Credentials{URL: url, Token: token}
		return func() (robottools.Credentials, error) { return c, nil }, nil
	case url != "":
		return nil, fmt.Errorf("%s is set without %s (the token file holds both)", envMCPURL, envMCPToken)
	}
	path, err := mcpTokenFileOf(lookupEnv)
	if err != nil {
		return nil, err
	}
	return func() (robottools.Credentials, error) { return robottools.ReadCredentials(path) }, nil
}

// mcpTokenFileOf is DOTTY_MCP_TOKEN_FILE, else where the bridge writes its
// token file for the environment: beside VOICE_MEMORY_DB, its value or
// its default. It must be absolute.
func mcpTokenFileOf(lookupEnv func(string) (string, bool)) (string, error) {
	if path, _ := lookupEnv(envMCPTokenFile); path != "" {
		if !filepath.IsAbs(path) {
			return "", fmt.Errorf("invalid %s %q: want an absolute path", envMCPTokenFile, path)
		}
		return path, nil
	}
	db, _ := lookupEnv("VOICE_MEMORY_DB")
	if db == "" {
		db = memoryDBDefault()
	}
	abs, err := systemHomes(lookupEnv).expand(db)
	if err != nil {
		return "", fmt.Errorf("%s: %w (set it to an absolute path)", envMCPTokenFile, err)
	}
	return mcpTokenPath(abs), nil
}

// mcpTokenPath is the token file of the bridge whose memory database is db.
func mcpTokenPath(db string) string { return filepath.Join(filepath.Dir(db), mcpTokenFile) }

// memoryDBDefault is VOICE_MEMORY_DB's default.
func memoryDBDefault() string {
	for _, s := range settings {
		if s.env == "VOICE_MEMORY_DB" {
			return s.def
		}
	}
	return ""
}

// standingTokens is what ZeroClaw's standing token needs of the robot's
// tool server (*robottools.Server).
type standingTokens interface {
	MintStanding(key string) string
	Revoke(token string)
}

// zeroclawKey is the pool key of ZeroClaw's standing token.
const zeroclawKey = "zeroclaw"

// mcpTokenFileActor is the actor giving ZeroClaw, which reads no
// per-session MCP servers, the robot's tools while the bridge runs
// (startStandingToken), revoking its token at stop.
func mcpTokenFileActor(tools standingTokens, url, memoryDB string, conds *health.Conditions, log hclog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		stop := startStandingToken(tools, url, memoryDB, conds, log)
		<-ctx.Done()
		stop()
		return nil
	}
}

// toolsFileCondition is the token file's health condition.
const toolsFileCondition = "robot-tools-file"

// startStandingToken mints ZeroClaw's standing token and writes it with
// url to mcp-token.json beside the memory database memoryDB (the file
// `zeroclaw-bridge mcp` reads); stop revokes it. A file it cannot write is
// one logged reason and a failing condition whose re-check writes it
// again: ZeroClaw goes without the tools until then, the bridge runs on.
func startStandingToken(tools standingTokens, url, memoryDB string, conds *health.Conditions, log hclog.Logger) (stop func()) {
	token := tools.MintStanding(zeroclawKey)
	path := mcpTokenPath(memoryDB)
	write := func() error { return writeMCPTokenFile(path, robottools.Credentials{URL: url, Token: token}) }
	if err := write(); err != nil {
		conds.Failed(log, hclog.Error, toolsFileCondition, "robot tools token file", err, write,
			"ZeroClaw gets no robot tools until their token file can be written", "path", path)
	} else {
		log.Info("robot tools token file written for ZeroClaw", "path", path)
	}
	return func() { tools.Revoke(token) }
}

// writeMCPTokenFile writes c to path as JSON, durably and atomically
// (admin.WriteAtomic), mode 0600 whatever a file there had: anything but a
// regular file of mode 0600 in its place is removed first.
func writeMCPTokenFile(path string, c robottools.Credentials) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil && (!fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600) {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return admin.WriteAtomic(path, b, 0o600)
}

// zeroclawMCPEntry is the robot tools' entry in ZeroClaw's config.toml
// (/admin/mcp-server): `self mcp` reading the token file beside memoryDB,
// granted to agent (ZEROCLAW_AGENT_ALIAS; "" for ZeroClaw's default).
func zeroclawMCPEntry(self, memoryDB, agent string) admin.ZeroClawMCP {
	return admin.ZeroClawMCP{Name: robottools.Name, Command: self, TokenFile: mcpTokenPath(memoryDB), Agent: agent}
}

// printZeroClawMCP is `mcp -print-zeroclaw-config`: the tables for the
// running binary and the token file of the environment, and the agent's
// grant as a comment.
func printZeroClawMCP(lookupEnv func(string) (string, bool), stdout io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcp: the binary's own path: %w", err)
	}
	file, err := mcpTokenFileOf(lookupEnv)
	if err != nil {
		return &usageError{err}
	}
	m := admin.ZeroClawMCP{Name: robottools.Name, Command: self, TokenFile: file}
	_, err = fmt.Fprintf(stdout, "%s\n# and in the table of the agent the bridge talks to, [agents.<alias>]:\n#   mcp_bundles = [..., %q]\n#   acp_enable_mcp = true\n",
		m.TOML(), robottools.Name)
	return err
}
