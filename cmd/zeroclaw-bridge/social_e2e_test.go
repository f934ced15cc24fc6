package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
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
	var narrations atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		narrations.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"n","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"My wheels still hum with the beat; I spun too fast and loved it."}}]}`)
	}))
	defer model.Close()
	xz := xiaozhitest.New(t)
	host, port := xz.HostPort()
	p := startBridge(t, "XIAOZHI_HOST="+host, "XIAOZHI_OTA_PORT="+strconv.Itoa(port),
		"VISION_API_URL="+model.URL+"/v1/chat/completions", "OPENROUTER_API_KEY=sk-or-test")
	household := "people:\n  alex:\n    display_name: Alex\n    relation: dad\n  hudson:\n    display_name: Hudson\n    age: 7\n"
	if err := os.WriteFile(filepath.Join(p.stateDir, "household.yaml"), []byte(household), 0o600); err != nil {
		t.Fatal(err)
	}

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
	var review struct {
		Records []map[string]any `json:"records"`
	}
	testkit.WaitFor(t, 10*time.Second, "the held fact on the review card", func() bool {
		code, body := p.get("/ui/api/memory")
		return code == 200 && json.Unmarshal([]byte(body), &review) == nil && len(review.Records) == 2
	})
	held := review.Records[0]
	if held["person_id"] != "hudson" || held["content"] != "is scared of thunder" || held["pending"] != true || review.Records[1]["pending"] != false {
		t.Fatalf("review card %v", review.Records)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/ui/api/memory/approve", strings.NewReader(`{"id":"`+held["id"].(string)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://"+p.addr)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	if _, body := p.get("/ui/api/memory"); !strings.Contains(body, `"content":"is scared of thunder","pending":false`) {
		t.Errorf("after approval: %s", body)
	}
	if strings.Contains(p.log(), "scared of thunder") || strings.Contains(p.log(), "sk-or-test") {
		t.Error("a child's fact or the key reached the log")
	}
}
