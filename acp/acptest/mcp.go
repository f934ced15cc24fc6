package acptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPLogEnv names the file where mode "mcp-tools" appends, for every
// prompt, one JSON line: the session, and the URL and Authorization
// header of the HTTP MCP server its session/new offered.
const MCPLogEnv = "ZCB_ACPTEST_MCP_LOG"

// MCPOffer is one line of the MCPLogEnv file.
type MCPOffer struct {
	Session       string `json:"session"`
	URL           string `json:"url"`
	Authorization string `json:"authorization"`
}

// runMCPTools is mode "mcp-tools": an ACP v1 agent that advertises
// mcpCapabilities.http (as claude-agent-acp, codex-acp and gemini-cli do)
// and, as they do, connects to the HTTP MCP server its session was offered
// with the headers given. A prompt saying "look left" calls its look tool
// (yaw -45, pitch 0) and answers with the tool's text; one saying "feel
// sad" calls set_mood (sad) and answers "😊 " and the tool's text; any
// other is echoed.
func runMCPTools() int {
	a := &Agent{Name: "acptest-mcp-tools", MCPHTTP: true}
	a.OnPrompt = func(ctx context.Context, a *Agent, sid, text string) (acpsdk.PromptResponse, error) {
		reply := Echo(text)
		offer, ok := a.httpOffer(sid)
		if ok {
			logOffer(offer)
		}
		tool, args, lead := "", map[string]any(nil), ""
		switch {
		case strings.Contains(text, "look left"):
			tool, args = "look", map[string]any{"yaw": -45, "pitch": 0}
		case strings.Contains(text, "feel sad"):
			tool, args, lead = "set_mood", map[string]any{"mood": "sad"}, "😊 "
		}
		switch {
		case tool == "":
		case !ok:
			reply = "no robot tools were offered"
		default:
			switch out, failed, err := CallTool(ctx, offer.URL, offer.Authorization, tool, args); {
			case err != nil:
				reply = "robot tools unreachable: " + err.Error()
			case failed:
				reply = tool + " failed: " + out
			default:
				reply = lead + out
			}
		}
		if err := a.Chunk(ctx, sid, reply); err != nil {
			return acpsdk.PromptResponse{}, err
		}
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	conn := a.Serve(a, os.Stdout, os.Stdin)
	<-conn.Done()
	return 0
}

// httpOffer is the HTTP MCP server offered to session sid.
func (a *Agent) httpOffer(sid string) (MCPOffer, bool) {
	for _, o := range a.Opened() {
		if o.SessionID != sid {
			continue
		}
		for _, s := range o.MCPServers {
			if s.Http == nil {
				continue
			}
			off := MCPOffer{Session: sid, URL: s.Http.Url}
			for _, h := range s.Http.Headers {
				if strings.EqualFold(h.Name, "Authorization") {
					off.Authorization = h.Value
				}
			}
			return off, true
		}
	}
	return MCPOffer{}, false
}

func logOffer(o MCPOffer) {
	path := os.Getenv(MCPLogEnv)
	if path == "" {
		return
	}
	line, _ := json.Marshal(o)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600) // #nosec G304 -- the test's file
	if err != nil {
		return
	}
	_, _ = f.Write(append(line, '\n'))
	_ = f.Close()
}

// CallTool calls MCP tool name with args on the streamable-HTTP server at
// url, sending authorization as the Authorization header, as an agent
// does; it returns the tool's text and whether the tool reported an error.
func CallTool(ctx context.Context, url, authorization, name string, args map[string]any) (text string, toolErr bool, err error) {
	hc := &http.Client{Transport: headerTransport{name: "Authorization", value: authorization}}
	client := mcp.NewClient(&mcp.Implementation{Name: "acptest", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return "", false, fmt.Errorf("connect to %s: %w", url, err)
	}
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, fmt.Errorf("call %s: %w", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError, nil
}

// headerTransport adds one header to every request.
type headerTransport struct{ name, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}
