// Package openapi serves the bridge's OpenAPI 3.1 description of its HTTP
// routes at GET /openapi.json and a page rendered from it at GET /docs.
//
// The description is openapi.json beside this file, kept by hand with one
// entry per route; cmd/internal/bridgeapp's TestOpenAPIDocumentCoversEveryRoute
// checks it against the routes the built bridge registers, both ways. The
// page is rendered on the server from the same document, at its first
// request (an idle bridge holds only the embedded bytes): no script and
// nothing fetched from elsewhere, so it works on a LAN without the
// internet.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
)

//go:embed openapi.json
var document []byte

//go:embed docs.html.tmpl
var pageText string

// Document returns the OpenAPI document as served.
func Document() []byte { return slices.Clone(document) }

// Config configures the routes.
type Config struct {
	// Guard wraps both routes; cmd passes httpapi.Access.OwnHost (the Host
	// must name this machine). Nil: none.
	Guard echo.MiddlewareFunc
}

// Docs serves the document and its page.
type Docs struct {
	guard echo.MiddlewareFunc
	page  func() ([]byte, error) // rendered once, at the first request
}

// New returns the routes for cfg.
func New(cfg Config) *Docs {
	return &Docs{guard: cfg.Guard, page: sync.OnceValues(renderDocument)}
}

// Routes mounts GET /openapi.json and GET /docs.
func (d *Docs) Routes(e *echo.Echo) {
	var mw []echo.MiddlewareFunc
	if d.guard != nil {
		mw = append(mw, d.guard)
	}
	e.GET("/openapi.json", d.document, mw...)
	e.GET("/docs", d.docs, mw...)
}

func (d *Docs) document(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, document)
}

// pageCSP allows the page's own inline style and nothing else: no script,
// no frame, no form, nothing loaded from anywhere.
const pageCSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (d *Docs) docs(c echo.Context) error {
	page, err := d.page()
	if err != nil {
		return err // a build defect the package's tests catch: the plain 500, logged
	}
	h := c.Response().Header()
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set(echo.HeaderContentSecurityPolicy, pageCSP)
	h.Set(echo.HeaderXContentTypeOptions, "nosniff")
	return c.HTMLBlob(http.StatusOK, page)
}

// spec is the part of the document the page shows.
type spec struct {
	Info struct {
		Title       string `json:"title"`
		Version     string `json:"version"`
		Summary     string `json:"summary"`
		Description string `json:"description"`
	} `json:"info"`
	Tags []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tags"`
	Paths      map[string]map[string]operation `json:"paths"`
	Components struct {
		Parameters map[string]parameter       `json:"parameters"`
		Responses  map[string]response        `json:"responses"`
		Schemas    map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	Tags        []string    `json:"tags"`
	OperationID string      `json:"operationId"`
	Summary     string      `json:"summary"`
	Description string      `json:"description"`
	Access      string      `json:"x-access"`
	OnlyWhen    string      `json:"x-only-when"`
	Parameters  []parameter `json:"parameters"`
	RequestBody *struct {
		Required bool                       `json:"required"`
		Content  map[string]json.RawMessage `json:"content"`
	} `json:"requestBody"`
	Responses map[string]response `json:"responses"`
}

type parameter struct {
	Ref         string          `json:"$ref"`
	Name        string          `json:"name"`
	In          string          `json:"in"`
	Required    bool            `json:"required"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

type response struct {
	Ref         string                     `json:"$ref"`
	Description string                     `json:"description"`
	Content     map[string]json.RawMessage `json:"content"`
}

// The page's view of the document.
type (
	pageView struct {
		Title, Version, Summary string
		Description             []string // paragraphs and list items, as lines
		Groups                  []groupView
		Schemas                 []schemaView
	}
	groupView struct {
		Tag, Description string
		Ops              []opView
	}
	opView struct {
		Method, Path, ID, Summary, Description, Access, OnlyWhen string
		Params                                                   []paramView
		Body                                                     []mediaView
		BodyRequired                                             bool
		Responses                                                []responseView
	}
	paramView struct {
		Name, In, Description string
		Required              bool
		Schema                template.HTML
	}
	mediaView struct {
		Type   string
		Schema template.HTML
	}
	responseView struct {
		Code, Description string
		Media             []mediaView
	}
	schemaView struct {
		Name   string
		Schema template.HTML
	}
)

// methods are the operations of a path item, in the page's order.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// renderDocument parses the embedded document and renders its page.
func renderDocument() ([]byte, error) {
	var d spec
	if err := json.Unmarshal(document, &d); err != nil {
		return nil, fmt.Errorf("parse openapi.json: %w", err)
	}
	page, err := render(d)
	if err != nil {
		return nil, fmt.Errorf("render the API page: %w", err)
	}
	return page, nil
}

// render builds the page from the document.
func render(d spec) ([]byte, error) {
	v := pageView{Title: d.Info.Title, Version: d.Info.Version, Summary: d.Info.Summary,
		Description: strings.Split(d.Info.Description, "\n")}
	byTag := map[string]*groupView{}
	for _, t := range d.Tags {
		v.Groups = append(v.Groups, groupView{Tag: t.Name, Description: t.Description})
	}
	for i := range v.Groups {
		byTag[v.Groups[i].Tag] = &v.Groups[i]
	}
	paths := make([]string, 0, len(d.Paths))
	for p := range d.Paths {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		for _, m := range methods {
			op, ok := d.Paths[p][m]
			if !ok {
				continue
			}
			tag := "other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			g := byTag[tag]
			if g == nil {
				v.Groups = append(v.Groups, groupView{Tag: tag})
				byTag = reindex(v.Groups)
				g = byTag[tag]
			}
			g.Ops = append(g.Ops, opViewOf(d, strings.ToUpper(m), p, op))
		}
	}
	names := make([]string, 0, len(d.Components.Schemas))
	for n := range d.Components.Schemas {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v.Schemas = append(v.Schemas, schemaView{Name: n, Schema: schemaHTML(d.Components.Schemas[n])})
	}
	t, err := template.New("docs").Parse(pageText)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// reindex maps each group's tag to it, after groups grew.
func reindex(groups []groupView) map[string]*groupView {
	m := make(map[string]*groupView, len(groups))
	for i := range groups {
		m[groups[i].Tag] = &groups[i]
	}
	return m
}

// opViewOf is one operation as the page shows it, references resolved.
func opViewOf(d spec, method, path string, op operation) opView {
	o := opView{Method: method, Path: path, ID: op.OperationID, Summary: op.Summary,
		Description: op.Description, Access: op.Access, OnlyWhen: op.OnlyWhen}
	for _, p := range op.Parameters {
		if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
			p = d.Components.Parameters[name]
		}
		o.Params = append(o.Params, paramView{Name: p.Name, In: p.In, Description: p.Description,
			Required: p.Required, Schema: schemaHTML(p.Schema)})
	}
	if rb := op.RequestBody; rb != nil {
		o.BodyRequired = rb.Required
		o.Body = mediaViews(rb.Content)
	}
	for _, code := range slices.Sorted(maps.Keys(op.Responses)) {
		r := op.Responses[code]
		if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
			r = d.Components.Responses[name]
		}
		o.Responses = append(o.Responses, responseView{Code: code, Description: r.Description, Media: mediaViews(r.Content)})
	}
	return o
}

// mediaViews are a content map's media types with their schemas.
func mediaViews(content map[string]json.RawMessage) []mediaView {
	var out []mediaView
	for _, mt := range slices.Sorted(maps.Keys(content)) {
		var media struct {
			Schema json.RawMessage `json:"schema"`
		}
		_ = json.Unmarshal(content[mt], &media) // parsed once already, as part of the document
		out = append(out, mediaView{Type: mt, Schema: schemaHTML(media.Schema)})
	}
	return out
}

// schemaRef is a reference to a named schema in escaped JSON text.
var schemaRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`&#34;#/components/schemas/([A-Za-z0-9_]+)&#34;`) })

// schemaHTML is a schema as indented JSON, escaped, with references to
// named schemas made links to them on the page.
func schemaHTML(raw json.RawMessage) template.HTML {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		b.Reset()
		b.Write(raw)
	}
	esc := template.HTMLEscapeString(b.String())
	// The name matched is letters, digits and _ only: safe in an href and as text.
	return template.HTML(schemaRef().ReplaceAllString(esc, // #nosec G203 -- esc is escaped; the only markup added is the link, around a name of [A-Za-z0-9_]
		`&#34;<a href="#schema-$1">#/components/schemas/$1</a>&#34;`))
}
