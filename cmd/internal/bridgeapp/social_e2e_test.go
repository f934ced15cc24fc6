package bridgeapp

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestBridgeKnowsYouEndToEnd runs the binary with the demo agent, a
// recording fake xiaozhi and a fake narrative model: a recognised
// household member is greeted (the agent writes it in its own session,
// xiaozhi says it, the conversation log records it, the journal card shows
// it and a second sighting is within the cooldown), a finished dance gets
// its private reflection, and a fact about a child waits for review while
// a fact about an adult is remembered.
func TestBridgeKnowsYouEndToEnd(t *testing.T) {
	model := llmtest.New(t, "My wheels still hum with the beat; I spun too fast and loved it.")
	xz := xiaozhitest.New(t)
	p := startBridge(t, append(xiaozhiEnv(xz), visionEnv(model)...)...)
	writeHousehold(t, p)

	if code, out := p.post("/api/perception/event", `{"device_id":"dotty-e2e","name":"face_recognized","data":{"identity":"alex"}}`); code != http.StatusNoContent {
		t.Fatalf("event: %d %s", code, out)
	}
	// Two says: the named acknowledger's "Oh, it's Alex!" at once, then the
	// greeting the agent wrote (bridge.py ran both).
	greetings := func() []xiaozhitest.Call {
		var out []xiaozhitest.Call
		for _, c := range xz.CallsTo("/xiaozhi/admin/say") {
			if c.Body["text"] != "Oh, it's Alex!" {
				out = append(out, c)
			}
		}
		return out
	}
	testkit.WaitFor(t, 20*time.Second, "the greeting said", func() bool { return len(greetings()) > 0 })
	say := greetings()[0]
	text, _ := say.Body["text"].(string)
	if say.Body["device_id"] != "dotty-e2e" || strings.TrimSpace(text) == "" {
		t.Fatalf("say %+v", say.Body)
	}

	// The conversation log has the greeting, as bridge.py logged it.
	var rec map[string]any
	testkit.WaitFor(t, 5*time.Second, "the greeter's convo record", func() bool {
		matches, _ := filepath.Glob(filepath.Join(p.stateDir, "logs", "convo-*.ndjson"))
		for _, m := range matches {
			b, _ := os.ReadFile(m)
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if json.Unmarshal([]byte(line), &rec) == nil && rec["channel"] == "greeter" {
					return true
				}
			}
		}
		return false
	})
	if _, err := os.Stat(filepath.Join(p.stateDir, "greeter_state.json")); err != nil {
		t.Errorf("greeter state not kept: %v", err)
	}
	if rec["session_id"] != "" || rec["request_text"] != "face:alex" || rec["response_text"] != text || rec["error"] != nil {
		t.Errorf("convo record %v", rec)
	}
	// A second sighting at once is within the cooldown: no second greeting.
	if code, _ := p.post("/api/perception/event", `{"device_id":"dotty-e2e","name":"face_recognized","data":{"identity":"alex"}}`); code != http.StatusNoContent {
		t.Fatal(code)
	}

	// A dance's reflection, written by the narrative model.
	if code, _ := p.post("/api/perception/event", `{"device_id":"dotty-e2e","name":"dance_ended","data":{"dance":"robot"}}`); code != http.StatusNoContent {
		t.Fatal(code)
	}
	var journal struct {
		Date      string           `json:"date"`
		Dances    []map[string]any `json:"dances"`
		Greetings []map[string]any `json:"greetings"`
	}
	testkit.WaitFor(t, 10*time.Second, "the journal card", func() bool {
		code, body := p.get("/api/journal/today")
		return code == 200 && json.Unmarshal([]byte(body), &journal) == nil && len(journal.Dances) == 1 && len(journal.Greetings) == 1
	})
	if journal.Dances[0]["reflection"] != "My wheels still hum with the beat; I spun too fast and loved it." || journal.Dances[0]["dance"] != "robot" ||
		journal.Greetings[0]["identity"] != "alex" || journal.Greetings[0]["text"] != text {
		t.Errorf("journal %+v", journal)
	}
	// The card is served from memory; the file is written behind it.
	testkit.WaitFor(t, 10*time.Second, "the dance in the dances file", func() bool {
		b, err := os.ReadFile(filepath.Join(p.stateDir, "logs", "dances-"+journal.Date+".ndjson"))
		return err == nil && strings.Contains(string(b), `"type":"dance","device":"dotty-e2e","dance":"robot"`)
	})
	if n := len(greetings()); n != 1 {
		t.Errorf("%d greetings said, want 1 (cooldown)", n)
	}

	// Per-person memory: an adult's fact is remembered, a child's waits.
	if code, out := p.post("/api/voice/remember_person", `{"person_id":"Alex","fact":"takes his coffee black"}`); code != 200 || out != `{"ok":true,"pending_review":false}` {
		t.Errorf("adult fact: %d %s", code, out)
	}
	if got := p.escalate("remember_person", map[string]any{"name": "Hudson", "fact": "is scared of thunder"}); got != "(saved — a grown-up will check that)" {
		t.Errorf("child fact: %q", got)
	}
	// The dashboard's review card lists the held fact; approving it makes
	// it part of what the robot knows about Hudson.
	records := p.heldFacts(2)
	held := records[0]
	if held["person_id"] != "hudson" || held["content"] != "is scared of thunder" || held["pending"] != true || records[1]["pending"] != false {
		t.Fatalf("review card %v", records)
	}
	if code, out := p.request(http.MethodPost, "/ui/api/memory/approve", `{"id":"`+held["id"].(string)+`"}`,
		"Content-Type", "application/json", "Origin", "http://"+p.addr); code != 200 {
		t.Fatalf("approve: %d %s", code, out)
	}
	if _, body := p.get("/ui/api/memory"); !strings.Contains(body, `"content":"is scared of thunder","pending":false`) {
		t.Errorf("after approval: %s", body)
	}
	if strings.Contains(p.log(), "scared of thunder") || strings.Contains(p.log(), "sk-or-test") {
		t.Error("a child's fact or the key reached the log")
	}
}
