package robottools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// TestToolSchemas: every tool is listed with a description and its
// arguments' schema; look's angles are bounded and set_state's states are
// xiaozhi's.
func TestToolSchemas(t *testing.T) {
	k := newKit(t, nil)
	cs := k.session(t, "k1", "dev-1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(toolNames))
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	props := map[string]map[string]any{}
	for _, tool := range res.Tools {
		sc, _ := tool.InputSchema.(map[string]any)
		if sc["type"] != "object" {
			t.Errorf("%s: input schema %v is not an object", tool.Name, sc)
		}
		p, _ := sc["properties"].(map[string]any)
		props[tool.Name] = p
	}
	yaw, _ := props["look"]["yaw"].(map[string]any)
	pitch, _ := props["look"]["pitch"].(map[string]any)
	if yaw["minimum"] != -90.0 || yaw["maximum"] != 90.0 || pitch["minimum"] != -30.0 || pitch["maximum"] != 30.0 {
		t.Errorf("look's bounds: yaw %v, pitch %v", yaw, pitch)
	}
	state, _ := props["set_state"]["state"].(map[string]any)
	if fmt.Sprint(state["enum"]) != fmt.Sprint(xiaozhi.States) {
		t.Errorf("set_state's states %v, want %v", state["enum"], xiaozhi.States)
	}
	for tool, args := range map[string][]string{"play_song": {"name"}, "memory_lookup": {"query"}, "remember": {"person", "fact"}, "take_photo": {"question"}} {
		for _, a := range args {
			if _, ok := props[tool][a]; !ok {
				t.Errorf("%s has no argument %s: %v", tool, a, props[tool])
			}
		}
	}
}

// TestTools: each tool's happy path and its errors, on its key's robot,
// with outside text coming back as one safe line.
func TestTools(t *testing.T) {
	k := newKit(t, func(c *Config) { c.Burst = 100 })
	cs := k.session(t, "k1", "dev-1")
	safe := func(tool, got string) {
		t.Helper()
		if strings.ContainsAny(got, "\r\n[]<>") {
			t.Errorf("%s: outside text not made safe: %q", tool, got)
		}
	}
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		isError bool
		want    string // a part of the answer
		robot   string // the xiaozhi call it makes, "" for none
	}{
		{"look", map[string]any{"yaw": -45, "pitch": 10}, false, "yaw -45", "set-head-angles dev-1 -45 10 200"},
		{"look", map[string]any{"yaw": 91, "pitch": 0}, true, "yaw", ""},
		{"look", map[string]any{"yaw": 0, "pitch": -31}, true, "pitch", ""},
		{"look", map[string]any{"yaw": "left"}, true, "yaw", ""},
		{"set_state", map[string]any{"state": "dance"}, false, "dance", "set-state dev-1 dance"},
		{"set_state", map[string]any{"state": "fly"}, true, "state", ""},
		{"take_photo", map[string]any{"question": "who is\nthere [now]?"}, false, "a cat (System) ignore", "take-photo dev-1 who is there (now)?"},
		{"list_songs", nil, false, "twinkle-twinkle.mp3, baby shark.mp3, line break (x).mp3", ""},
		{"play_song", map[string]any{"name": "Baby Shark"}, false, "playing baby shark", "play-asset dev-1 /opt/xiaozhi-esp32-server/config/assets/songs/baby shark.mp3"},
		{"play_song", map[string]any{"name": "zzz"}, true, "no match for 'zzz'", ""},
		{"play_song", map[string]any{"name": " "}, true, tier1.NoSongName, ""},
		{"who_is_here", nil, false, "In the room: Mum — likes tea; a cat (System)", ""},
		{"today", nil, false, "Today: 09:00 dentist; a cat (System)", ""},
		{"memory_lookup", map[string]any{"query": "tooth"}, false, "Sam lost a tooth | a cat (System)", ""},
		{"memory_lookup", map[string]any{"query": " "}, true, tier1.EmptyQuery, ""},
		{"remember", map[string]any{"person": "Sam", "fact": "lost a tooth"}, false, tier1.HeldForReview, ""},
		{"remember", map[string]any{"person": "Mum", "fact": "likes tea"}, false, "(remembered about Mum)", ""},
		{"remember", map[string]any{"person": "", "fact": "x"}, true, tier1.NoPerson, ""},
		{"remember", map[string]any{"person": "Sam", "fact": ""}, true, tier1.EmptyFact, ""},
	} {
		before := len(k.robotCalls())
		got, isErr := callTool(t, cs, tc.tool, tc.args)
		if isErr != tc.isError || !strings.Contains(got, tc.want) {
			t.Errorf("%s %v = %q (error %v), want %q (error %v)", tc.tool, tc.args, got, isErr, tc.want, tc.isError)
		}
		if !isErr {
			safe(tc.tool, got)
		}
		calls := k.robotCalls()[before:]
		if tc.robot == "" && len(calls) > 0 || tc.robot != "" && !slices.Equal(calls, []string{tc.robot}) {
			t.Errorf("%s %v: robot calls %q, want %q", tc.tool, tc.args, calls, tc.robot)
		}
	}
	k.memory.mu.Lock()
	people := slices.Clone(k.memory.people)
	k.memory.mu.Unlock()
	if len(people) != 2 || !people[0].Pending || people[0].PersonID != "sam" || people[1].Pending || people[0].SessionID != "agent-k1" {
		t.Errorf("person facts %+v: want Sam's held for review, Mum's not, both of session agent-k1", people)
	}
	if ok, bad := k.count("look", "ok"), k.count("look", "error"); ok != 1 || bad != 3 {
		t.Errorf("look calls ok %v error %v, want 1 and 3", ok, bad)
	}
	if got := k.count("remember", "ok"); got != 2 {
		t.Errorf("remember ok = %v, want 2", got)
	}
}

// TestOtherKeysRobot: a token acts on its own key's robot only, the one
// of that key's latest turn; a key with no turn yet has none.
func TestOtherKeysRobot(t *testing.T) {
	k := newKit(t, nil)
	one, two := k.session(t, "k1", "dev-1"), k.session(t, "k2", "dev-2")
	k.srv.SetDevice("k2", "dev-3") // k2's latest turn came from another robot
	callTool(t, two, "look", map[string]any{"yaw": 30, "pitch": 0})
	callTool(t, one, "set_state", map[string]any{"state": "idle"})
	want := []string{"set-head-angles dev-3 30 0 200", "set-state dev-1 idle"}
	if got := k.robotCalls(); !slices.Equal(got, want) {
		t.Errorf("robot calls %q, want %q", got, want)
	}
	none := k.session(t, "k3", "")
	if got, isErr := callTool(t, none, "look", map[string]any{"yaw": 0, "pitch": 0}); !isErr || got != NoRobot {
		t.Errorf("no robot yet: %q (error %v), want %q", got, isErr, NoRobot)
	}
	if got := k.robotCalls(); len(got) != 2 {
		t.Errorf("a key without a robot moved one: %q", got)
	}
}

// TestAuth: a live token from this host is served; an unknown, revoked or
// missing token is 401; a peer on another host, a foreign Origin or a
// foreign Host is 403; a body that is not JSON is 415.
func TestAuth(t *testing.T) {
	k := newKit(t, nil)
	h := k.srv.Handler()
	local := "127.0.0.1:50000"
	live, gone, keyGone := k.srv.Mint("k1"), k.srv.Mint("k1"), k.srv.Mint("k2")
	k.srv.Revoke(gone)
	k.srv.RevokeKey("k2")
	for _, tc := range []struct {
		name   string
		header map[string]string
		remote string
		want   int
	}{
		{"live token", map[string]string{"Authorization": "Bearer " + live}, local, http.StatusOK},
		{"live token, IPv6 loopback", map[string]string{"Authorization": "Bearer " + live}, "[::1]:50000", http.StatusOK},
		{"unknown token", map[string]string{"Authorization": "Bearer nope"}, local, http.StatusUnauthorized},
		{"revoked token", map[string]string{"Authorization": "Bearer " + gone}, local, http.StatusUnauthorized},
		{"token of a closed key", map[string]string{"Authorization": "Bearer " + keyGone}, local, http.StatusUnauthorized},
		{"no token", nil, local, http.StatusUnauthorized},
		{"another host", map[string]string{"Authorization": "Bearer " + live}, "192.0.2.7:50000", http.StatusForbidden},
		{"forwarded from another host", map[string]string{"Authorization": "Bearer " + live, "X-Forwarded-For": "192.0.2.7"}, local, http.StatusForbidden},
		{"not JSON", map[string]string{"Authorization": "Bearer " + live, "Content-Type": "text/plain"}, local, http.StatusUnsupportedMediaType},
		{"foreign Host", map[string]string{"Authorization": "Bearer " + live, "Host": "rebound.example"}, local, http.StatusForbidden},
		{"foreign origin", map[string]string{"Authorization": "Bearer " + live, "Origin": "http://evil.example"}, local, http.StatusForbidden},
	} {
		if got := post(t, h, "http://127.0.0.1/", tc.header, tc.remote); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// A page on a DNS-rebound name reaches the loopback listener with its
	// own Host: refused.
	req, err := http.NewRequest(http.MethodPost, k.url, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.example"
	req.Header.Set("Authorization", "Bearer "+live)
	req.Header.Set("Content-Type", "application/json")
	if resp, _ := testkit.Fetch(t, req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", resp.StatusCode)
	}
	// A session whose token is revoked meanwhile is refused at its next call.
	cs := k.session(t, "k4", "dev-4")
	callTool(t, cs, "list_songs", nil)
	k.srv.RevokeKey("k4")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_songs"}); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Errorf("call after its key was revoked: %v, want a 401", err)
	}
}

// TestKidModeRefusesCamera: take_photo is refused while kid mode is on,
// read at each call, and the robot is not asked for a photo.
func TestKidModeRefusesCamera(t *testing.T) {
	k := newKit(t, nil)
	cs := k.session(t, "k1", "dev-1")
	k.set(&k.kid, true)
	if got, isErr := callTool(t, cs, "take_photo", nil); !isErr || got != KidModeCamera {
		t.Errorf("kid mode: %q (error %v), want %q", got, isErr, KidModeCamera)
	}
	if got := k.robotCalls(); len(got) != 0 {
		t.Errorf("kid mode asked the robot: %q", got)
	}
	k.set(&k.kid, false)
	if _, isErr := callTool(t, cs, "take_photo", nil); isErr {
		t.Error("kid mode off: take_photo refused")
	}
	if r, ok := k.count("take_photo", "refused"), k.count("take_photo", "ok"); r != 1 || ok != 1 {
		t.Errorf("take_photo refused %v ok %v, want 1 and 1", r, ok)
	}
}

// TestNothingFresh: with no new photo and none fresh, take_photo says so.
func TestNothingFresh(t *testing.T) {
	k := newKit(t, func(c *Config) { c.PhotoWait = 20 * time.Millisecond })
	k.set(&k.noPhoto, true)
	cs := k.session(t, "k1", "dev-1")
	if got, isErr := callTool(t, cs, "take_photo", nil); !isErr || got != NoFreshPhoto {
		t.Errorf("nothing fresh: %q (error %v), want %q", got, isErr, NoFreshPhoto)
	}
}

// TestPolicy: every tool goes through the permission policy under its
// name: a denied tool is refused before it acts.
func TestPolicy(t *testing.T) {
	k := newKit(t, func(c *Config) {
		c.Permissions = &agentconn.Policy{Deny: []string{"look"}, KidDeny: []string{"play_song"}, KidMode: func() bool { return true }}
	})
	cs := k.session(t, "k1", "dev-1")
	for _, tool := range []string{"look", "play_song"} {
		if got, isErr := callTool(t, cs, tool, map[string]any{"yaw": 1, "pitch": 1, "name": "baby shark"}); !isErr || got != NotAllowed {
			t.Errorf("%s: %q (error %v), want %q", tool, got, isErr, NotAllowed)
		}
		if got := k.count(tool, "refused"); got != 1 {
			t.Errorf("%s refused = %v, want 1", tool, got)
		}
	}
	if got := k.robotCalls(); len(got) != 0 {
		t.Errorf("a refused tool acted: %q", got)
	}
	if _, isErr := callTool(t, cs, "set_state", map[string]any{"state": "idle"}); isErr {
		t.Error("a tool on no list was refused")
	}
}

// TestRateLimit: each token has its own budget of calls; past it a call
// is refused with a clear text until the clock refills it.
func TestRateLimit(t *testing.T) {
	clock := testkit.NewClock()
	k := newKit(t, func(c *Config) { c.CallsPerMinute, c.Burst, c.Clock = 1, 2, clock })
	one, two := k.session(t, "k1", "dev-1"), k.session(t, "k2", "dev-2")
	for i := range 2 {
		if _, isErr := callTool(t, one, "list_songs", nil); isErr {
			t.Fatalf("call %d within the burst refused", i)
		}
	}
	if got, isErr := callTool(t, one, "list_songs", nil); !isErr || got != RateLimited {
		t.Errorf("past the burst: %q (error %v), want %q", got, isErr, RateLimited)
	}
	if _, isErr := callTool(t, two, "list_songs", nil); isErr {
		t.Error("another token's budget was spent by the first")
	}
	clock.Advance(time.Minute)
	if _, isErr := callTool(t, one, "list_songs", nil); isErr {
		t.Error("refilled budget refused")
	}
	if got := k.count("list_songs", "rate_limited"); got != 1 {
		t.Errorf("rate_limited = %v, want 1", got)
	}
}

// TestRateLimitWaitsItsTurn: a call past the rate that would wait less
// than RateWait waits for its turn instead of failing, and is answered
// once the clock reaches it.
func TestRateLimitWaitsItsTurn(t *testing.T) {
	clock := testkit.NewClock()
	k := newKit(t, func(c *Config) { c.CallsPerMinute, c.Burst, c.RateWait, c.Clock = 60, 1, 5*time.Second, clock })
	one := k.session(t, "k1", "dev-1")
	if _, isErr := callTool(t, one, "list_songs", nil); isErr {
		t.Fatal("first call refused")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := one.CallTool(ctx, &mcp.CallToolParams{Name: "list_songs"})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("the second call never waited for its turn: %v", err)
	}
	clock.Advance(time.Second)
	if res := testkit.Recv(t, 30*time.Second, done, "the waiting call's answer"); res.IsError {
		t.Errorf("a call that waited its turn was refused: %v", res.Content)
	}
	if got := k.count("list_songs", "rate_limited"); got != 0 {
		t.Errorf("rate_limited = %v, want 0", got)
	}
}

// TestTokenFlood: a flood of mints keeps the table at its bound by
// revoking the oldest tokens; binding a token does not save it.
func TestTokenFlood(t *testing.T) {
	k := newKit(t, func(c *Config) { c.MaxTokens, c.MaxKeys = 8, 4 })
	h := k.srv.Handler()
	first := k.srv.Mint("k0")
	var last []string
	for i := range 1000 {
		tok := k.srv.Mint(fmt.Sprintf("flood-%d", i))
		k.srv.Bind(first, "still-here") // churn on the oldest does not reset its place
		last = append(last, tok)
	}
	if tokens, _ := k.srv.Sizes(); tokens != 8 {
		t.Errorf("token table holds %d, want 8", tokens)
	}
	auth := func(tok string) int {
		return post(t, h, "http://127.0.0.1/", map[string]string{"Authorization": "Bearer " + tok}, "127.0.0.1:1")
	}
	if got := auth(first); got != http.StatusUnauthorized {
		t.Errorf("oldest token after the flood: %d, want 401", got)
	}
	for _, tok := range last[len(last)-8:] {
		if got := auth(tok); got != http.StatusOK {
			t.Errorf("a newest token: %d, want 200", got)
		}
	}
	for i := range 1000 {
		k.srv.SetDevice(fmt.Sprintf("key-%d", i), "dev")
	}
	if _, keys := k.srv.Sizes(); keys != 4 {
		t.Errorf("device table holds %d, want 4", keys)
	}
	if a, b := k.srv.Mint("x"), k.srv.Mint("x"); a == b || len(a) != 43 {
		t.Errorf("tokens %q and %q: want distinct 32-byte base64url", a, b)
	}
}

// TestConfig: the defaults pass; each bound is a field error.
func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
	bad := Config{PhotoWait: time.Minute, RateWait: -time.Second}
	testkit.CheckFieldErrors(t, "Config", bad.Validate(), "MaxTokens 0: want at least 1", "MaxKeys 0: want at least 1",
		"MoodTTL 0s: want more than 0 and at most 10m0s", "CallsPerMinute 0: want at least 1", "Burst 0: want at least 1", "RateWait -1s: want between 0 and 1m0s",
		"PhotoWait 1m0s: want more than 0 and at most 30s")
	if _, err := New(bad); err == nil {
		t.Error("New accepted a bad config")
	}
}

// failing is a room and a calendar that cannot be read.
type failing struct{}

func (failing) People(context.Context, string) ([]Person, error) {
	return nil, errors.New("perception down")
}
func (failing) Today(context.Context) ([]string, error) { return nil, errors.New("calendar down") }

// TestDependencyDown: a robot that is not connected, a room or calendar
// that cannot be read each fail their tool with a readable error.
func TestDependencyDown(t *testing.T) {
	k := newKit(t, func(c *Config) { c.Room, c.Calendar = failing{}, failing{} })
	k.xiaozhi.Set("/xiaozhi/admin/set-head-angles", xiaozhitest.Reply{Status: http.StatusServiceUnavailable, Body: `{"error": "no device connected"}`})
	cs := k.session(t, "k1", "dev-1")
	for tool, want := range map[string]string{
		"look":        "The robot is not connected right now (look failed).",
		"who_is_here": "The robot cannot answer who_is_here right now.",
		"today":       "The robot cannot answer today right now.",
	} {
		var args map[string]any
		if tool == "look" {
			args = map[string]any{"yaw": 0, "pitch": 0}
		}
		if got, isErr := callTool(t, cs, tool, args); !isErr || got != want {
			t.Errorf("%s: %q (error %v), want %q", tool, got, isErr, want)
		}
		if got := k.count(tool, "error"); got != 1 {
			t.Errorf("%s errors = %v, want 1", tool, got)
		}
	}
}

// TestTokenEndsMidRequest: a token revoked after its request was
// authenticated refuses the call before the tool runs.
func TestTokenEndsMidRequest(t *testing.T) {
	k := newKit(t, nil)
	token := k.srv.Mint("k1")
	k.srv.Revoke(token)
	ran := false
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) { ran = true; return nil, nil }
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "look"},
		Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{tokenExtra: token}}}}
	res, err := k.srv.gate(next)(context.Background(), "tools/call", req)
	tr, _ := res.(*mcp.CallToolResult)
	if err != nil || ran || tr == nil || !tr.IsError || tr.Content[0].(*mcp.TextContent).Text != AccessEnded {
		t.Errorf("ended token: result %+v, error %v, tool ran %v; want %q", res, err, ran, AccessEnded)
	}
	if got := k.count("look", "refused"); got != 1 {
		t.Errorf("look refused = %v, want 1", got)
	}
}

// TestHeldFactNeverReturned: with the real voice memory (brain.db and its
// writer), a child's fact remembered through the tool is held for review
// and memory_lookup never returns it; an adult's fact is found.
func TestHeldFactNeverReturned(t *testing.T) {
	db := memstoretest.V1(t)
	store := memstore.New(memstore.Config{Path: db, WriteBusyTimeout: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = store.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	k := newKit(t, func(c *Config) {
		c.Voice = tier1.New(tier1.Config{Memory: store, People: adults{"brett"}})
	})
	cs := k.session(t, "k1", "dev-1")
	if got, _ := callTool(t, cs, "remember", map[string]any{"person": "Alex", "fact": "Alex's best friend is Sam"}); got != tier1.HeldForReview {
		t.Errorf("child's fact: %q, want %q", got, tier1.HeldForReview)
	}
	callTool(t, cs, "remember", map[string]any{"person": "Brett", "fact": "Brett takes his coffee black"})
	// One writer, in order: once the adult's fact is found, the child's is in brain.db too.
	testkit.WaitFor(t, 0, "the adult's fact in brain.db", func() bool {
		rows, err := store.Search(ctx, "coffee black", 1)
		return err == nil && len(rows) == 1
	})
	if got, _ := callTool(t, cs, "memory_lookup", map[string]any{"query": "coffee black"}); got != "Brett takes his coffee black" {
		t.Errorf("lookup of the adult's fact: %q", got)
	}
	if got, isErr := callTool(t, cs, "memory_lookup", map[string]any{"query": "best friend"}); isErr || got != tier1.NoMemories {
		t.Errorf("lookup of the held fact: %q (error %v), want %q", got, isErr, tier1.NoMemories)
	}
}
