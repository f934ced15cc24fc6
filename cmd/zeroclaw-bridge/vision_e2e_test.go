package main

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBridgeVisionEndToEnd: xiaozhi long-polls, the firmware uploads a
// photo, the fake VLM describes it, the poll wakes, and Tier1Slim's
// take_photo reads the same description.
func TestBridgeVisionEndToEnd(t *testing.T) {
	vlm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-or-test" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"v","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"A child holding a red kite."}}]}`)
	}))
	defer vlm.Close()
	p := startBridge(t, "VISION_API_URL="+vlm.URL+"/v1/chat/completions", "OPENROUTER_API_KEY=sk-or-test")

	polled := make(chan string, 1)
	go func() {
		resp, err := httpClient.Get("http://" + p.addr + "/api/vision/latest/dotty-aa:bb:cc:dd:ee:ff")
		if err != nil {
			polled <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		polled <- fmt.Sprint(resp.StatusCode, " ", strings.TrimSpace(string(b)))
	}()
	// Upload until the poll answers: an upload that lands before the poll
	// registers is discarded as stale, as it is for xiaozhi.
	upload := func() {
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		part, _ := w.CreateFormFile("file", "photo.jpg")
		part.Write([]byte("\xff\xd8\xff\xe0jpeg"))
		w.WriteField("question", "What do you see?")
		w.Close()
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/api/vision/explain", &body)
		req.Header.Set("Content-Type", w.FormDataContentType())
		req.Header.Set("device-id", "dotty-aa:bb:cc:dd:ee:ff")
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"description":"A child holding a red kite."}` {
			t.Fatalf("explain: %d %s", resp.StatusCode, b)
		}
	}
	deadline := time.After(12 * time.Second)
	for answered := false; !answered; {
		upload()
		select {
		case got := <-polled:
			answered = true
			if got != `200 {"description":"A child holding a red kite.","room_match_person_id":null}` {
				t.Errorf("long-poll: %s", got)
			}
		case <-time.After(300 * time.Millisecond):
		case <-deadline:
			t.Fatal("long-poll did not answer")
		}
	}
	if code, out := p.post("/api/voice/escalate", `{"tool":"take_photo","args":{}}`); code != 200 || out != `{"result":"A child holding a red kite."}` {
		t.Errorf("take_photo: %d %s", code, out)
	}
	if strings.Contains(p.log(), "sk-or-test") {
		t.Error("the API key appears in the log")
	}
}
