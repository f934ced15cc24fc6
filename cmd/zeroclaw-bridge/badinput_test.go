package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestBadInputMatrix sends every route malformed, mistyped, oversized and
// misrouted requests on the real binary: each gets a clear 4xx in the
// documented {"detail": …} shape, never a 500; the process survives and a
// memory stored before is still there afterwards.
func TestBadInputMatrix(t *testing.T) {
	p := startBridge(t)
	if code, _ := p.post("/api/voice/remember", `{"fact":"the matrix keeps this"}`); code != 204 {
		t.Fatalf("remember: %d", code)
	}
	huge := `{"content":"` + strings.Repeat("a", 1<<20) + `"}`
	routes := []string{"/api/message", "/api/message/stream", "/api/voice/escalate", "/api/voice/remember",
		"/api/voice/memory_log", "/api/perception/event", "/admin/kid-mode", "/admin/smart-mode", "/admin/state",
		"/admin/persona", "/admin/model", "/admin/safety"}
	bodies := []struct {
		name, body string
		statuses   []int
	}{
		{"empty body", ``, []int{422}},
		{"malformed JSON", `{"content": "x",`, []int{422}},
		{"not an object", `["a","b"]`, []int{422}},
		{"null", `null`, []int{422}},
		{"wrong types", `{"content":5,"fact":[],"user":{},"assistant":1,"tool":7,"name":false,"enabled":"maybe","state":3,"file":1,"daemon":2,"action":[],"tool_name":null}`, []int{422}},
		{"missing fields", `{}`, []int{422}},
		{"over the 1 MiB limit", huge, []int{413}},
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, route := range routes {
		for _, b := range bodies {
			req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+route, strings.NewReader(b.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", route, b.name, err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ok := false
			for _, s := range b.statuses {
				ok = ok || resp.StatusCode == s
			}
			var shape struct {
				Detail json.RawMessage `json:"detail"`
			}
			if !ok || json.Unmarshal(raw, &shape) != nil || len(shape.Detail) == 0 {
				t.Errorf("%s, %s: %d %.200s", route, b.name, resp.StatusCode, raw)
			}
		}
	}
	// Invalid UTF-8 is accepted like Python's decoder would (replaced), never a 500.
	for _, route := range []string{"/api/voice/remember", "/api/perception/event"} {
		body := "{\"fact\":\"bad \xff\xfe byte\",\"name\":\"x\xff\"}"
		resp, err := client.Post("http://"+p.addr+route, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Errorf("%s with invalid UTF-8: %d", route, resp.StatusCode)
		}
	}
	// Unknown routes and methods.
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/nope", 404}, {http.MethodPost, "/api/nope", 404}, {http.MethodGet, "/api/message", 405},
		{http.MethodDelete, "/health", 405}, {http.MethodPut, "/admin/kid-mode", 405},
	} {
		req, _ := http.NewRequest(tt.method, "http://"+p.addr+tt.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !bytes.Contains(raw, []byte(`"detail"`)) {
			t.Errorf("%s %s: %d %s", tt.method, tt.path, resp.StatusCode, raw)
		}
	}
	// Read routes with bad query parameters: a 422 in the documented shape.
	for _, path := range []string{"/api/calendar/today?include_household=maybe", "/api/security/recent?limit=-1",
		"/api/security/recent?device_id=%01", "/api/perception/scene?device_id=" + strings.Repeat("d", 200),
		"/api/perception/recent?limit=x"} {
		code, body := p.get(path)
		var shape struct {
			Detail []map[string]any `json:"detail"`
		}
		if code != 422 || json.Unmarshal([]byte(body), &shape) != nil || len(shape.Detail) != 1 || fmt.Sprint(shape.Detail[0]["loc"])[:6] != "[query" {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	// Multipart routes: no file, not multipart, oversized.
	for _, route := range []string{"/api/vision/explain", "/api/audio/explain"} {
		resp, err := client.Post("http://"+p.addr+route, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 422 {
			t.Errorf("%s not multipart: %d", route, resp.StatusCode)
		}
	}
	if code, body := p.get("/health"); code != 200 || !strings.Contains(body, `"status":"ok"`) {
		t.Fatalf("bridge unhealthy after the matrix: %d %s", code, body)
	}
	if strings.Contains(p.log(), "panic") {
		t.Error("a panic was logged")
	}
	db := filepath.Join(p.stateDir, "memory", "brain.db")
	testkit.WaitFor(t, 5*time.Second, "the memory written before the matrix", func() bool {
		rows, err := memstoretest.TryRows(db)
		return err == nil && len(rows) >= 1 && rows[0].Content == "the matrix keeps this"
	})
}

// TestSlowHeadersAreCut: a client that never finishes its headers is
// disconnected by the server's header timeout instead of holding a
// connection forever.
func TestSlowHeadersAreCut(t *testing.T) {
	t.Parallel()
	p := startBridge(t)
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /api/perception/event HTTP/1.1\r\nHost: x\r\nX-Slow: ")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = bufio.NewReader(conn).ReadByte() // the server answers 408 or closes
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server kept a half-sent request open for 20 s")
	}
	t.Logf("half-sent request cut after %v", time.Since(start).Round(100*time.Millisecond))
}
