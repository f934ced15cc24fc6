package bridgeapp

import (
	"strings"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
)

// TestBridgeVisionEndToEnd: xiaozhi long-polls, the firmware uploads a
// photo, the fake VLM describes it, the poll wakes, and Tier1Slim's
// take_photo reads the same description.
func TestBridgeVisionEndToEnd(t *testing.T) {
	vlm := llmtest.New(t, "A child holding a red kite.")
	p := startBridge(t, visionEnv(vlm)...)

	got := p.pollWhile("dotty-aa:bb:cc:dd:ee:ff", func() {
		if code, out := p.explain("dotty-aa:bb:cc:dd:ee:ff", "What do you see?", []byte("\xff\xd8\xff\xe0jpeg")); code != 200 || out != `{"description":"A child holding a red kite."}` {
			t.Fatalf("explain: %d %s", code, out)
		}
	})
	if got != `200 {"description":"A child holding a red kite.","room_match_person_id":null}` {
		t.Errorf("long-poll: %s", got)
	}
	for _, r := range vlm.Requests() {
		if r.Auth != "Bearer sk-or-test" {
			t.Errorf("the vision model was called with Authorization %q", r.Auth)
		}
	}
	if code, out := p.post("/api/voice/escalate", `{"tool":"take_photo","args":{}}`); code != 200 || out != `{"result":"A child holding a red kite."}` {
		t.Errorf("take_photo: %d %s", code, out)
	}
	if strings.Contains(p.log(), "sk-or-test") {
		t.Error("the API key appears in the log")
	}
}
