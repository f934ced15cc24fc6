package robottools

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
)

// TestStandingToken: ZeroClaw's standing token outlives a flood of minted
// tokens and the revocation of its key, acts on the robot of the latest
// turn of any conversation, and ends with Revoke or a newer standing token.
func TestStandingToken(t *testing.T) {
	k := newKit(t, func(c *Config) { c.MaxTokens, c.MaxKeys, c.Burst = 8, 4, 100 })
	standing := k.srv.MintStanding("zeroclaw")
	for i := range 1000 {
		k.srv.Mint(fmt.Sprintf("flood-%d", i))
	}
	k.srv.RevokeKey("zeroclaw")
	if tokens, _ := k.srv.Sizes(); tokens != 9 {
		t.Errorf("token table holds %d, want the 8 newest and the standing one", tokens)
	}
	cs := k.connect(t, standing)
	if got, isErr := callTool(t, cs, "look", map[string]any{"yaw": 10, "pitch": 0}); !isErr || got != NoRobot {
		t.Errorf("before any turn: %q (error %v), want %q", got, isErr, NoRobot)
	}
	k.srv.SetDevice("kitchen", "dev-1")
	k.srv.SetDevice("desk", "dev-2")
	callTool(t, cs, "look", map[string]any{"yaw": 20, "pitch": 0})
	k.srv.SetDevice("kitchen", "dev-1") // the kitchen spoke last
	callTool(t, cs, "look", map[string]any{"yaw": 30, "pitch": 0})
	want := []string{"set-head-angles dev-2 20 0 200", "set-head-angles dev-1 30 0 200"}
	if got := k.robotCalls(); !slices.Equal(got, want) {
		t.Errorf("robot calls %q, want %q", got, want)
	}

	auth := func(tok string) int {
		return post(t, k.srv.Handler(), "http://127.0.0.1/", map[string]string{"Authorization": "Bearer " + tok}, "127.0.0.1:1")
	}
	newer := k.srv.MintStanding("zeroclaw")
	if a, b := auth(standing), auth(newer); a != http.StatusUnauthorized || b != http.StatusOK {
		t.Errorf("after a second standing token: the first %d (want 401), the second %d (want 200)", a, b)
	}
	k.srv.Revoke(newer)
	if got := auth(newer); got != http.StatusUnauthorized {
		t.Errorf("revoked standing token: %d, want 401", got)
	}
	if tokens, _ := k.srv.Sizes(); tokens != 8 {
		t.Errorf("token table holds %d after the standing token's revocation, want 8", tokens)
	}
}
