package acpclient

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
)

// toolsRecorder is a Tools that records what the client does with its
// tokens: the key each was minted for, the session each is bound to, and
// which are still live.
type toolsRecorder struct {
	mu      sync.Mutex
	n       int
	keys    map[string]string // token → pool key
	bound   map[string]string // token → agent session
	live    map[string]bool
	maxLive int
}

func (r *toolsRecorder) Mint(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys, r.bound, r.live = map[string]string{}, map[string]string{}, map[string]bool{}
	}
	r.n++
	token := fmt.Sprintf("token-%d", r.n)
	r.keys[token], r.live[token] = key, true
	r.maxLive = max(r.maxLive, len(r.live))
	return token
}

func (r *toolsRecorder) Bind(token, sid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bound[token] = sid
}

func (r *toolsRecorder) Revoke(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.live, token)
}

// tokenOf returns the live token bound to sid, "" when none is.
func (r *toolsRecorder) tokenOf(sid string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for token, s := range r.bound {
		if s == sid && r.live[token] {
			return token
		}
	}
	return ""
}

func (r *toolsRecorder) liveCount() (live, most, minted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.live), r.maxLive, r.n
}

func (r *toolsRecorder) keyOf(token string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys[token]
}

const testToolsURL = "http://127.0.0.1:4711/mcp"

// toolsConfig offers the robot's tools through rec, with a relay.
func toolsConfig(rec *toolsRecorder) Config {
	return Config{Tools: rec, ToolsURL: testToolsURL, ToolsRelay: []string{"/opt/bridge/zeroclaw-bridge", "mcp"}}
}

// openedJSON is the mcpServers the agent received with its last opened
// session, as JSON values.
func openedJSON(t *testing.T, a *acptest.Agent) any {
	t.Helper()
	opened := a.Opened()
	if len(opened) == 0 {
		t.Fatal("the agent opened no session")
	}
	servers := opened[len(opened)-1].MCPServers
	if servers == nil {
		servers = []acp.McpServer{}
	}
	raw, err := json.Marshal(servers)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// session/new offers the robot's tools as the contract writes them: over
// HTTP with the session's bearer token to an agent advertising
// mcpCapabilities.http, else as the stdio relay with the URL and token in
// its environment; nothing to ZeroClaw (it reads no mcpServers), nothing
// when the feature is off or a stdio agent has no relay. The token is
// minted for the session's pool key.
func TestToolsEntryShapes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		agent *acptest.Agent
		cfg   func(*toolsRecorder) Config
		key   string
		want  string // with %s for the token
	}{
		{name: "http", agent: &acptest.Agent{Name: "claude-agent-acp", MCPHTTP: true}, cfg: toolsConfig, key: "kitchen",
			want: `[{"type":"http","name":"dotty-robot","url":"` + testToolsURL + `","headers":[{"name":"Authorization","value":"Bearer %s"}]}]`},
		{name: "stdio", agent: &acptest.Agent{Name: "some-agent"}, cfg: toolsConfig,
			want: `[{"name":"dotty-robot","command":"/opt/bridge/zeroclaw-bridge","args":["mcp"],"env":[` +
				`{"name":"DOTTY_MCP_URL","value":"` + testToolsURL + `"},{"name":"DOTTY_MCP_TOKEN","value":"%s"}]}]`},
		{name: "zeroclaw", agent: &acptest.Agent{Name: "zeroclaw-acp", MCPHTTP: true}, want: `[]`,
			cfg: func(r *toolsRecorder) Config { c := toolsConfig(r); c.SessionCwd = "/"; return c }}, // the SDK wants a cwd
		{name: "off", agent: &acptest.Agent{Name: "claude-agent-acp", MCPHTTP: true},
			cfg: func(*toolsRecorder) Config { return Config{} }, want: `[]`},
		{name: "stdio without relay", agent: &acptest.Agent{Name: "some-agent"},
			cfg: func(r *toolsRecorder) Config { return Config{Tools: r, ToolsURL: testToolsURL} }, want: `[]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &toolsRecorder{}
			c, _ := dialAgentWith(t, tt.agent, tt.cfg(rec))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if tt.key != "" {
				ctx = agentconn.WithSessionKey(ctx, tt.key)
			}
			sid, err := c.NewSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			token := rec.tokenOf(sid)
			want := tt.want
			if want != `[]` {
				if token == "" {
					t.Fatalf("no live token bound to session %s", sid)
				}
				want = fmt.Sprintf(want, token)
				if got, wantKey := rec.keyOf(token), cmp.Or(tt.key, agentconn.DefaultKey); got != wantKey {
					t.Errorf("token minted for key %q, want %q", got, wantKey)
				}
			} else if _, _, minted := rec.liveCount(); minted != 0 {
				t.Errorf("%d tokens minted for an agent offered no tools", minted)
			}
			if d := gocmp.Diff(openedJSON(t, tt.agent), jsonValue(t, want)); d != "" {
				t.Errorf("mcpServers (-got +want):\n%s", d)
			}
		})
	}
}

// A session's token is bound to it once the agent names it and revoked
// when the session is closed or forgotten, or the agent's connection
// dies; a token minted for a session the agent refused is revoked at once.
func TestToolsTokenLifecycle(t *testing.T) {
	rec := &toolsRecorder{}
	a := &acptest.Agent{Name: "claude-agent-acp", MCPHTTP: true}
	c, agentOut := dialAgentWith(t, a, toolsConfig(rec))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func() (string, string) {
		t.Helper()
		sid, err := c.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		token := rec.tokenOf(sid)
		if token == "" {
			t.Fatalf("session %s has no live token", sid)
		}
		return sid, token
	}
	s1, t1 := open()
	c.CloseSession(ctx, s1)
	if rec.tokenOf(s1) != "" || !slices.Contains(a.Closed(), s1) {
		t.Errorf("after CloseSession(%s): token %s live %v, agent closed %v", s1, t1, rec.tokenOf(s1) != "", a.Closed())
	}
	s2, _ := open()
	c.ForgetSession(s2)
	if rec.tokenOf(s2) != "" {
		t.Errorf("ForgetSession(%s) left its token live", s2)
	}

	a.RefuseSessions(true)
	if _, err := c.NewSession(ctx); err == nil {
		t.Fatal("a refused session/new succeeded")
	}
	if live, _, _ := rec.liveCount(); live != 0 {
		t.Errorf("%d tokens live after a refused session/new, want 0", live)
	}
	a.RefuseSessions(false)

	s3, _ := open()
	s4, _ := open()
	if live, _, _ := rec.liveCount(); live != 2 {
		t.Errorf("%d tokens live with two sessions open, want 2", live)
	}
	_ = agentOut.Close() // the agent dies
	acptest.WaitClosed(t, "the client", c.Done())
	if live, _, _ := rec.liveCount(); live != 0 {
		t.Errorf("%d tokens live after the agent died (sessions %s, %s), want 0", live, s3, s4)
	}
	if _, err := c.NewSession(ctx); err == nil {
		t.Fatal("a dead client opened a session")
	}
	if live, _, _ := rec.liveCount(); live != 0 {
		t.Errorf("%d tokens live after an open on a dead client, want 0", live)
	}
}

// A session restored on a new process of the agent (session/resume) is
// offered the tools with a fresh token, bound to it; the old process's
// token died with it.
func TestToolsRestoreMintsAFreshToken(t *testing.T) {
	rec := &toolsRecorder{}
	a := &acptest.Agent{Name: "claude-agent-acp", MCPHTTP: true, Resume: true}
	c1, out1 := dialAgentWith(t, a, toolsConfig(rec))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx = agentconn.WithSessionKey(ctx, "kitchen")
	sid, err := c1.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := rec.tokenOf(sid)
	_ = out1.Close()
	acptest.WaitClosed(t, "the first client", c1.Done())

	c2, _ := dialAgentWith(t, a, toolsConfig(rec))
	got, err := c2.ResumeSession(ctx, sid)
	if err != nil || got != sid {
		t.Fatalf("resume: %q, %v", got, err)
	}
	fresh := rec.tokenOf(sid)
	if fresh == "" || fresh == old {
		t.Fatalf("restored session's token %q (was %q): want a fresh live one", fresh, old)
	}
	if k := rec.keyOf(fresh); k != "kitchen" {
		t.Errorf("fresh token minted for key %q, want kitchen", k)
	}
	opened := a.Opened()
	last := opened[len(opened)-1]
	if last.Method != acp.AgentMethodSessionResume || len(last.MCPServers) != 1 || last.MCPServers[0].Http == nil ||
		last.MCPServers[0].Http.Headers[0].Value != "Bearer "+fresh {
		raw, _ := json.Marshal(last.MCPServers)
		t.Errorf("%s offered %s, want the HTTP entry with the fresh token", last.Method, raw)
	}
	if live, _, _ := rec.liveCount(); live != 1 {
		t.Errorf("%d tokens live, want the restored session's only", live)
	}
}

// A flood of sessions opened and closed, and of opens the agent refuses,
// leaves no token behind: at most one live token per open session, none
// once all are closed, and the client's own table empty.
func TestToolsTokenFlood(t *testing.T) {
	rec := &toolsRecorder{}
	a := &acptest.Agent{Name: "claude-agent-acp", MCPHTTP: true}
	c, _ := dialAgentWith(t, a, toolsConfig(rec))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const workers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := agentconn.WithSessionKey(ctx, fmt.Sprint("caller-", w))
			for range each {
				sid, err := c.NewSession(key)
				if err != nil {
					errs <- err
					return
				}
				c.CloseSession(ctx, sid)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	a.RefuseSessions(true)
	for range each {
		if _, err := c.NewSession(ctx); err == nil {
			t.Fatal("a refused session/new succeeded")
		}
	}
	live, most, minted := rec.liveCount()
	t.Logf("%d tokens minted, at most %d live at once", minted, most)
	if minted != workers*each+each || live != 0 || most > workers || c.tokens.len() != 0 {
		t.Errorf("minted %d (want %d), live %d (want 0), most live %d (want ≤ %d), client table %d (want 0)",
			minted, workers*each+each, live, most, workers, c.tokens.len())
	}
}
