package bridgeapp

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestBridgePerceptionEndToEnd runs the binary against a recording fake
// xiaozhi: events in over HTTP, state out, a consumer's robot call made,
// and the ingest timed in dotty_request_duration_seconds.
func TestBridgePerceptionEndToEnd(t *testing.T) {
	xz := xiaozhitest.New(t)
	p := startBridge(t, append(xiaozhiEnv(xz), "PURR_AUDIO_PATH=/srv/purr.opus")...)
	now := float64(time.Now().UnixNano()) / 1e9
	for _, body := range []string{
		`{"device_id":"dotty-e2e","ts":` + strconv.FormatFloat(now, 'f', -1, 64) + `,"name":"head_pet_started","data":{"firmware_ts_ms":1}}`,
		`{"device_id":"dotty-e2e","name":"face_recognized","data":{"identity":"alex"}}`,
		`{"device_id":"dotty-e2e","name":"state_changed","data":{"state":"story_time"}}`,
	} {
		if code, out := p.post("/api/perception/event", body); code != http.StatusNoContent || out != "" {
			t.Fatalf("event: %d %q", code, out)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the purr", func() bool { return len(xz.CallsTo("/xiaozhi/admin/play-asset")) == 1 })
	if c := xz.CallsTo("/xiaozhi/admin/play-asset")[0]; c.Body["asset"] != "/srv/purr.opus" || c.Body["device_id"] != "dotty-e2e" {
		t.Errorf("purr call %+v", c)
	}
	_, raw := p.get("/api/perception/state?device_id=dotty-e2e")
	var st map[string]map[string]any
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		t.Fatal(err)
	}
	if s := st["dotty-e2e"]; s["last_face_id"] != "alex" || s["current_state"] != "story_time" || s["sensor_stale"] != false {
		t.Errorf("state %s", raw)
	}
	if _, m := p.get("/metrics"); !strings.Contains(m, `dotty_request_duration_seconds_count{endpoint="perception_event"} 3`) {
		t.Error("perception events not in dotty_request_duration_seconds")
	}
}
