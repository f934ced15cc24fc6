package robottools

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// startRelay runs Relay over a pair of pipes, the agent's stdio, and
// connects an MCP client to it. Closing the client (at cleanup) closes the
// relay's stdin; the relay must then return.
func startRelay(t *testing.T, creds func() (Credentials, error)) *mcp.ClientSession {
	t.Helper()
	inR, inW, err := os.Pipe() // the relay's stdin
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe() // the relay's stdout
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- Relay(context.Background(), RelayConfig{Credentials: creds, Timeout: 10 * time.Second},
			&mcp.IOTransport{Reader: inR, Writer: outW})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect to the relay: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close() // closes the relay's stdin
		if err := testkit.Recv(t, 10*time.Second, done, "relay still running after its stdin closed"); err != nil {
			t.Errorf("relay ended with %v, want nil once its stdin closed", err)
		}
	})
	return cs
}

// fixed returns constant credentials.
func fixed(url, token string) func() (Credentials, error) {
	return func() (Credentials, error) { return Credentials{URL: url, Token: token}, nil }
}

// asJSON is a result as the wire carries it.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRelayAnswersAsTheServer: the stdio relay and the HTTP server give the
// same answers: the server's name and instructions, the tool list, and
// every tool's result, a tool error and a call the permission policy
// refuses included.
func TestRelayAnswersAsTheServer(t *testing.T) {
	k := newKit(t, func(c *Config) {
		c.Burst = 100
		c.Permissions = &agentconn.Policy{Deny: []string{"today"}}
	})
	token := k.srv.Mint("k1")
	k.srv.Bind(token, "agent-k1")
	k.srv.SetDevice("k1", "dev-1")
	direct := k.connect(t, token)
	relayed := startRelay(t, fixed(k.url+"/mcp", token))

	d, r := direct.InitializeResult(), relayed.InitializeResult()
	if d.ServerInfo.Name != r.ServerInfo.Name || d.Instructions != r.Instructions || r.Capabilities.Tools == nil {
		t.Errorf("relay's server %+v (%q), tools %v; the server's %+v (%q)", r.ServerInfo, r.Instructions,
			r.Capabilities.Tools, d.ServerInfo, d.Instructions)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dl, err := direct.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := relayed.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("relay's tools/list: %v", err)
	}
	if got, want := asJSON(t, rl), asJSON(t, dl); got != want || len(rl.Tools) != len(toolNames) {
		t.Errorf("relay's tool list\n%s\nthe server's\n%s", got, want)
	}
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		isError bool
	}{
		{"look", map[string]any{"yaw": -45, "pitch": 10}, false},
		{"look", map[string]any{"yaw": 91, "pitch": 0}, true}, // a tool error
		{"set_state", map[string]any{"state": "dance"}, false},
		{"set_mood", map[string]any{"mood": "sad"}, false},
		{"set_mood", map[string]any{"mood": "grumpy"}, true},
		{"take_photo", map[string]any{"question": "who is there?"}, false},
		{"list_songs", nil, false},
		{"play_song", map[string]any{"name": "Baby Shark"}, false},
		{"who_is_here", nil, false},
		{"today", nil, true}, // refused by the policy
		{"memory_lookup", map[string]any{"query": "tooth"}, false},
		{"remember", map[string]any{"person": "Sam", "fact": "lost a tooth"}, false},
	} {
		want, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s over HTTP: %v", tc.tool, err)
		}
		got, err := relayed.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s over the relay: %v", tc.tool, err)
		}
		if g, w := asJSON(t, got), asJSON(t, want); g != w || got.IsError != tc.isError {
			t.Errorf("%s %v over the relay:\n%s\nover HTTP (error %v expected):\n%s", tc.tool, tc.args, g, tc.isError, w)
		}
	}
	if got := k.count("today", outcomeRefused); got != 2 {
		t.Errorf("refused today calls = %v, want 2 (one each way)", got)
	}
	// An unknown tool is the server's protocol error, relayed as it is.
	_, derr := direct.CallTool(ctx, &mcp.CallToolParams{Name: "fly"})
	_, rerr := relayed.CallTool(ctx, &mcp.CallToolParams{Name: "fly"})
	dw, dok := bridgeError(derr)
	rw, rok := bridgeError(rerr)
	if !dok || !rok || dw.Code != rw.Code || dw.Message != rw.Message {
		t.Errorf("unknown tool: over the relay %v, over HTTP %v; want the same JSON-RPC error", rerr, derr)
	}

	// A revoked token: the HTTP server answers 401, the relay a tool error
	// the model can read.
	k.srv.Revoke(token)
	if _, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "list_songs"}); err == nil || !strings.Contains(err.Error(), "401") &&
		!strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Errorf("revoked token over HTTP: %v, want a 401", err)
	}
	if got, isErr := callTool(t, relayed, "list_songs", nil); !isErr || got != AccessEnded {
		t.Errorf("revoked token over the relay: %q (error %v), want the tool error %q", got, isErr, AccessEnded)
	}
}

// TestRelayWithoutTheBridge: with the bridge not answering or no
// credentials, a call is a tool error the model can read and the relay
// keeps serving; a token file the bridge rewrote is read at the next call.
func TestRelayWithoutTheBridge(t *testing.T) {
	k := newKit(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + l.Addr().String()
	_ = l.Close() // nothing listens at its address now
	file := filepath.Join(t.TempDir(), "mcp-token.json")
	write := func(c Credentials) {
		t.Helper()
		if err := os.WriteFile(file, []byte(asJSON(t, c)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(Credentials{URL: gone + "/mcp", Token: "stale"})
	cs := startRelay(t, func() (Credentials, error) { return ReadCredentials(file) })

	if got, isErr := callTool(t, cs, "list_songs", nil); !isErr || got != Unreachable {
		t.Errorf("bridge down: %q (error %v), want the tool error %q", got, isErr, Unreachable)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err == nil || !strings.Contains(err.Error(), Unreachable) {
		t.Errorf("tools/list with the bridge down: %v, want an error saying %q", err, Unreachable)
	}

	if err := os.WriteFile(file, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, isErr := callTool(t, cs, "list_songs", nil); !isErr || !strings.HasPrefix(got, NoAccess) || !strings.Contains(got, file) {
		t.Errorf("malformed token file: %q (error %v), want a tool error naming the file", got, isErr)
	}

	// The bridge (re)started and rewrote the file: the next call reaches it.
	write(Credentials{URL: k.url + "/mcp", Token: k.srv.MintStanding("zeroclaw")})
	if got, isErr := callTool(t, cs, "list_songs", nil); isErr || !strings.Contains(got, "baby shark") {
		t.Errorf("after the file was rewritten: %q (error %v), want the song list", got, isErr)
	}
}

// TestReadCredentials: a token file needs both fields.
func TestReadCredentials(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"ok": `{"url":"http://127.0.0.1:1/mcp","token":"t"}`,
		"notoken": `{"url":"http://127.0.0.1:1/mcp"}`, "bad": `{`, "remote": `{"url":"http://example.com/mcp","token":"t"}`,
		"nourl": `{"token":"t"}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := ReadCredentials(filepath.Join(dir, "ok")); err != nil || c.Token != "t" {
		t.Errorf("ok: %+v %v", c, err)
	}
	for _, name := range []string{"notoken", "bad", "remote", "nourl", "missing"} {
		if _, err := ReadCredentials(filepath.Join(dir, name)); err == nil || (name != "missing" && !strings.Contains(err.Error(), name)) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
	if _, err := ReadCredentials(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v, want ErrNotExist wrapped", err)
	}
}
