package bridgeapp

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// speechTools are the Debian programs of the real-speech test (.ci/run
// installs them): espeak-ng speaks, sox converts, pocketsphinx recognises.
var speechTools = []string{"espeak-ng", "sox", "pocketsphinx_continuous"}

// TestFirmwareRealSpeech: espeak-ng speaks a sentence, sox turns it into
// the firmware's raw 16 kHz PCM, the bridge sends it as WAV to an
// OpenAI-compatible adapter around pocketsphinx (an offline recogniser,
// held to a small grammar so the synthetic voice is recognised reliably),
// and the robot's reply quotes the recognised words.
func TestFirmwareRealSpeech(t *testing.T) {
	for _, tool := range speechTools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing in CI (.ci/run installs it): %v", tool, err)
			}
			t.Skipf("%s not installed", tool)
		}
	}
	dir := t.TempDir()
	wav, raw := filepath.Join(dir, "spoken.wav"), filepath.Join(dir, "spoken.raw")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	run("espeak-ng", "-v", "en-us", "-s", "130", "-w", wav, "what is a comet")
	run("sox", wav, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-L", "-t", "raw", raw)
	pcm, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	pcm = pcm[:len(pcm)/640*640] // whole 20 ms frames, as the firmware sends
	grammar := filepath.Join(dir, "robot.gram")
	os.WriteFile(grammar, []byte("#JSGF V1.0;\ngrammar robot;\npublic <cmd> = (what is a comet | tell me a story | hello robot | good morning | what time is it);\n"), 0o600)

	heard := make(chan string, 1)
	stt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		var audio []byte
		for {
			part, err := mr.NextPart()
			if err != nil {
				break
			}
			if part.FormName() == "file" {
				audio, _ = io.ReadAll(part)
			}
		}
		in := filepath.Join(dir, "received.wav")
		if err := os.WriteFile(in, audio, 0o600); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		out, err := exec.Command("pocketsphinx_continuous", "-infile", in, "-jsgf", grammar, "-logfn", "/dev/null").Output()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		text := strings.TrimSpace(string(out))
		heard <- text
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"text": text})
	}))
	defer stt.Close()

	// A persona gives the turn ZeroClawLLM's "[User] …" shape, which the
	// demo agent quotes back.
	os.WriteFile(filepath.Join(dir, "dotty.md"), []byte("You are Dotty, a small desk robot."), 0o600)
	p := startBridge(t, "STT_URL="+stt.URL+"/v1/audio/transcriptions", "SIDECAR_ALLOW_NO_TOKEN=1", "SIDECAR_DEADLINE=14",
		"STT_TIMEOUT=10", "SIDECAR_PERSONAS_DIR="+dir, "SIDECAR_DEFAULT_PERSONA=dotty")
	p.health("the demo agent ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/v1/listen", bytes.NewReader(pcm))
	req.Header.Set("Content-Type", "audio/L16;rate=16000;channels=1")
	req.Header.Set("X-Session-Id", "speech-test")
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var transcript string
	select {
	case transcript = <-heard:
	default:
		t.Fatalf("the recogniser was never asked; reply %d %s", resp.StatusCode, body)
	}
	if transcript != "what is a comet" {
		t.Errorf("pocketsphinx heard %q", transcript)
	}
	if resp.StatusCode != 200 || !strings.Contains(string(body), "what is a comet") {
		t.Errorf("robot shows %d %s", resp.StatusCode, body)
	}
	t.Logf("%d bytes of speech → %q → %s", len(pcm), transcript, body)
}
