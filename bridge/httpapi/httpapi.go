// Package httpapi holds the HTTP conventions every route of the bridge
// shares: one error type with FastAPI-shaped bodies, the echo error handler
// that writes them, JSON output with raw UTF-8, the pydantic-v2 style 422
// validation items, which callers parse, and Binder, the one way a route
// reads a JSON body or its query parameters.
//
// It is a leaf package: it imports no other package of this module, so every
// feature package (bridge, perception, tier1, admin) can use it without
// importing another feature.
//
// # Usage
//
// Handlers return errors instead of writing error bodies themselves:
//
//	b, err := httpapi.Bind(c.Request().Body, 0)
//	if err != nil {
//		return err // 400, 413, or 422 for a body that is not an object
//	}
//	state := b.String("state")
//	if err := b.Err(); err != nil {
//		return err // 422 {"detail":[…]}
//	}
//	if bad {
//		return httpapi.NewError(http.StatusBadRequest, "state must be one of ('idle')")
//	}
//
// and the server installs ErrorHandler as echo's HTTPErrorHandler.
package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
)

// APIError is an error with an HTTP status and a FastAPI "detail". Detail is
// a string for ordinary errors ({"detail":"…"}) and a []ValidationItem for
// 422s ({"detail":[…]}); any JSON-encodable value is written as is.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Detail is the value of the body's "detail" key.
	Detail any
	// Header holds response headers written with the error (a 503's
	// Retry-After); nil for none.
	Header http.Header
}

// Error implements error.
func (e *APIError) Error() string {
	if s, ok := e.Detail.(string); ok {
		return fmt.Sprintf("http %d: %s", e.Status, s)
	}
	b, err := json.Marshal(e.Detail)
	if err != nil {
		return fmt.Sprintf("http %d: %v", e.Status, e.Detail)
	}
	return fmt.Sprintf("http %d: %s", e.Status, b)
}

// NewError returns an APIError with a string detail.
func NewError(status int, detail string) *APIError {
	return &APIError{Status: status, Detail: detail}
}

// Content types written by this package.
const (
	// MIMEJSON is the content type of every JSON body (no charset, as FastAPI).
	MIMEJSON = "application/json"
	// MIMEText is the content type of the plain-text 500 body.
	MIMEText = "text/plain; charset=utf-8"
)

// internalServerError is FastAPI's body for an unhandled exception.
const internalServerError = "Internal Server Error"

// Marshal encodes v as compact JSON with raw UTF-8: emoji and <, >, & are
// written as themselves, not escaped. It has no trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// WriteJSON writes v with status as application/json, raw UTF-8.
func WriteJSON(c echo.Context, status int, v any) error {
	b, err := Marshal(v)
	if err != nil {
		return err
	}
	return c.Blob(status, MIMEJSON, b)
}

// SendJSON writes v like WriteJSON, with its Content-Length, and puts it
// on the wire now rather than when the handler returns, so work a handler
// does after answering (logging the turn) is not the caller's wait. An
// error means the caller has gone.
func SendJSON(c echo.Context, status int, v any) error {
	b, err := Marshal(v)
	if err != nil {
		return err
	}
	resp := c.Response()
	resp.Header().Set(echo.HeaderContentType, MIMEJSON)
	resp.Header().Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	resp.WriteHeader(status)
	if _, err := resp.Write(b); err != nil {
		return err
	}
	return http.NewResponseController(resp).Flush()
}

// ErrorHandler returns echo's HTTPErrorHandler for the bridge. It maps
//
//   - *APIError (also wrapped) to its status and {"detail": Detail};
//   - *echo.HTTPError to its code and {"detail": Message}, which gives
//     {"detail":"Not Found"} for unknown paths and {"detail":"Method Not
//     Allowed"} (with the Allow header echo's router sets) for a known path
//     with the wrong method;
//   - anything else, including recovered panics, to 500 with the plain text
//     body "Internal Server Error", logged at Error as unhandled.
//
// An APIError or echo.HTTPError is an answer (see IsAnswer) and is not
// logged here: the request's log line (the bridge server's) carries the
// error of a 5xx, and the handler has logged its cause. Nothing is written
// when the response was already committed (a streaming handler failing
// half way); HEAD requests get the status without a body.
func ErrorHandler(logger hclog.Logger) echo.HTTPErrorHandler {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return func(err error, c echo.Context) {
		req := c.Request()
		if c.Response().Committed {
			logger.Debug("error after the response was committed", "method", req.Method, "path", req.URL.Path, "error", err)
			return
		}
		status, detail, ok := classify(err)
		if !ok {
			logger.Error("unhandled error", "method", req.Method, "path", req.URL.Path, "error", err)
			writePlain500(c, logger)
			return
		}
		var ae *APIError
		if errors.As(err, &ae) {
			for k, v := range ae.Header {
				c.Response().Header()[k] = v
			}
		}
		if req.Method == http.MethodHead {
			if werr := c.NoContent(status); werr != nil {
				logger.Debug("writing error status failed", "error", werr)
			}
			return
		}
		if werr := WriteJSON(c, status, map[string]any{"detail": detail}); werr != nil {
			logger.Error("writing error body failed", "error", werr)
		}
	}
}

// IsAnswer reports whether err is an APIError or echo.HTTPError (also
// wrapped): an answer ErrorHandler writes as it is, without logging it.
func IsAnswer(err error) bool {
	_, _, ok := classify(err)
	return ok
}

// classify returns the status and detail of an APIError or echo.HTTPError
// anywhere in err's chain; ok is false for any other error.
func classify(err error) (status int, detail any, ok bool) {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status, ae.Detail, true
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		detail := he.Message
		switch m := detail.(type) {
		case nil:
			detail = http.StatusText(he.Code)
		case error:
			detail = m.Error()
		}
		return he.Code, detail, true
	}
	return 0, nil, false
}

func writePlain500(c echo.Context, logger hclog.Logger) {
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(http.StatusInternalServerError)
	} else {
		werr = c.Blob(http.StatusInternalServerError, MIMEText, []byte(internalServerError))
	}
	if werr != nil {
		logger.Debug("writing 500 failed", "error", werr)
	}
}

// ValidationItem is one entry of a 422 body, with pydantic v2's field order.
type ValidationItem struct {
	// Type is pydantic's error type, e.g. "missing" or "string_type".
	Type string `json:"type"`
	// Loc locates the problem: "body" (or "query" for a query parameter),
	// then a field name or, for malformed JSON, the character offset of the
	// error.
	Loc []any `json:"loc"`
	// Msg is pydantic's message.
	Msg string `json:"msg"`
	// Input is the offending value, or the whole body for a missing field.
	Input any `json:"input"`
	// Ctx carries extra context, e.g. the JSON decoder's message.
	Ctx map[string]any `json:"ctx,omitempty"`
}

// Validation returns the 422 APIError listing items, in the given order.
func Validation(items ...ValidationItem) *APIError {
	if items == nil {
		items = []ValidationItem{}
	}
	return &APIError{Status: http.StatusUnprocessableEntity, Detail: items}
}

// Missing is a required field absent from the body; body is the whole body.
func Missing(field string, body any) ValidationItem {
	return missingAt([]any{locBody, field}, body)
}

func missingAt(loc []any, input any) ValidationItem {
	return ValidationItem{Type: "missing", Loc: loc, Msg: "Field required", Input: input}
}

// BodyMissing is a request without a body (or with a JSON null body).
func BodyMissing() ValidationItem {
	return ValidationItem{Type: "missing", Loc: []any{"body"}, Msg: "Field required", Input: nil}
}

// NotObject is a body that is valid JSON but not an object; body is its value.
func NotObject(body any) ValidationItem {
	return ValidationItem{
		Type:  "model_attributes_type",
		Loc:   []any{"body"},
		Msg:   "Input should be a valid dictionary or object to extract fields from",
		Input: body,
	}
}

// StringType is a field whose value v should have been a string.
func StringType(field string, v any) ValidationItem {
	return stringTypeAt([]any{locBody, field}, v)
}

func stringTypeAt(loc []any, v any) ValidationItem {
	return ValidationItem{Type: "string_type", Loc: loc, Msg: "Input should be a valid string", Input: v}
}

// StringTooLong is a string field whose value v has more than max code
// points.
func StringTooLong(field string, v any, max int) ValidationItem {
	return stringTooLongAt([]any{locBody, field}, v, max)
}

func stringTooLongAt(loc []any, v any, max int) ValidationItem {
	return ValidationItem{
		Type:  "string_too_long",
		Loc:   loc,
		Msg:   fmt.Sprintf("String should have at most %d characters", max),
		Input: v,
		Ctx:   map[string]any{"max_length": max},
	}
}

// DictType is a field whose value v should have been an object.
func DictType(field string, v any) ValidationItem {
	return dictTypeAt([]any{locBody, field}, v)
}

func dictTypeAt(loc []any, v any) ValidationItem {
	return ValidationItem{Type: "dict_type", Loc: loc, Msg: "Input should be a valid dictionary", Input: v}
}

// JSONInvalid is a body that does not parse: offset is the character (code
// point) offset of the error and decoderMsg the decoder's message.
func JSONInvalid(offset int, decoderMsg string) ValidationItem {
	return ValidationItem{
		Type:  "json_invalid",
		Loc:   []any{"body", offset},
		Msg:   "JSON decode error",
		Input: map[string]any{},
		Ctx:   map[string]any{"error": decoderMsg},
	}
}

// DecodeObject parses a request body that must be a JSON object and returns
// its fields undecoded, or the 422 FastAPI gives for an empty body (or
// null), malformed JSON, or JSON that is not an object. Extra fields are
// kept; callers ignore those they do not know. Test the *APIError against
// nil before returning it as an error: a nil *APIError stored in an error
// interface is not a nil error.
func DecodeObject(body []byte) (map[string]json.RawMessage, *APIError) {
	// Nearly every body is a valid object: one pass into its fields. A
	// body that starts with '{' and decodes is an object; anything else is
	// decoded whole, which words its error as FastAPI did.
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) == nil {
			return obj, nil
		}
	}
	return decodeValueFirst(body)
}

// decodeValueFirst is DecodeObject for any body: the whole value decoded
// first (its error, or what it is when not an object), then the object's
// fields.
func decodeValueFirst(body []byte) (map[string]json.RawMessage, *APIError) {
	if len(body) == 0 {
		return nil, Validation(BodyMissing())
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, Validation(JSONInvalid(errorOffset(body, err), err.Error()))
	}
	switch v.(type) {
	case nil:
		return nil, Validation(BodyMissing())
	case map[string]any:
	default:
		return nil, Validation(NotObject(v))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		// Unreachable: the body just decoded as an object.
		return nil, Validation(JSONInvalid(0, err.Error()))
	}
	return obj, nil
}

// errorOffset converts a decoder error into the code-point offset at which
// Python's json module would report it: the offending character for an
// invalid one, the end of the input when it ends early.
func errorOffset(body []byte, err error) int {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return 0
	}
	pos := int(se.Offset)
	if !strings.HasPrefix(se.Error(), "unexpected end") && pos > 0 {
		pos-- // Offset counts the bytes read, including the bad one
	}
	pos = min(max(pos, 0), len(body))
	return utf8.RuneCount(body[:pos])
}

// StartEventStream answers 200 with the headers of a Server-Sent Events
// stream: its content type, no caching, and no buffering by a proxy in
// front (nginx's X-Accel-Buffering), so each frame reaches the client when
// it is flushed.
func StartEventStream(w http.ResponseWriter) {
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// ErrBusy is what a request body's Read returns when the server's upload
// budget (BRIDGE_UPLOAD_BUDGET) had no room for the body before the
// request's deadline: nothing of the body was read. Routes answer it with
// Busy, or with their own shape of a 503 and a Retry-After.
var ErrBusy = errors.New("too many uploads in flight")

// RetryAfter is the Retry-After, in seconds, of a 503 for ErrBusy.
const RetryAfter = "5"

// Busy is the 503 for ErrBusy: {"detail":"too many uploads in flight; try
// again later"} with a Retry-After.
func Busy() *APIError {
	return &APIError{Status: http.StatusServiceUnavailable, Detail: ErrBusy.Error() + "; try again later",
		Header: http.Header{"Retry-After": {RetryAfter}}}
}

// BodyError is the answer to an error reading a request body of at most
// limit bytes: Busy for ErrBusy, 413 "request body over <limit> bytes" for
// an *http.MaxBytesError, 400 for anything else.
func BodyError(err error, limit int64) *APIError {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, ErrBusy):
		return Busy()
	case errors.As(err, &mbe):
		return NewError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", limit))
	}
	return NewError(http.StatusBadRequest, "could not read the request body")
}

// ReadAllSized is io.ReadAll into one buffer of size bytes (io.ReadAll
// when size is not positive), grown only if r has more: a body of a
// declared length costs that length, not io.ReadAll's doublings. Bytes
// that end well short of size are copied to a buffer of their own length,
// so a caller keeping them keeps no unused rest. On an error it returns no
// bytes, and a large buffer (1 MiB or more) is kept for the next call (see
// largeBuffers).
func ReadAllSized(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	b := sizedBuffer(size + 1) // +1: the read that sees EOF needs room
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			if cap(b)-len(b) > len(b)/8+4096 {
				b = bytes.Clone(b)
			}
			return b, nil
		}
		if err != nil {
			if cap(b) >= pooledSize {
				largeBuffers.Put(&b)
			}
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// pooledSize is the smallest buffer largeBuffers keeps.
const pooledSize = 1 << 20

// largeBuffers keeps the buffers of large reads that failed (an upload cut
// at its body deadline) for the next large read. Under a flood of uploads
// held open, each admitted in turn and cut, every one would otherwise take
// fresh memory while the garbage collector has yet to free the last.
var largeBuffers sync.Pool // of *[]byte

// sizedBuffer returns an empty buffer of capacity n: a kept one when n is
// large and one fits (without being more than twice too big).
func sizedBuffer(n int64) []byte {
	if n >= pooledSize {
		if p, ok := largeBuffers.Get().(*[]byte); ok {
			if c := int64(cap(*p)); c >= n && c <= 2*n {
				return (*p)[:0]
			}
			largeBuffers.Put(p)
		}
	}
	return make([]byte, 0, n)
}

// MaxBody is the largest JSON request body the routes read (1 MiB).
const MaxBody = 1 << 20

// ReadObject reads a request body of at most MaxBody bytes and decodes it
// as a JSON object: 400 when the body cannot be read, 413 above the limit,
// 503 when the upload budget had no room for it (see BodyError), FastAPI's
// 422s otherwise (see DecodeObject). It also returns the raw
// bytes, for validation items that quote the whole body.
func ReadObject(r io.Reader) (map[string]json.RawMessage, []byte, error) {
	return ReadObjectLimit(r, MaxBody)
}

// ReadObjectLimit is ReadObject with a limit of its own (MaxBody when
// limit is not positive), for routes whose bodies are smaller or larger.
// At most limit+1 bytes are read, so an oversized body costs no more.
func ReadObjectLimit(r io.Reader, limit int64) (map[string]json.RawMessage, []byte, error) {
	if limit <= 0 {
		limit = MaxBody
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = &http.MaxBytesError{Limit: limit}
	}
	if err != nil {
		return nil, nil, BodyError(err, limit)
	}
	obj, apiErr := DecodeObject(b)
	if apiErr != nil {
		return nil, nil, apiErr
	}
	return obj, b, nil
}
