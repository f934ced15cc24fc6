package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
)

// newEcho returns an echo with the error handler, logging into logs, and
// one route, POST /thing, answered by h.
func newEcho(logs *bytes.Buffer, h echo.HandlerFunc) *echo.Echo {
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}))
	e.POST("/thing", h)
	return e
}

func TestErrorHandler(t *testing.T) {
	tests := []struct {
		name, method, path string
		err                error
		wantStatus         int
		wantBody           string
		wantType           string
		wantAllow          string
		wantErrorLog       bool
	}{
		{name: "api error string detail", method: "POST", path: "/thing",
			err:        NewError(http.StatusBadRequest, "state must be one of ('idle')"),
			wantStatus: 400, wantBody: `{"detail":"state must be one of ('idle')"}`, wantType: MIMEJSON},
		{name: "wrapped api error", method: "POST", path: "/thing",
			err:        fmt.Errorf("guard: %w", NewError(http.StatusForbidden, "admin endpoints are localhost-only")),
			wantStatus: 403, wantBody: `{"detail":"admin endpoints are localhost-only"}`, wantType: MIMEJSON},
		{name: "api error 503 keeps its status and body", method: "POST", path: "/thing",
			err:        NewError(http.StatusServiceUnavailable, "memory queue full"),
			wantStatus: 503, wantBody: `{"detail":"memory queue full"}`, wantType: MIMEJSON},
		{name: "api error with list detail", method: "POST", path: "/thing",
			err:        Validation(Missing("content", map[string]any{})),
			wantStatus: 422, wantBody: `{"detail":[{"type":"missing","loc":["body","content"],"msg":"Field required","input":{}}]}`, wantType: MIMEJSON},
		{name: "echo http error", method: "POST", path: "/thing",
			err:        echo.NewHTTPError(http.StatusRequestEntityTooLarge, "too big"),
			wantStatus: 413, wantBody: `{"detail":"too big"}`, wantType: MIMEJSON},
		{name: "echo http error with error message", method: "POST", path: "/thing",
			err:        echo.NewHTTPError(http.StatusBadRequest, errors.New("bad query")),
			wantStatus: 400, wantBody: `{"detail":"bad query"}`, wantType: MIMEJSON},
		{name: "echo http error without message", method: "POST", path: "/thing",
			err:        &echo.HTTPError{Code: http.StatusTeapot},
			wantStatus: 418, wantBody: `{"detail":"I'm a teapot"}`, wantType: MIMEJSON},
		{name: "plain error is a logged 500", method: "POST", path: "/thing",
			err:        errors.New("boom"),
			wantStatus: 500, wantBody: "Internal Server Error", wantType: MIMEText, wantErrorLog: true},
		{name: "unknown path", method: "GET", path: "/nope",
			wantStatus: 404, wantBody: `{"detail":"Not Found"}`, wantType: MIMEJSON},
		{name: "wrong method", method: "GET", path: "/thing",
			wantStatus: 405, wantBody: `{"detail":"Method Not Allowed"}`, wantType: MIMEJSON, wantAllow: "POST"},
		{name: "raw utf-8, no html escaping", method: "POST", path: "/thing",
			err:        NewError(http.StatusBadRequest, "<a> & 😊"),
			wantStatus: 400, wantBody: `{"detail":"<a> & 😊"}`, wantType: MIMEJSON},
		{name: "head gets no body", method: "HEAD", path: "/nope",
			wantStatus: 404, wantBody: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			e := newEcho(&logs, func(echo.Context) error { return tt.err })
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			got := fmt.Sprintf("%d %q %q", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"))
			want := fmt.Sprintf("%d %q %q", tt.wantStatus, tt.wantBody, tt.wantType)
			if tt.wantType == "" {
				want = fmt.Sprintf("%d %q %q", tt.wantStatus, tt.wantBody, rec.Header().Get("Content-Type"))
			}
			if got != want {
				t.Errorf("got %s, want %s", got, want)
			}
			if tt.wantAllow != "" && !strings.Contains(rec.Header().Get("Allow"), tt.wantAllow) {
				t.Errorf("Allow = %q, want it to list %s", rec.Header().Get("Allow"), tt.wantAllow)
			}
			if gotLog := strings.Contains(logs.String(), "[ERROR]"); gotLog != tt.wantErrorLog {
				t.Errorf("error logged = %v, want %v; logs:\n%s", gotLog, tt.wantErrorLog, logs.String())
			}
			// An answer is not logged here: the request line carries it.
			if tt.err != nil && IsAnswer(tt.err) == tt.wantErrorLog {
				t.Errorf("IsAnswer = %v, want %v", IsAnswer(tt.err), !tt.wantErrorLog)
			}
		})
	}
}

func TestErrorHandlerLeavesCommittedResponses(t *testing.T) {
	var logs bytes.Buffer
	e := newEcho(&logs, func(c echo.Context) error {
		if err := c.String(http.StatusOK, "partial"); err != nil {
			return err
		}
		return errors.New("late failure")
	})
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/thing", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "partial" {
		t.Errorf("got %d %q, want the handler's 200 %q untouched", rec.Code, rec.Body.String(), "partial")
	}
}

func TestAPIErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *APIError
		want string
	}{
		{"string detail", NewError(400, "bad"), "http 400: bad"},
		{"list detail", Validation(BodyMissing()), `http 422: [{"type":"missing","loc":["body"],"msg":"Field required","input":null}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestValidationItemsJSON pins every constructor to the exact bytes of
// FastAPI's shape, including the key order type, loc, msg, input, ctx.
func TestValidationItemsJSON(t *testing.T) {
	tests := []struct {
		name string
		err  *APIError
		want string
	}{
		{"missing field", Validation(Missing("content", map[string]any{"channel": "dotty"})),
			`{"detail":[{"type":"missing","loc":["body","content"],"msg":"Field required","input":{"channel":"dotty"}}]}`},
		{"body missing", Validation(BodyMissing()),
			`{"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]}`},
		{"not an object", Validation(NotObject([]any{1})),
			`{"detail":[{"type":"model_attributes_type","loc":["body"],"msg":"Input should be a valid dictionary or object to extract fields from","input":[1]}]}`},
		{"string expected", Validation(StringType("content", 5)),
			`{"detail":[{"type":"string_type","loc":["body","content"],"msg":"Input should be a valid string","input":5}]}`},
		{"object expected", Validation(DictType("metadata", nil)),
			`{"detail":[{"type":"dict_type","loc":["body","metadata"],"msg":"Input should be a valid dictionary","input":null}]}`},
		{"string too long", Validation(StringTooLong("session_id", "abcd", 3)),
			`{"detail":[{"type":"string_too_long","loc":["body","session_id"],"msg":"String should have at most 3 characters","input":"abcd","ctx":{"max_length":3}}]}`},
		{"malformed json", Validation(JSONInvalid(5, "unexpected end of JSON input")),
			`{"detail":[{"type":"json_invalid","loc":["body",5],"msg":"JSON decode error","input":{},"ctx":{"error":"unexpected end of JSON input"}}]}`},
		{"several items keep their order", Validation(StringType("content", 1), DictType("metadata", "x")),
			`{"detail":[{"type":"string_type","loc":["body","content"],"msg":"Input should be a valid string","input":1},` +
				`{"type":"dict_type","loc":["body","metadata"],"msg":"Input should be a valid dictionary","input":"x"}]}`},
		{"no items is an empty list", Validation(), `{"detail":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err.Status != http.StatusUnprocessableEntity {
				t.Errorf("status %d, want 422", tt.err.Status)
			}
			b, err := Marshal(map[string]any{"detail": tt.err.Detail})
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b, tt.want)
			}
		})
	}
}

func TestDecodeObject(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []ValidationItem // nil: the body decodes
		keys []string
	}{
		{name: "object", body: `{"content":"hi","extra":[1]}`, keys: []string{"content", "extra"}},
		{name: "empty object", body: `{}`, keys: []string{}},
		{name: "object with surrounding space", body: " {\"a\":1}\n", keys: []string{"a"}},
		{name: "absent body", body: "", want: []ValidationItem{BodyMissing()}},
		{name: "null body", body: "null", want: []ValidationItem{BodyMissing()}},
		{name: "whitespace only", body: "  ", want: []ValidationItem{JSONInvalid(2, "unexpected end of JSON input")}},
		{name: "array", body: `[1]`, want: []ValidationItem{NotObject([]any{1.0})}},
		{name: "string", body: `"x"`, want: []ValidationItem{NotObject("x")}},
		{name: "number", body: `4`, want: []ValidationItem{NotObject(4.0)}},
		{name: "truncated", body: `{"a":`, want: []ValidationItem{JSONInvalid(5, "unexpected end of JSON input")}},
		{name: "bad character", body: `{"a" x}`, want: []ValidationItem{JSONInvalid(5, "invalid character 'x' after object key")}},
		{name: "offset counts code points", body: `{"😀":x}`, want: []ValidationItem{JSONInvalid(5, "invalid character 'x' looking for beginning of value")}},
		{name: "trailing data", body: `{"a":1} x`, want: []ValidationItem{JSONInvalid(8, "invalid character 'x' after top-level value")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, apiErr := DecodeObject([]byte(tt.body))
			if tt.want == nil {
				if apiErr != nil {
					t.Fatalf("DecodeObject: %v", apiErr)
				}
				got := []string{}
				for k := range obj {
					got = append(got, k)
				}
				if d := cmp.Diff(got, tt.keys, cmpSorted); d != "" {
					t.Errorf("keys (-got +want):\n%s", d)
				}
				return
			}
			if apiErr == nil {
				t.Fatalf("DecodeObject = %v, want a 422", obj)
			}
			if apiErr.Status != http.StatusUnprocessableEntity {
				t.Errorf("status %d, want 422", apiErr.Status)
			}
			got, ok := apiErr.Detail.([]ValidationItem)
			if !ok {
				t.Fatalf("detail is %T, want []ValidationItem", apiErr.Detail)
			}
			if d := cmp.Diff(got, tt.want); d != "" {
				t.Errorf("items (-got +want):\n%s", d)
			}
		})
	}
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

func TestWriteJSON(t *testing.T) {
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
	if err := WriteJSON(c, http.StatusCreated, map[string]string{"reply": "😊 <hi> & bye"}); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 201 || rec.Header().Get("Content-Type") != MIMEJSON || rec.Body.String() != `{"reply":"😊 <hi> & bye"}` {
		t.Errorf("got %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	if err := WriteJSON(c, 200, func() {}); err == nil {
		t.Error("unencodable value accepted")
	}
	var ue *json.UnsupportedTypeError
	if _, err := Marshal(make(chan int)); !errors.As(err, &ue) {
		t.Errorf("Marshal(chan) error %v, want a wrapped UnsupportedTypeError", err)
	}
}

// ReadObjectLimit answers 413 in the FastAPI shape one byte past its limit,
// decodes a body of exactly the limit, and falls back to MaxBody.
func TestReadObjectLimit(t *testing.T) {
	obj := `{"a":"` + strings.Repeat("x", 92) + `"}` // 100 bytes
	if _, b, err := ReadObjectLimit(strings.NewReader(obj), 100); err != nil || len(b) != 100 {
		t.Fatalf("body at the limit: %v (%d bytes)", err, len(b))
	}
	_, _, err := ReadObjectLimit(strings.NewReader(obj+" "), 100)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusRequestEntityTooLarge || ae.Detail != "request body over 100 bytes" {
		t.Errorf("body past the limit: %v", err)
	}
	_, _, err = ReadObjectLimit(strings.NewReader(strings.Repeat(" ", MaxBody)+"{}"), 0)
	if !errors.As(err, &ae) || ae.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("zero limit does not fall back to MaxBody: %v", err)
	}
	_, _, err = ReadObjectLimit(iotest.ErrReader(errors.New("reset")), 100)
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Errorf("read error: %v", err)
	}
}

// ReadAllSized reads exactly what the reader has, whatever the size hint
// says, and keeps no large unused rest; an error returns no bytes.
func TestReadAllSized(t *testing.T) {
	body := bytes.Repeat([]byte("ab"), 3<<20) // 6 MiB: a pooled size
	for _, tc := range []struct {
		name string
		n    int
		size int64
	}{
		{"exact", len(body), int64(len(body))},
		{"shorter than declared", 1000, int64(len(body))},
		{"longer than declared", len(body), 100},
		{"no size", len(body), 0},
		{"empty", 0, 4096},
	} {
		got, err := ReadAllSized(bytes.NewReader(body[:tc.n]), tc.size)
		if err != nil || !bytes.Equal(got, body[:tc.n]) {
			t.Errorf("%s: %d bytes, %v; want %d", tc.name, len(got), err, tc.n)
		}
		if cap(got)-len(got) > len(got)/8+4096 {
			t.Errorf("%s: %d bytes kept in a buffer of %d", tc.name, len(got), cap(got))
		}
	}
	// A read that fails gives its buffer to the next; the next reads its
	// own bytes all the same.
	for range 3 {
		got, err := ReadAllSized(io.MultiReader(bytes.NewReader(body[:1<<20]), iotest.ErrReader(errors.New("cut"))), int64(len(body)))
		if err == nil || got != nil {
			t.Errorf("failed read: %d bytes, %v", len(got), err)
		}
		other := bytes.Repeat([]byte("z"), len(body)-10)
		if got, err := ReadAllSized(bytes.NewReader(other), int64(len(body))); err != nil || !bytes.Equal(got, other) {
			t.Errorf("read after a failed one: %d bytes, %v", len(got), err)
		}
	}
}

// BodyError answers a busy budget with 503 and Retry-After (written by the
// error handler), a body past its limit with 413, anything else with 400.
func TestBodyError(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		retry  string
		body   string
	}{
		{fmt.Errorf("waited: %w", ErrBusy), 503, "5", `{"detail":"too many uploads in flight; try again later"}`},
		{&http.MaxBytesError{Limit: 10}, 413, "", `{"detail":"request body over 64 bytes"}`},
		{errors.New("reset"), 400, "", `{"detail":"could not read the request body"}`},
	} {
		var logs bytes.Buffer
		e := newEcho(&logs, func(echo.Context) error { return BodyError(tc.err, 64) })
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/thing", nil))
		if rec.Code != tc.status || rec.Header().Get("Retry-After") != tc.retry || strings.TrimSpace(rec.Body.String()) != tc.body {
			t.Errorf("%v: %d, Retry-After %q, %s", tc.err, rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
		}
	}
}
