package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
)

func serve(t *testing.T, method, path string, h echo.HandlerFunc) *httptest.ResponseRecorder {
	t.Helper()
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(hclog.NewNullLogger())
	e.POST("/thing", h)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestErrorHandler(t *testing.T) {
	tests := []struct {
		name, method, path string
		err                error
		status             int
		body, ctype        string
	}{
		{"api error", "POST", "/thing", NewError(400, "state must be one of ('idle')"), 400, `{"detail":"state must be one of ('idle')"}`, "application/json"},
		{"wrapped api error", "POST", "/thing", errors.Join(errors.New("x"), NewError(403, "admin endpoints are localhost-only")), 403, `{"detail":"admin endpoints are localhost-only"}`, "application/json"},
		{"echo http error", "POST", "/thing", echo.NewHTTPError(413, "too big"), 413, `{"detail":"too big"}`, "application/json"},
		{"validation", "POST", "/thing", Validation(Missing("content", map[string]any{})), 422,
			`{"detail":[{"type":"missing","loc":["body","content"],"msg":"Field required","input":{}}]}`, "application/json"},
		{"plain error is a 500", "POST", "/thing", errors.New("boom"), 500, "Internal Server Error", "text/plain; charset=utf-8"},
		{"unknown path", "GET", "/nope", nil, 404, `{"detail":"Not Found"}`, "application/json"},
		{"wrong method", "GET", "/thing", nil, 405, `{"detail":"Method Not Allowed"}`, "application/json"},
		{"no html escaping", "POST", "/thing", NewError(400, "<a> & 😊"), 400, `{"detail":"<a> & 😊"}`, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, tt.method, tt.path, func(echo.Context) error { return tt.err })
			if rec.Code != tt.status || rec.Body.String() != tt.body || rec.Header().Get("Content-Type") != tt.ctype {
				t.Errorf("got %d %q (%s), want %d %q (%s)", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"), tt.status, tt.body, tt.ctype)
			}
			if tt.status == 405 && !strings.Contains(rec.Header().Get("Allow"), "POST") {
				t.Errorf("Allow header %q", rec.Header().Get("Allow"))
			}
		})
	}
}

func TestErrorHandlerLeavesCommittedResponses(t *testing.T) {
	rec := serve(t, "POST", "/thing", func(c echo.Context) error {
		_ = c.String(http.StatusOK, "partial")
		return errors.New("late failure")
	})
	if rec.Code != 200 || rec.Body.String() != "partial" {
		t.Errorf("got %d %q", rec.Code, rec.Body.String())
	}
}

func TestDecodeObject(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []ValidationItem
	}{
		{"object", `{"content":"hi"}`, nil},
		{"absent", "  ", []ValidationItem{BodyMissing()}},
		{"array", `[1]`, []ValidationItem{NotObject([]any{1.0})}},
		{"null", `null`, []ValidationItem{NotObject(nil)}},
		{"string", `"x"`, []ValidationItem{NotObject("x")}},
		{"malformed", `{"a":`, []ValidationItem{JSONInvalid(5, "unexpected end of JSON input")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := DecodeObject([]byte(tt.body))
			if tt.want == nil {
				if err != nil || obj == nil {
					t.Fatalf("DecodeObject = %v, %v", obj, err)
				}
				return
			}
			if err == nil || err.Status != 422 {
				t.Fatalf("err = %v, want 422", err)
			}
			got := err.Detail.([]ValidationItem)
			if d := cmp.Diff(got, tt.want); d != "" {
				t.Errorf("items (-got +want):\n%s", d)
			}
		})
	}
}
