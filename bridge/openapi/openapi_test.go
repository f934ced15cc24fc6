package openapi

import (
	"bytes"
	"encoding/json"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// The document is OpenAPI 3.1 by the specification's own schema (as
// libopenapi-validator embeds it), and every reference in it resolves.
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc, err := libopenapi.NewDocument(Document())
	if err != nil {
		t.Fatal(err)
	}
	if info := doc.GetSpecInfo(); info.Version != "3.1.0" || info.SpecFormat != "oas3_1" {
		t.Fatalf("version %q format %q, want 3.1.0 oas3_1", info.Version, info.SpecFormat)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build the model (references): %v", err)
	}
	if model.Index != nil {
		for _, r := range model.Index.GetReferenceIndexErrors() {
			t.Errorf("reference: %v", r)
		}
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ok, verrs := v.ValidateDocument()
	for _, e := range verrs {
		t.Errorf("%s: %s", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			t.Errorf("  %s at %s", f.Reason, f.KeywordLocation)
		}
	}
	if !ok {
		t.Error("the document is not valid OpenAPI 3.1")
	}
}

// access are the values of x-access, as the document's description
// explains them.
var access = []string{"open", "dashboard", "loopback", "firmware", "docs"}

// The conventions the description promises hold for every operation: a
// unique operationId, a first tag that is one of the document's, an
// x-access, the refusals of its access (401 and 403 for the dashboard,
// 403 for loopback routes and the docs, 403 for every write), and for a
// JSON body its 415 and 422.
func TestDocumentConventions(t *testing.T) {
	var d struct {
		Tags []struct {
			Name string `json:"name"`
		} `json:"tags"`
		Paths map[string]map[string]struct {
			OperationID string           `json:"operationId"`
			Tags        []string         `json:"tags"`
			Access      string           `json:"x-access"`
			Security    []map[string]any `json:"security"`
			RequestBody *struct {
				Content map[string]any `json:"content"`
			} `json:"requestBody"`
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(Document(), &d); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, tg := range d.Tags {
		tags = append(tags, tg.Name)
	}
	ids := map[string]string{}
	n := 0
	for path, item := range d.Paths {
		for method, op := range item {
			n++
			at := strings.ToUpper(method) + " " + path
			if !slices.Contains(methods, method) {
				t.Errorf("%s: %q is not an operation (keep parameters on the operations)", path, method)
				continue
			}
			if op.OperationID == "" || ids[op.OperationID] != "" {
				t.Errorf("%s: operationId %q empty or also %s", at, op.OperationID, ids[op.OperationID])
			}
			ids[op.OperationID] = at
			if len(op.Tags) == 0 || !slices.Contains(tags, op.Tags[0]) {
				t.Errorf("%s: first tag %v not among the document's tags %v", at, op.Tags, tags)
			}
			if !slices.Contains(access, op.Access) {
				t.Errorf("%s: x-access %q, want one of %v", at, op.Access, access)
			}
			has := func(codes ...string) {
				for _, c := range codes {
					if op.Responses[c] == nil {
						t.Errorf("%s (x-access %s): no %s response", at, op.Access, c)
					}
				}
			}
			hasScheme := slices.ContainsFunc(op.Security, func(s map[string]any) bool { return s["dashboard"] != nil })
			switch op.Access {
			case "dashboard":
				has("401", "403")
				if !hasScheme {
					t.Errorf("%s: a dashboard route without the dashboard security scheme", at)
				}
			case "loopback", "docs":
				has("403")
			}
			if op.Access != "dashboard" && hasScheme {
				t.Errorf("%s: the dashboard security scheme on a %s route", at, op.Access)
			}
			if method != "get" {
				has("403")
			}
			if op.RequestBody != nil && op.RequestBody.Content["application/json"] != nil {
				has("415")
				if !slices.Contains([]string{"dashboardDance", "dashboardRestart", "dashboardRebootAll"}, op.OperationID) { // read no body
					has("422", "413")
				}
			}
			if len(op.Responses) == 0 {
				t.Errorf("%s: no responses", at)
			}
		}
	}
	if n < 50 {
		t.Errorf("%d operations; the bridge has more than 50 routes", n)
	}
}

// serve runs the routes behind the real Host rule on a real server, for a
// machine named dotty-pi.
func serve(t *testing.T) string {
	t.Helper()
	access := httpapi.NewAccess(httpapi.AccessConfig{
		User: "parent", Pass: "s3cret", // set, and not asked for
		Hostname:       func() (string, error) { return "dotty-pi", nil },
		InterfaceAddrs: func() ([]net.Addr, error) { return nil, nil },
	})
	d := New(Config{Guard: access.OwnHost})
	e := echo.New()
	e.HTTPErrorHandler = httpapi.ErrorHandler(nil)
	d.Routes(e)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.URL
}

func get(t *testing.T, url, host string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	return testkit.Fetch(t, req)
}

// /openapi.json is the document byte for byte; /docs shows every
// operation and schema with no script and a policy that loads nothing;
// both answer without credentials, but only to a Host naming the machine.
func TestRoutes(t *testing.T) {
	url := serve(t)
	resp, b := get(t, url+"/openapi.json", "dotty-pi.local:8080")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(b, Document()) {
		t.Fatalf("/openapi.json: %d %q, %d bytes (want the document's %d)", resp.StatusCode, resp.Header.Get("Content-Type"), len(b), len(Document()))
	}

	resp, b = get(t, url+"/docs", "localhost:8080")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("/docs: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("/docs: Content-Security-Policy %q", csp)
	}
	page := html.UnescapeString(string(b))
	for _, bad := range []string{"<script", " src=", `href="http`, "@import", "url("} {
		if strings.Contains(strings.ToLower(string(b)), bad) {
			t.Errorf("/docs has %q: it must load nothing", bad)
		}
	}
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(Document(), &d); err != nil {
		t.Fatal(err)
	}
	for path, item := range d.Paths {
		for method := range item {
			row := strings.ToUpper(method) + "</span> <span class=\"path\">" + path + "</span>"
			if !strings.Contains(page, row) {
				t.Errorf("/docs does not show %s %s", strings.ToUpper(method), path)
			}
		}
	}
	for name := range d.Components.Schemas {
		if !strings.Contains(page, `id="schema-`+name+`"`) {
			t.Errorf("/docs does not show the schema %s", name)
		}
		if referenced(name) && !strings.Contains(page, `href="#schema-`+name+`"`) {
			t.Errorf("/docs has no link to the schema %s", name)
		}
	}
	if !strings.Contains(page, `<a href="#schema-VoiceRequest">#/components/schemas/VoiceRequest</a>`) {
		t.Error("/docs: references are not links")
	}

	for _, p := range []string{"/openapi.json", "/docs"} {
		resp, b := get(t, url+p, "evil.example:8080")
		if resp.StatusCode != 403 || !strings.Contains(string(b), "BRIDGE_PUBLIC_HOSTS") {
			t.Errorf("%s with a foreign Host: %d %s, want 403", p, resp.StatusCode, b)
		}
	}
}

// referenced reports whether a schema is named by a reference anywhere in
// the document (an unreferenced one has no link to it).
func referenced(name string) bool {
	return bytes.Contains(document, []byte(`"#/components/schemas/`+name+`"`))
}

// The page escapes the document's text.
func TestRenderEscapes(t *testing.T) {
	var d spec
	d.Info.Title = `<b>x</b>`
	d.Paths = map[string]map[string]operation{"/a": {"get": {Summary: `<script>alert(1)</script>`, Tags: []string{"t"}}}}
	b, err := render(d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "<script>") || strings.Contains(string(b), "<b>x</b>") {
		t.Errorf("the page does not escape the document's text:\n%s", b)
	}
}
