package bridgeapp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/openapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
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
	routes := postRoutes(t)
	if !slices.ContainsFunc(routes.json, func(r matrixRoute) bool { return r.path == "/api/message" }) || len(routes.multipart) == 0 {
		t.Fatalf("the routes found are not the bridge's: %+v", routes)
	}
	bodies := []struct {
		name, body string
		statuses   []int
		// needsFields: only a route with a required field refuses it.
		needsFields bool
	}{
		{"empty body", ``, []int{422}, false},
		{"malformed JSON", `{"content": "x",`, []int{422}, false},
		{"not an object", `["a","b"]`, []int{422}, false},
		{"null", `null`, []int{422}, false},
		{"wrong types", `{"content":5,"fact":[],"user":{},"assistant":1,"tool":7,"name":false,"enabled":"maybe","state":3,"file":1,"daemon":2,"action":[],"tool_name":null,` +
			`"person_id":{},"id":4,"emoji":5,"filename":6,"text":[],"device_id":8,"model":9}`, []int{422}, false},
		{"missing fields", `{}`, []int{422}, true},
		{"over the 1 MiB limit", huge, []int{413}, false},
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, route := range routes.json {
		for _, b := range bodies {
			if b.needsFields && !route.hasRequired {
				continue
			}
			req, _ := http.NewRequest(route.method, "http://"+p.addr+route.path, strings.NewReader(b.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", route.path, b.name, err)
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
				t.Errorf("%s, %s: %d %.200s", route.path, b.name, resp.StatusCode, raw)
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
	for _, route := range routes.multipart {
		resp, err := client.Post("http://"+p.addr+route, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 422 {
			t.Errorf("%s not multipart: %d", route, resp.StatusCode)
		}
	}
	// What a web page can send, to every write route registered: a
	// cross-site request gets 403 and a body declared as a form or text
	// 415 (the upload routes read their own types), before any handler.
	uploads := map[string]bool{}
	for _, path := range routes.multipart {
		uploads[path] = true
	}
	for _, route := range routes.all() {
		for _, attack := range []struct {
			name, origin, ctype string
			status              int
		}{
			{"a page on another site", "http://evil.example", "application/json", 403},
			{"a form", "", "application/x-www-form-urlencoded", 415},
			{"text", "", "text/plain", 415},
		} {
			if attack.status == 415 && uploads[route.path] {
				continue
			}
			req, _ := http.NewRequest(route.method, "http://"+p.addr+route.path, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", attack.ctype)
			if attack.origin != "" {
				req.Header.Set("Origin", attack.origin)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s, %s: %v", route.method, route.path, attack.name, err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != attack.status || !bytes.Contains(raw, []byte(`"detail"`)) {
				t.Errorf("%s %s, %s: %d %.200s, want %d", route.method, route.path, attack.name, resp.StatusCode, raw, attack.status)
			}
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

// matrixRoute is a registered route the bad-input matrix sends JSON.
type matrixRoute struct {
	method, path string
	// hasRequired: its body names a required field, so {} is refused.
	hasRequired bool
}

// matrixRoutes are the routes the bad-input matrix covers.
type matrixRoutes struct {
	json      []matrixRoute // a required JSON object body
	multipart []string      // a multipart form
	other     []matrixRoute // an optional body, or one of another type
}

// all is every write route, each once.
func (r matrixRoutes) all() []matrixRoute {
	out := append(slices.Clone(r.json), r.other...)
	for _, path := range r.multipart {
		out = append(out, matrixRoute{method: http.MethodPost, path: path})
	}
	return out
}

// postRoutes sorts every write route the binary registers (assembled as
// startBridge runs it) by the body bridge/openapi/openapi.json documents
// for it, which TestOpenAPIDocumentCoversEveryRoute holds to the same
// routes: a required JSON body gets the JSON matrix, a multipart one the
// multipart checks. A route the document lacks gets the JSON matrix. The
// routes left out are those whose body is optional (each acts on any
// body: a restart, a dance) or neither JSON nor multipart.
func postRoutes(t *testing.T) matrixRoutes {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody *struct {
				Required bool                       `json:"required"`
				Content  map[string]json.RawMessage `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document(), &doc); err != nil {
		t.Fatal(err)
	}
	// required lists a media type's schema's required fields, through $refs.
	required := func(media json.RawMessage) []string {
		var m struct{ Schema json.RawMessage }
		_ = json.Unmarshal(media, &m)
		s := m.Schema
		for {
			var schema struct {
				Ref      string   `json:"$ref"`
				Required []string `json:"required"`
			}
			if err := json.Unmarshal(s, &schema); err != nil {
				t.Fatal(err)
			}
			if schema.Ref == "" {
				return schema.Required
			}
			s = doc.Components.Schemas[strings.TrimPrefix(schema.Ref, "#/components/schemas/")]
		}
	}
	var out matrixRoutes
	var skipped []string
	for _, r := range assembled(t).Routes() {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == echo.RouteNotFound {
			continue
		}
		path := openAPIParam.ReplaceAllString(openAPIPath(r.Path), "dotty-test")
		op, documented := doc.Paths[openAPIPath(r.Path)][strings.ToLower(r.Method)]
		switch body := op.RequestBody; {
		case !documented || body == nil:
			out.json = append(out.json, matrixRoute{r.Method, path, true})
		case body.Content["multipart/form-data"] != nil:
			out.multipart = append(out.multipart, path)
		case body.Content["application/json"] != nil && body.Required:
			out.json = append(out.json, matrixRoute{r.Method, path, len(required(body.Content["application/json"])) > 0})
		default:
			skipped = append(skipped, r.Method+" "+r.Path)
			out.other = append(out.other, matrixRoute{r.Method, path, false})
		}
	}
	slices.SortFunc(out.json, func(a, b matrixRoute) int { return strings.Compare(a.path, b.path) })
	slices.Sort(out.multipart)
	slices.SortFunc(out.other, func(a, b matrixRoute) int { return strings.Compare(a.path, b.path) })
	slices.Sort(skipped)
	t.Logf("bad-input matrix: %d JSON routes, %d multipart; not sent bad bodies (optional or other body): %s",
		len(out.json), len(out.multipart), strings.Join(skipped, ", "))
	return out
}
