package bridgeapp

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// TestUnwritableStateOneLinePerCause runs the binary with every file it
// writes under a path that cannot be created (a regular file stands where
// their directory should be, so it fails for root too), and sends voice
// turns, memory writes, perception events that greet and a kid mode
// change, twice each. Each cause is logged once at Warn or Error with its
// error once, /health says "degraded" and names them; once the directory
// can be made /health says "ok" again within the re-check interval
// without any write (one Info line per condition), and every component
// writes again.
func TestUnwritableStateOneLinePerCause(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	under := func(p string) string { return filepath.Join(blocker, p) }
	p := startBridge(t, "LOG_LEVEL=info", "CONVO_LOG_DIR="+under("logs"), "VOICE_MEMORY_DB="+under("memory/brain.db"),
		"DOTTY_KID_MODE_STATE="+under("kid-mode"), "DOTTY_SMART_MODE_STATE="+under("smart-mode"),
		"GREETER_STATE_PATH="+under("greeter_state.json"), "DOTTY_TOOL_ALLOWLIST="+under("tool-allowlist"),
		"GREETER_GREET_ANYONE=1") // no roster: each name is greeted (and counted) on its own

	for i, device := range []string{"d1", "d2"} {
		if code, body := p.post("/api/message", `{"content":"hello","session_id":"s1"}`); code != http.StatusOK {
			t.Fatalf("voice turn: %d %s", code, body)
		}
		if code, body := p.post("/api/voice/remember", `{"fact":"the cat is called Pixel"}`); code != http.StatusServiceUnavailable ||
			body != `{"detail":"memory not writable: not a directory; write not accepted"}` {
			t.Errorf("remember: %d %s", code, body)
		}
		event := `{"device_id":"` + device + `","name":"face_recognized","data":{"identity":"` + []string{"alex", "sam"}[i] + `"}}`
		if code, body := p.post("/api/perception/event", event); code != http.StatusNoContent {
			t.Fatalf("event: %d %s", code, body)
		}
		if code, body := p.post("/admin/kid-mode", `{"enabled":true}`); code != http.StatusInternalServerError {
			t.Errorf("kid mode: %d %s", code, body)
		}
	}
	// The conversation log is written after the reply and greetings run in
	// the background: wait for both to have failed.
	wantProblems := []string{"greeter state: ", "kid mode state: ", "log directory " + under("logs") + ": ",
		"memory database: ", "memory journal: ", "robot tools token file: "}
	_, h := p.health("six problems", func(h map[string]any) bool {
		return len(problemsOf(h)) == len(wantProblems) && strings.Count(p.log(), "greeting not spoken") >= 2
	})
	got := problemsOf(h)
	if h["status"] != "degraded" || !slices.IsSorted(got) {
		t.Errorf("status %v, problems %q: want degraded, sorted", h["status"], got)
	}
	for i, want := range wantProblems {
		if i >= len(got) || !strings.HasPrefix(got[i], want) || strings.Count(got[i], "not a directory") != 1 {
			t.Errorf("problems %q, want one starting %q for each of the files", got, want)
			break
		}
	}

	// One Warn or Error line per cause, each with its error text once.
	// (Request lines are per request: a failed one carries the answer it
	// got, the refused memory write's without the cause's text.)
	causes := map[string]int{}
	errValue := regexp.MustCompile(`error="([^"]*)"`)
	message := regexp.MustCompile(`\[(?:WARN|ERROR)\] +(.+?): [a-z_]+=`)
	var lines []string
	for _, l := range strings.Split(p.log(), "\n") {
		if strings.Contains(l, " request: method=POST path=/api/voice/remember ") && strings.Contains(l, blocker) {
			t.Errorf("a refused memory write's request line repeats the cause: %s", l)
		}
		if !strings.Contains(l, blocker) || !(strings.Contains(l, "[WARN]") || strings.Contains(l, "[ERROR]")) ||
			strings.Contains(l, " request: ") {
			continue
		}
		lines = append(lines, l)
		if m := message.FindStringSubmatch(l); m != nil {
			causes[m[1]]++
		}
		if m := errValue.FindStringSubmatch(l); m == nil || strings.Count(l, "not a directory") != 1 || strings.Count(m[1], blocker) != 1 {
			t.Errorf("error text not said exactly once: %s", l)
		}
	}
	wantCauses := []string{
		"zeroclaw-bridge: tool allow list unreadable; using the default list",                    // read at start
		"zeroclaw-bridge.admin: cannot stat mode state file; using the default",                  // kid mode, read at start
		"zeroclaw-bridge.perception.proactive_greeter: greeter state unreadable; starting fresh", // read at start, then its saves
		"zeroclaw-bridge.perception.journal: cannot read back today's journal; the card starts without it",
		"zeroclaw-bridge.perception.journal: cannot create the log directory; the conversation log and the journals in it are not written until it can be",
		"zeroclaw-bridge.memory: voice memory database unavailable; memory writes wait for it",
		"zeroclaw-bridge.memory: voice memory journal not writable; memory writes are refused until it is",
		"zeroclaw-bridge.admin: cannot save the kid mode state",
		"zeroclaw-bridge.robottools: ZeroClaw gets no robot tools until their token file can be written",
	}
	for msg, n := range causes {
		t.Logf("%d line(s): %s", n, msg)
	}
	for _, want := range wantCauses {
		if causes[want] != 1 {
			t.Errorf("%d lines for %q, want 1", causes[want], want)
		}
	}
	if len(lines) != len(wantCauses) {
		t.Errorf("%d Warn/Error lines about the state directory, want %d:\n%s", len(lines), len(wantCauses), strings.Join(lines, "\n"))
	}
	for _, dup := range []string{"memory write refused", "request failed"} {
		if strings.Contains(p.log(), dup) {
			t.Errorf("a refused write logged again as %q:\n%s", dup, p.log())
		}
	}

	// Once the directory can be made, the conditions' re-checks clear
	// every problem within their interval, with no write at all: one Info
	// line each.
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	var body string
	testkit.WaitFor(t, health.RecheckInterval+10*time.Second, "/health ok without a write", func() bool {
		var code int
		code, body = p.get("/health")
		return code == http.StatusOK && strings.HasPrefix(body, `{"status":"ok",`)
	})
	t.Logf("/health ok %s after the blocker's removal (re-check interval %s)", time.Since(removed).Round(time.Millisecond), health.RecheckInterval)
	if strings.Contains(body, `"problems"`) {
		t.Errorf("/health after recovery: %s", body)
	}
	for _, want := range []string{"log directory " + under("logs"), "memory journal", "memory database", "kid mode state", "greeter state",
		"robot tools token file"} {
		// The bridge's stderr reaches p.log() behind /health's answers.
		line := " " + want + " recovered: its re-check passed: problem="
		testkit.Within(testkit.MinWait, func() bool { return strings.Contains(p.log(), line) })
		if n := strings.Count(p.log(), line); n != 1 {
			t.Errorf("%d re-check recovery lines for %q, want 1", n, want)
		}
	}

	// Each component writes again, with no recovery left to say.
	if code, body := p.post("/api/message", `{"content":"hello again","session_id":"s1"}`); code != http.StatusOK {
		t.Fatalf("voice turn: %d %s", code, body)
	}
	if code, body := p.post("/api/voice/remember", `{"fact":"the dog is called Byte"}`); code != http.StatusNoContent {
		t.Errorf("remember after the fix: %d %s", code, body)
	}
	if code, body := p.post("/admin/kid-mode", `{"enabled":true}`); code != http.StatusOK {
		t.Errorf("kid mode after the fix: %d %s", code, body)
	}
	if code, body := p.post("/api/perception/event", `{"device_id":"d3","name":"face_recognized","data":{"identity":"kim"}}`); code != http.StatusNoContent {
		t.Fatalf("event: %d %s", code, body)
	}
	testkit.WaitFor(t, 10*time.Second, "the memory written after the fix", func() bool {
		rows, err := memstoretest.TryRows(under("memory/brain.db"))
		return err == nil && len(rows) == 1 && rows[0].Content == "the dog is called Byte"
	})
	testkit.WaitFor(t, 10*time.Second, "the conversation log and the greeter state written", func() bool {
		logs, _ := filepath.Glob(filepath.Join(under("logs"), "convo-*.ndjson"))
		state, _ := os.ReadFile(under("greeter_state.json"))
		return len(logs) == 1 && strings.Contains(string(state), `"kim"`)
	})
	if _, h := p.health("still ok", func(map[string]any) bool { return true }); h["status"] != "ok" {
		t.Errorf("/health after the writes: %v", h)
	}
	for _, again := range []string{"written again", "writable again", "saved again"} {
		if strings.Contains(p.log(), again) {
			t.Errorf("a %q line after the re-checks cleared every condition:\n%s", again, p.log())
		}
	}
}

// problemsOf returns /health's problems as served.
func problemsOf(h map[string]any) []string {
	list, _ := h["problems"].([]any)
	out := make([]string, 0, len(list))
	for _, p := range list {
		s, _ := p.(string)
		out = append(out, s)
	}
	return out
}
