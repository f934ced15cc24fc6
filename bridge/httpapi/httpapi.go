// Package httpapi holds the HTTP conventions every route of the bridge
// shares: FastAPI-shaped error bodies, one echo error handler, JSON writing
// with raw UTF-8, and the 422 validation items pydantic produces. It is a
// leaf package, importable by every feature package.
package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
)

// APIError is an error with an HTTP status and a FastAPI "detail": a string
// for plain 4xx errors, a list of ValidationItem for 422.
type APIError struct {
	Status int
	Detail any
}

func (e *APIError) Error() string { return fmt.Sprintf("http %d: %v", e.Status, e.Detail) }

// NewError returns an APIError with a string detail.
func NewError(status int, detail string) *APIError { return &APIError{Status: status, Detail: detail} }

// WriteJSON writes v as application/json with raw UTF-8 (no HTML escaping).
func WriteJSON(c echo.Context, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	return c.Blob(status, echo.MIMEApplicationJSON, bytes.TrimRight(buf.Bytes(), "\n"))
}

// ErrorHandler turns any handler error into the body bridge.py's callers
// expect: {"detail": …} for APIError and echo.HTTPError, 404 and 405 in
// FastAPI's words, and a logged plain-text 500 for everything else.
func ErrorHandler(log hclog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, detail := http.StatusInternalServerError, any(nil)
		var ae *APIError
		var he *echo.HTTPError
		switch {
		case errors.As(err, &ae):
			status, detail = ae.Status, ae.Detail
		case errors.As(err, &he):
			status, detail = he.Code, he.Message
			switch status {
			case http.StatusNotFound:
				detail = "Not Found"
			case http.StatusMethodNotAllowed:
				detail = "Method Not Allowed"
			}
			if he.Internal != nil && status >= 500 {
				err = he.Internal
			}
		}
		if status >= 500 {
			log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "error", err)
			_ = c.Blob(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("Internal Server Error"))
			return
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		if werr := WriteJSON(c, status, map[string]any{"detail": detail}); werr != nil {
			log.Error("writing error response failed", "error", werr)
		}
	}
}

// ValidationItem is one entry of a 422 body, as pydantic v2 writes it.
type ValidationItem struct {
	Type  string         `json:"type"`
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Input any            `json:"input"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// Validation returns a 422 error listing items.
func Validation(items ...ValidationItem) *APIError {
	return &APIError{Status: http.StatusUnprocessableEntity, Detail: items}
}

// Missing is a required field absent from body.
func Missing(field string, body any) ValidationItem {
	return ValidationItem{Type: "missing", Loc: []any{"body", field}, Msg: "Field required", Input: body}
}

// BodyMissing is an absent request body.
func BodyMissing() ValidationItem {
	return ValidationItem{Type: "missing", Loc: []any{"body"}, Msg: "Field required", Input: nil}
}

// NotObject is a body that is valid JSON but not an object.
func NotObject(body any) ValidationItem {
	return ValidationItem{Type: "model_attributes_type", Loc: []any{"body"},
		Msg: "Input should be a valid dictionary or object to extract fields from", Input: body}
}

// StringType is a field that should have been a string.
func StringType(field string, v any) ValidationItem {
	return ValidationItem{Type: "string_type", Loc: []any{"body", field}, Msg: "Input should be a valid string", Input: v}
}

// DictType is a field that should have been an object.
func DictType(field string, v any) ValidationItem {
	return ValidationItem{Type: "dict_type", Loc: []any{"body", field}, Msg: "Input should be a valid dictionary", Input: v}
}

// JSONInvalid is a body that does not parse, with the byte offset of the error.
func JSONInvalid(offset int, decoderMsg string) ValidationItem {
	return ValidationItem{Type: "json_invalid", Loc: []any{"body", offset}, Msg: "JSON decode error",
		Input: map[string]any{}, Ctx: map[string]any{"error": decoderMsg}}
}

// DecodeObject parses a JSON request body that must be an object, returning
// its fields raw, or the 422 FastAPI would give for an absent body,
// malformed JSON or a non-object.
func DecodeObject(body []byte) (map[string]json.RawMessage, *APIError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, Validation(BodyMissing())
	}
	var raw json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		offset := 0
		var se *json.SyntaxError
		if errors.As(err, &se) {
			offset = int(se.Offset)
		}
		return nil, Validation(JSONInvalid(offset, err.Error()))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		var v any
		_ = json.Unmarshal(raw, &v)
		return nil, Validation(NotObject(v))
	}
	return obj, nil
}
