package bridgeapp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// escalate calls a Tier1Slim tool and returns its result string.
func (p *bridgeProc) escalate(tool string, args any) string {
	p.t.Helper()
	b, _ := json.Marshal(map[string]any{"tool": tool, "args": args})
	code, body := p.post("/api/voice/escalate", string(b))
	var out struct{ Result *string }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || out.Result == nil {
		p.t.Fatalf("escalate %s: %d %s", tool, code, body)
	}
	return *out.Result
}

// TestBridgeTier1EndToEnd runs the binary against a fake OpenAI-compatible
// thinker and a fake xiaozhi admin API, with brain.db created by the
// bridge, and stops it while memory writes wait on a locked database.
func TestBridgeTier1EndToEnd(t *testing.T) {
	thinker := llmtest.New(t, " Jupiter is the largest. ")
	xz := xiaozhitest.New(t)
	xz.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 200, Body: `{"files":["Twinkle Twinkle.mp3","happy birthday.opus"]}`})

	const token = "tok-e2e-5ecret"
	p := startBridge(t, append(xiaozhiEnv(xz), "DOTTY_ADMIN_TOKEN="+token,
		"VOICE_THINKER_URL="+thinker.URL+"/v1/chat/completions", "VOICE_THINKER_MODEL=thinker-e2e",
		"VOICE_PLAY_SONG_ASSET_BASE=/srv/songs/")...)
	db := filepath.Join(p.stateDir, "memory", "brain.db")

	// The database did not exist: the bridge creates it with ZeroClaw's schema.
	testkit.WaitFor(t, 5*time.Second, "brain.db created", func() bool {
		_, err := memstoretest.TryRows(db)
		return err == nil
	})
	// The line follows the creation through the stderr pipe: wait for it.
	testkit.WaitFor(t, 5*time.Second, "the creation logged", func() bool {
		return strings.Contains(p.log(), "created the voice memory database")
	})
	if n := strings.Count(p.log(), "created the voice memory database"); n != 1 {
		t.Errorf("%d creation log lines, want 1", n)
	}

	if code, body := p.post("/api/voice/remember", `{"fact":"  Ada likes dinosaurs  ","session_id":"s1"}`); code != http.StatusNoContent || body != "" {
		t.Fatalf("remember: %d %q", code, body)
	}
	if code, _ := p.post("/api/voice/memory_log", `{"user":"what is big?","assistant":"Jupiter","session_id":null}`); code != http.StatusNoContent {
		t.Fatalf("memory_log: %d", code)
	}
	testkit.WaitFor(t, 5*time.Second, "two memories written", func() bool {
		rows, err := memstoretest.TryRows(db)
		return err == nil && len(rows) == 2
	})
	if got := p.escalate("memory_lookup", map[string]any{"query": "likes dinosaurs"}); got != "Ada likes dinosaurs" {
		t.Errorf("memory_lookup = %q", got)
	}
	if got := p.escalate("memory_lookup", map[string]any{"query": "volcanoes"}); got != "(no memories found)" {
		t.Errorf("memory_lookup miss = %q", got)
	}

	if got := p.escalate("think_hard", map[string]any{"question": "largest planet?"}); got != "Jupiter is the largest." {
		t.Errorf("think_hard = %q", got)
	}
	if reqs := thinker.Requests(); len(reqs) != 1 || reqs[0].Body["model"] != "thinker-e2e" ||
		fmt.Sprint(reqs[0].Body["chat_template_kwargs"]) != "map[enable_thinking:false]" {
		t.Errorf("thinker requests %v", reqs)
	}

	if got := p.escalate("play_song", map[string]any{"name": "twinkle"}); got != "playing Twinkle Twinkle" {
		t.Errorf("play_song = %q", got)
	}
	plays := xz.CallsTo("/xiaozhi/admin/play-asset")
	if len(plays) != 1 || plays[0].Body["asset"] != "/srv/songs/Twinkle Twinkle.mp3" || plays[0].Token != token {
		t.Errorf("play-asset calls %+v", plays)
	}
	if got := p.escalate("take_photo", map[string]any{}); got != "(I can't see anything fresh right now)" {
		t.Errorf("take_photo = %q", got)
	}
	if got := p.escalate("dance", map[string]any{}); got != "(unknown tool: dance)" {
		t.Errorf("unknown tool = %q", got)
	}
	if code, body := p.post("/api/voice/escalate", `{"args":{}}`); code != http.StatusUnprocessableEntity || !strings.Contains(body, `"missing"`) {
		t.Errorf("missing tool: %d %s", code, body)
	}

	// Writes accepted while ZeroClaw holds the database are written after it
	// lets go, even though SIGTERM arrives first.
	release := memstoretest.Lock(t, db)
	for i := range 20 {
		if code, _ := p.post("/api/voice/remember", fmt.Sprintf(`{"fact":"queued fact %d"}`, i)); code != http.StatusNoContent {
			t.Fatalf("remember %d under lock: %d", i, code)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "shutdown under way", func() bool {
		return strings.Contains(p.log(), "shutting down")
	})
	release()
	select {
	case err := <-p.exited:
		p.exited <- err
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("bridge did not exit within 20 s of SIGTERM")
	}
	// The queue was still full when the signal came: the drain wrote it.
	if !strings.Contains(p.log(), "writing queued voice memories before exit") {
		t.Error("no drain at shutdown: the writes were not queued when SIGTERM arrived")
	}
	rows := memstoretest.Rows(t, db)
	if len(rows) != 22 {
		t.Fatalf("%d memories after shutdown, want 22", len(rows))
	}
	for i, r := range rows[2:] {
		if r.Content != fmt.Sprintf("queued fact %d", i) || r.Category != "core" || r.Namespace != "voice" {
			t.Errorf("row %d = %+v", i+2, r)
		}
	}
	if strings.Contains(p.log(), token) {
		t.Error("the admin token appears in the log")
	}
}
