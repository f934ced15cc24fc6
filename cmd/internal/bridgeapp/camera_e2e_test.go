package bridgeapp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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

// TestBridgeSecurityWatchEndToEnd runs the binary with a recording fake
// xiaozhi that plays the robot: a device put in the security state is
// photographed at once (the fake uploads a JPEG to /api/vision/explain as
// the firmware does), the fake VLM describes it, and the cycle's record is
// in the day's security file, in /api/security/recent and on the
// perception feed. Leaving the state stops the photos.
func TestBridgeSecurityWatchEndToEnd(t *testing.T) {
	vlm := llmtest.New(t, "An empty hallway; the front door is closed.")
	xz := xiaozhitest.New(t)
	xz.Set("/xiaozhi/admin/capture-audio", xiaozhitest.Reply{Status: http.StatusNotFound, Body: "Not Found"})
	p := startBridge(t, append(append(xiaozhiEnv(xz), visionEnv(vlm)...),
		"DOTTY_LOCAL_TZ=Pacific/Auckland", "SECURITY_CAPTURE_INTERVAL_SEC=3600")...)
	xz.TakesPhotos("http://"+p.addr, []byte("\xff\xd8\xff\xe0e2e-jpeg"))

	// Follow the perception feed from before the state change.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/api/perception/feed", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := make(chan string, 64)
	go func() {
		defer close(frames)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				frames <- data
			}
		}
	}()

	if code, out := p.post("/api/perception/event", `{"device_id":"dotty-e2e","name":"state_changed","data":{"state":"security"}}`); code != http.StatusNoContent {
		t.Fatalf("event: %d %s", code, out)
	}
	var feed map[string]any
	for feed == nil {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatal("the feed ended before the security record")
			}
			var ev map[string]any
			if json.Unmarshal([]byte(f), &ev) == nil && ev["name"] == "security_capture" {
				feed = ev
			}
		case <-ctx.Done():
			t.Fatal("no security_capture on the feed")
		}
	}
	data, _ := feed["data"].(map[string]any)
	if feed["device_id"] != "dotty-e2e" || data["photo_desc"] != "An empty hallway; the front door is closed." {
		t.Errorf("feed event %v", feed)
	}

	nz, err := time.LoadLocation("Pacific/Auckland")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	testkit.WaitFor(t, 10*time.Second, "the security file", func() bool {
		for _, day := range []time.Time{time.Now().In(nz), time.Now().In(nz).Add(-time.Minute)} { // across midnight
			b, err := os.ReadFile(filepath.Join(p.stateDir, "logs", "security-"+day.Format("2006-01-02")+".ndjson"))
			if err == nil && len(b) > 0 {
				line = strings.TrimSpace(string(b))
				return true
			}
		}
		return false
	})
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil || strings.Count(line, "\n") != 0 {
		t.Fatalf("security file: %q (%v)", line, err)
	}
	ts, _ := rec["ts"].(string)
	when, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || rec["device"] != "dotty-e2e" || rec["photo_desc"] != "An empty hallway; the front door is closed." ||
		rec["audio_transcript"] != nil || fmt.Sprint(rec["errors"]) != "[audio_capture_pending]" {
		t.Errorf("record %s", line)
	}
	if _, off := when.Zone(); off != func() int { _, o := time.Now().In(nz).Zone(); return o }() {
		t.Errorf("timestamp %s is not in DOTTY_LOCAL_TZ", ts)
	}
	if code, body := p.get("/api/security/recent?device_id=dotty-e2e"); code != 200 || body != "["+line+"]" {
		t.Errorf("recent: %d %s, want [%s]", code, body, line)
	}
	if calls := xz.CallsTo("/xiaozhi/admin/take-photo"); len(calls) != 1 || calls[0].Body["question"] != "Describe everything visible in this image. Note any people, movements, or items of interest. Be concise." {
		t.Errorf("take-photo calls %+v", calls)
	}

	// The dashboard's photo card has the security photo too.
	if code, body := p.get("/ui/api/photos"); code != 200 || !strings.Contains(body, "dotty-e2e") {
		t.Errorf("photos: %d %s", code, body)
	}

	if code, _ := p.post("/api/perception/event", `{"device_id":"dotty-e2e","name":"state_changed","data":{"state":"idle"}}`); code != http.StatusNoContent {
		t.Fatal(code)
	}
	testkit.WaitFor(t, 5*time.Second, "the watch to stop", func() bool { return strings.Contains(p.log(), "security watch stopped") })
}
