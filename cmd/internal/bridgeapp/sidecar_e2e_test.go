package bridgeapp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestBridgeSidecarEndToEnd: the firmware's upload through the binary, a
// fake transcription server and the demo agent; two uploads from one
// device share its agent session, a second device gets its own.
func TestBridgeSidecarEndToEnd(t *testing.T) {
	var calls atomic.Int64
	stt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"text":"tell me about comets"}`)
	}))
	defer stt.Close()
	personas := t.TempDir()
	os.WriteFile(filepath.Join(personas, "dotty.md"), []byte("You are Dotty."), 0o600)
	p := startBridge(t, "STT_URL="+stt.URL+"/v1/audio/transcriptions", "SIDECAR_TOKEN=fw-token",
		"SIDECAR_PERSONAS_DIR="+personas, "SIDECAR_DEFAULT_PERSONA=dotty")
	p.health("the demo agent ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })
	pcm := bytes.Repeat([]byte{0, 1}, 16000) // 1 s
	upload := func(session string) (int, string, http.Header) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/v1/listen", bytes.NewReader(pcm))
		req.Header.Set("Content-Type", "audio/L16;rate=16000;channels=1")
		req.Header.Set("Authorization", "Bearer fw-token")
		req.Header.Set("X-Session-Id", session)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	code, body, h := upload("robot-1")
	if code != 200 || !strings.HasPrefix(body, `{"text":"You said: 'tell me about","emotion":"`) || !strings.Contains(body, `"emotion":"`) ||
		h.Get("Content-Length") != fmt.Sprint(len(body)) {
		t.Fatalf("%d %s %v", code, body, h)
	}
	upload("robot-1")
	p.health("one session", func(h map[string]any) bool { return h["sessions"] == 1.0 })
	upload("robot-2")
	p.health("two sessions", func(h map[string]any) bool { return h["sessions"] == 2.0 })
	if calls.Load() != 3 {
		t.Errorf("%d transcriptions, want 3", calls.Load())
	}
	if code, _ := p.get("/healthz"); code != 200 {
		t.Errorf("/healthz %d", code)
	}
	if strings.Contains(p.log(), "fw-token") {
		t.Error("the sidecar token appears in the log")
	}
}
