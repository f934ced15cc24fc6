package bridgeapp

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerabletest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestSteerableConversationSurvivesKill: the binary drives the fake
// steerable sidecar (this test binary, recording what it reads); its
// conversation survives a kill -9 of the sidecar between turns and in the
// middle of a turn: the next turn's agent.chat.stream carries the earlier
// exchanges (not the one that died), and /health and the metrics count
// the sessions recreated with their history.
func TestSteerableConversationSurvivesKill(t *testing.T) {
	record := filepath.Join(t.TempDir(), "frames")
	sidecar, _, env := steerabletest.Command("sidecar", "ZCB_STEERTEST_RECORD="+record)
	p := startBridge(t, append([]string{"AGENT_PROTOCOL=steerable", "STEERABLE_CMD=" + sidecar, "STEERABLE_MODEL=test-model"}, env...)...)
	_, h := p.health("the fake sidecar ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })
	if a := agentOf(h); a["dialect"] != "steerable" || a["agent_version"] != "0.1.0-test" {
		t.Fatalf("/health agent %v, want the fake sidecar", a)
	}
	turn := func(content string) string { t.Helper(); return realTurn(t, p, "kitchen", content) }
	pid := func() float64 {
		_, h := p.health("a sidecar", func(h map[string]any) bool { return agentOf(h)["pid"] != 0.0 })
		return agentOf(h)["pid"].(float64)
	}
	kill := func(pid float64) {
		t.Helper()
		if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		p.health("a new sidecar", func(h map[string]any) bool {
			return agentOf(h)["state"] == "ready" && agentOf(h)["pid"] != pid
		})
	}
	chats := func() []steerabletest.ChatParams {
		t.Helper()
		rs, err := steerabletest.Requests(record, "agent.chat.stream")
		if err != nil {
			t.Fatal(err)
		}
		var out []steerabletest.ChatParams
		for _, r := range rs {
			out = append(out, r.Chat())
		}
		return out
	}
	// carries checks that the last chat sent holds, in order, the user
	// texts of want with the sidecar's reply after each but the last.
	carries := func(what string, want ...string) {
		t.Helper()
		cs := chats()
		msgs := cs[len(cs)-1].Messages
		if len(msgs) != 2*len(want)-1 {
			t.Fatalf("%s: %d messages %+v, want %d", what, len(msgs), msgs, 2*len(want)-1)
		}
		for i, w := range want {
			u := msgs[2*i]
			if u.Role != "user" || !strings.Contains(u.Content, w) {
				t.Errorf("%s: message %d %+v, want the user's %q", what, 2*i, u, w)
			}
			if i < len(want)-1 {
				if a := msgs[2*i+1]; a.Role != "assistant" || a.Content != steerabletest.Echo(u.Content) {
					t.Errorf("%s: message %d %+v, want the reply to %q", what, 2*i+1, a, u.Content)
				}
			}
		}
	}

	if r := turn("my name is Ada"); !strings.Contains(r, "my name is Ada") {
		t.Fatalf("first turn answered %q", r)
	}
	kill(pid()) // between turns
	turn("what is my name?")
	carries("after a kill between turns", "my name is Ada", "what is my name?")

	// Mid-turn: the sidecar is killed once the turn's chat has reached it.
	old := pid()
	done := make(chan string, 1)
	go func() {
		resp, err := http.Post("http://"+p.addr+"/api/message", "application/json",
			strings.NewReader(`{"content":"tell me a slow story","session_id":"kitchen"}`))
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		var out struct {
			Response string `json:"response"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		done <- out.Response
	}()
	testkit.WaitFor(t, 10*time.Second, "the slow chat at the sidecar", func() bool {
		cs := chats()
		return len(cs) == 3 && strings.Contains(cs[2].Messages[len(cs[2].Messages)-1].Content, "slow story")
	})
	kill(old)
	select {
	case r := <-done:
		if strings.Contains(r, "tick") {
			t.Errorf("the killed turn answered %q", r)
		}
		t.Logf("the killed turn answered %q", r)
	case <-time.After(20 * time.Second):
		t.Fatal("the killed turn did not end")
	}
	turn("and my name again?")
	carries("after a kill mid-turn", "my name is Ada", "what is my name?", "and my name again?")

	p.restoredSessions("recreated", 2)
}
