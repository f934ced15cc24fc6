package bridgeapp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// The tools' listener serves on loopback at the URL handed to agents; off,
// there is none; a port that cannot be bound is one logged reason and the
// bridge goes on without the tools.
func TestListenTools(t *testing.T) {
	var logs testkit.LogBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	c := defaultMCPConfig()
	tl := listenTools(c, log)
	if tl == nil {
		t.Fatalf("no listener on %s: %s", c.Listen, logs.String())
	}
	defer tl.close()
	if !strings.HasPrefix(tl.url, "http://127.0.0.1:") || !strings.HasSuffix(tl.url, "/mcp") {
		t.Errorf("url %q, want http://127.0.0.1:<port>/mcp", tl.url)
	}

	c.Enabled = false
	if off := listenTools(c, log); off != nil {
		off.close()
		t.Error("a listener with DOTTY_MCP_ENABLED off")
	}

	c.Enabled, c.Listen = true, tl.ln.Addr().(*net.TCPAddr).AddrPort().String() // taken
	if taken := listenTools(c, log); taken != nil {
		taken.close()
		t.Fatal("bound a taken port")
	}
	if n := strings.Count(logs.String(), "the robot's tools are not served"); n != 1 {
		t.Errorf("%d reasons logged for the taken port, want 1:\n%s", n, logs.String())
	}
}

// headTurns are the devices of the set-head-angles calls xz received.
func headTurns(xz *xiaozhitest.Server) []string {
	var out []string
	for _, c := range xz.CallsTo("/xiaozhi/admin/set-head-angles") {
		out = append(out, fmt.Sprintf("%v yaw=%v", c.Body["device_id"], c.Body["yaw"]))
	}
	return out
}

// mcpOffers reads the offers the mcp-tools agent logged, one per prompt.
func mcpOffers(t *testing.T, path string) []acptest.MCPOffer {
	t.Helper()
	b, err := os.ReadFile(path) // #nosec G304 -- the test's file
	if err != nil {
		t.Fatal(err)
	}
	var out []acptest.MCPOffer
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var o acptest.MCPOffer
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("offer line %q: %v", line, err)
		}
		out = append(out, o)
	}
	return out
}

// mcpStatus is the HTTP status of an MCP initialize request to url with
// authorization.
func mcpStatus(t *testing.T, url, authorization string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, value := range map[string]string{"Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Authorization": authorization} {
		req.Header.Set(name, value)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// The real binary hands an agent that speaks MCP over HTTP the robot's
// tools: its session/new offers the bridge's loopback URL with the
// session's bearer token, and the agent's look call on a voice turn turns
// the head of that turn's robot. A token acts on its own conversation's
// robot, not on the robot of the latest turn, and dies with its session.
// The mood the agent sets with set_mood before it answers leads its reply,
// in place of the agent's own emoji.
func TestAgentTurnsTheRobotsHeadThroughTheTools(t *testing.T) {
	xz := xiaozhitest.New(t)
	offers := t.TempDir() + "/offers.jsonl"
	bin, _, env := acptest.Command("mcp-tools", acptest.MCPLogEnv+"="+offers)
	// One turn per agent session: a conversation's second turn closes its
	// first session.
	p := startBridge(t, append(append(env, "ZEROCLAW_BIN="+bin, "ZEROCLAW_SESSION_MAX_TURNS=1"), xiaozhiEnv(xz)...)...)
	turn := func(session, device, content string) string {
		t.Helper()
		body := fmt.Sprintf(`{"content":%q,"session_id":%q,"metadata":{"device_id":%q}}`, content, session, device)
		code, out := p.requestWithin(30*time.Second, http.MethodPost, "/api/message", body, "Content-Type", "application/json")
		if code != http.StatusOK {
			t.Fatalf("voice turn %s: %d %s", session, code, out)
		}
		return out
	}

	if out := turn("A", "dotty-a", "look left"); !strings.Contains(out, "Looking at yaw -45") {
		t.Fatalf("turn A answered %s, want the look tool's answer", out)
	}
	if out := turn("B", "dotty-b", "look left"); !strings.Contains(out, "Looking at yaw -45") {
		t.Fatalf("turn B answered %s, want the look tool's answer", out)
	}
	if got, want := headTurns(xz), []string{"dotty-a yaw=-45", "dotty-b yaw=-45"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("set-head-angles calls %v, want %v", got, want)
	}

	o := mcpOffers(t, offers)
	if len(o) != 2 || !strings.HasPrefix(o[0].URL, "http://127.0.0.1:") || !strings.HasSuffix(o[0].URL, "/mcp") ||
		!strings.HasPrefix(o[0].Authorization, "Bearer ") || o[0].Authorization == o[1].Authorization {
		t.Fatalf("offers %+v: want one loopback /mcp URL per session, each with its own bearer token", o)
	}
	a := o[0]

	// Session A's token, used after B's turn, still acts on A's robot.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	text, failed, err := acptest.CallTool(ctx, a.URL, a.Authorization, "look", map[string]any{"yaw": 30, "pitch": 10})
	if err != nil || failed {
		t.Fatalf("look with A's token: %q, tool error %v, %v", text, failed, err)
	}
	turns := headTurns(xz)
	if last := turns[len(turns)-1]; last != "dotty-a yaw=30" {
		t.Errorf("A's token turned %q, want dotty-a", last)
	}

	// A's next turn opens a new session and closes the first: its token
	// is refused from then on.
	if status := mcpStatus(t, a.URL, a.Authorization); status != http.StatusOK {
		t.Fatalf("A's live token: %d, want 200", status)
	}
	turn("A", "dotty-a", "hello again")
	deadline := time.Now().Add(10 * time.Second)
	status := mcpStatus(t, a.URL, a.Authorization)
	for status != http.StatusUnauthorized && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the old session is retired in the background
		status = mcpStatus(t, a.URL, a.Authorization)
	}
	if status != http.StatusUnauthorized {
		t.Errorf("the closed session's token: %d, want 401", status)
	}
	if status := mcpStatus(t, a.URL, "Bearer not-a-token"); status != http.StatusUnauthorized {
		t.Errorf("an unknown token: %d, want 401", status)
	}

	var sad struct{ Response, Emotion string }
	if out := turn("C", "dotty-c", "feel sad"); json.Unmarshal([]byte(out), &sad) != nil ||
		!strings.HasPrefix(sad.Response, "😢 The face will look sad") || sad.Emotion != "sad" {
		t.Errorf("turn C answered %s, want the set_mood answer led by 😢 (sad)", out)
	}
}
