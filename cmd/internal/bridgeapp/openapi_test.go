package bridgeapp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/openapi"
)

// assembled is the bridge's echo server as the binary builds it from the
// settings kv (name, value, … on top of isolatedEnv's, with no agent),
// unstarted: its Routes are the routes the binary registers.
func assembled(t *testing.T, kv ...string) *echo.Echo {
	t.Helper()
	cfg, err := parseConfig(nil, isolatedEnv(t, append([]string{"ZEROCLAW_BIN", "/nonexistent/zeroclaw"}, kv...)...))
	if err != nil {
		t.Fatal(err)
	}
	app, err := build(cfg, hclog.NewNullLogger(), lookups{})
	if err != nil {
		t.Fatal(err)
	}
	return app.srv.Echo()
}

// echoParam is a path parameter in echo's syntax: :name, or * for the
// rest of the path.
var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)|\*`)

// openAPIPath is an echo route path in OpenAPI's template syntax: :name
// becomes {name}, and the trailing * (the rest of the path, slashes
// included) becomes {path}.
func openAPIPath(p string) string {
	return echoParam.ReplaceAllStringFunc(p, func(m string) string {
		if m == "*" {
			return "{path}"
		}
		return "{" + m[1:] + "}"
	})
}

// openAPIParam is a path parameter in OpenAPI's syntax.
var openAPIParam = regexp.MustCompile(`\{[A-Za-z0-9_]+\}`)

// TestOpenAPIDocumentCoversEveryRoute builds the bridge as the binary does
// (with the firmware sidecar, whose routes exist only with STT_URL, and the
// dashboard's credentials set) and holds bridge/openapi/openapi.json to the
// routes its echo server registers: every registered method and path is
// documented, every documented one is registered, and each route's
// x-access is what the route does to a LAN caller without credentials:
// 401 exactly on the "dashboard" routes, the loopback refusal exactly on
// the "loopback" ones. The answers, and those of every read that neither
// streams nor long-polls asked with the credentials, are valid by the
// document: a documented status with a body of its schema.
func TestOpenAPIDocumentCoversEveryRoute(t *testing.T) {
	e := assembled(t, "STT_URL", "http://127.0.0.1:9/v1/audio/transcriptions", "SIDECAR_ALLOW_NO_TOKEN", "1",
		"DOTTY_DASHBOARD_USER", "parent", "DOTTY_DASHBOARD_PASS", "s3cret")

	registered := map[string]bool{}
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound { // a group's catch-all: answers 404
			continue
		}
		registered[r.Method+" "+openAPIPath(r.Path)] = true
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Access string `json:"x-access"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document(), &doc); err != nil {
		t.Fatal(err)
	}
	parsed, err := libopenapi.NewDocument(openapi.Document())
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(parsed)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// answers checks a route's answer against the document.
	answers := func(k string, req *http.Request, rec *httptest.ResponseRecorder) {
		t.Helper()
		if ok, verrs := v.ValidateHttpResponse(req, rec.Result()); !ok {
			for _, e := range verrs {
				t.Errorf("%s answered %d %.200s: not as documented: %s: %s", k, rec.Code, rec.Body, e.Message, e.Reason)
				for _, f := range e.SchemaValidationErrors {
					t.Errorf("  %s at %s", f.Reason, f.FieldPath)
				}
			}
		}
	}
	documented := map[string]string{} // "METHOD /path" → x-access
	for path, item := range doc.Paths {
		for method, op := range item {
			documented[strings.ToUpper(method)+" "+path] = op.Access
		}
	}
	for _, k := range sortedKeys(registered) {
		if _, ok := documented[k]; !ok {
			t.Errorf("%s is registered but not in bridge/openapi/openapi.json: add an entry for it", k)
		}
	}
	for _, k := range sortedKeys(documented) {
		if !registered[k] {
			t.Errorf("%s is in bridge/openapi/openapi.json but the bridge does not register it", k)
		}
	}
	t.Logf("%d routes registered, %d documented", len(registered), len(documented))

	// What each route does to a LAN caller without credentials. Reads
	// run with an ended context (a long-poll or a feed returns at once);
	// writes send a malformed JSON body, refused before any effect.
	for _, k := range sortedKeys(documented) {
		if !registered[k] {
			continue
		}
		access := documented[k]
		method, path, _ := strings.Cut(k, " ")
		path = openAPIParam.ReplaceAllString(path, "dotty-test")
		var req *http.Request
		if method == http.MethodGet {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			req = httptest.NewRequestWithContext(ctx, method, path, nil)
		} else {
			req = httptest.NewRequest(method, path, strings.NewReader("{"))
			req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		}
		req.RemoteAddr = "192.0.2.10:40000"
		req.Host = "localhost:8080"
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		askedCredentials := rec.Code == http.StatusUnauthorized && strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Basic")
		notLocal := rec.Code == http.StatusForbidden && strings.Contains(rec.Body.String(), "localhost-only")
		if askedCredentials != (access == "dashboard") {
			t.Errorf("%s (x-access %q): a LAN caller without credentials got %d %s", k, access, rec.Code, rec.Body)
		}
		if notLocal != (access == "loopback") {
			t.Errorf("%s (x-access %q): a LAN caller got %d %s", k, access, rec.Code, rec.Body)
		}
		if method != http.MethodGet || rec.Body.Len() > 0 { // an ended read may answer nothing
			answers(k, req, rec)
		}
	}

	// The reads with the credentials, but for the feeds and the vision
	// long-poll, which answer only when something happens.
	for _, k := range sortedKeys(documented) {
		method, path, _ := strings.Cut(k, " ")
		if !registered[k] || method != http.MethodGet || slices.Contains(waiting, path) {
			continue
		}
		req := httptest.NewRequest(method, openAPIParam.ReplaceAllString(path, "dotty-test"), nil)
		req.RemoteAddr = "192.0.2.10:40000"
		req.Host = "localhost:8080"
		req.SetBasicAuth("parent", "s3cret")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden {
			t.Errorf("%s with the credentials: %d %s", k, rec.Code, rec.Body)
		}
		answers(k, req, rec)
	}
}

// waiting are the documented reads that answer only when something
// happens: the two feeds and the vision long-poll.
var waiting = []string{"/api/perception/feed", "/ui/events", "/api/vision/latest/{device_id}"}

func TestOpenAPIPath(t *testing.T) {
	for in, want := range map[string]string{
		"/health":                       "/health",
		"/api/vision/latest/:device_id": "/api/vision/latest/{device_id}",
		"/ui/static/*":                  "/ui/static/{path}",
		"/a/:x/b/:y":                    "/a/{x}/b/{y}",
	} {
		if got := openAPIPath(in); got != want {
			t.Errorf("openAPIPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The binary serves the description without asking for the dashboard's
// credentials, set here: /openapi.json is the document byte for byte,
// /docs its page; the dashboard beside them asks for them.
func TestBinaryServesTheAPIDescription(t *testing.T) {
	p := startBridge(t, "DOTTY_DASHBOARD_USER=parent", "DOTTY_DASHBOARD_PASS=s3cret")
	if code, body := p.get("/openapi.json"); code != http.StatusOK || body != string(openapi.Document()) {
		t.Errorf("/openapi.json: %d, %d bytes, want 200 and the document's %d", code, len(body), len(openapi.Document()))
	}
	if code, body := p.get("/docs"); code != http.StatusOK || !strings.Contains(body, `<span class="path">/api/message/stream</span>`) {
		t.Errorf("/docs: %d %.300s", code, body)
	}
	if code, _ := p.get("/ui"); code != http.StatusUnauthorized {
		t.Errorf("/ui: %d, want 401 (the credentials are set)", code)
	}
}
