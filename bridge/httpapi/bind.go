package httpapi

import (
	"encoding/json"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Binder reads the fields of a JSON object body one at a time with the
// rules of the pydantic models bridge.py's routes declared, collecting one
// 422 item per bad field in the order the handler reads them (callers
// parse that order). Unknown fields are ignored.
//
//	b, err := httpapi.Bind(c.Request().Body, 0)
//	if err != nil {
//		return err // 400, 413 or 422 for a body that is not an object
//	}
//	tool := b.String("tool")
//	session, _ := b.OptString("session_id")
//	if err := b.Err(); err != nil {
//		return err // 422 {"detail":[…]}
//	}
//
// BindQuery gives the same reader over a query string, so query
// parameters follow the same rules with "query" items.
type Binder struct {
	obj   map[string]json.RawMessage
	body  []byte
	whole any
	read  bool // whole has been decoded
	items []ValidationItem
	src   string // first element of every item's loc: "body" or "query"
}

// Sources of the values a Binder reads, the first element of an item's loc.
const (
	locBody  = "body"
	locQuery = "query"
)

// NewBinder binds an object already decoded (DecodeObject); body is the
// raw request, quoted by "missing" items.
func NewBinder(obj map[string]json.RawMessage, body []byte) *Binder {
	return &Binder{obj: obj, body: body, src: locBody}
}

// BindQuery binds query parameters, as FastAPI reads a route's scalar
// parameters: each value is a string (so String, OptString, OptNumber and
// the lax Bool words apply as to a JSON string), a repeated name takes its
// last value, and items are located at ["query", name]. A missing
// required parameter quotes null, as FastAPI does.
func BindQuery(q url.Values) *Binder {
	obj := make(map[string]json.RawMessage, len(q))
	for name, vs := range q {
		if len(vs) == 0 {
			continue
		}
		// Marshalling a string cannot fail; invalid UTF-8 becomes U+FFFD,
		// as Starlette's query decoding does.
		raw, err := json.Marshal(vs[len(vs)-1])
		if err != nil {
			continue
		}
		obj[name] = raw
	}
	return &Binder{obj: obj, src: locQuery}
}

// Bind reads a JSON object body of at most limit bytes (MaxBody when not
// positive) with ReadObjectLimit's errors, and binds it.
func Bind(r io.Reader, limit int64) (*Binder, error) {
	obj, body, err := ReadObjectLimit(r, limit)
	if err != nil {
		return nil, err
	}
	return NewBinder(obj, body), nil
}

// BindFields binds a JSON object body as Bind does and reads its fields
// with read: the error is Bind's, or Err once read has run.
//
//	var tool string
//	if err := httpapi.BindFields(c.Request().Body, 0, func(b *httpapi.Binder) { tool = b.String("tool") }); err != nil {
//		return err
//	}
func BindFields(r io.Reader, limit int64, read func(b *Binder)) error {
	b, err := Bind(r, limit)
	if err != nil {
		return err
	}
	read(b)
	return b.Err()
}

// Err is the 422 listing every bad field read so far, or nil.
func (b *Binder) Err() error {
	if len(b.items) == 0 {
		return nil
	}
	return Validation(b.items...)
}

// Add records an item a handler checked itself.
func (b *Binder) Add(item ValidationItem) { b.items = append(b.items, item) }

// at is the loc of field name in the bound source.
func (b *Binder) at(name string) []any {
	if b.src == "" {
		return []any{locBody, name}
	}
	return []any{b.src, name}
}

// Has reports whether the body (or query) has field name (null included).
func (b *Binder) Has(name string) bool {
	_, ok := b.obj[name]
	return ok
}

// missing records a required field that is absent; pydantic quotes the
// whole body.
func (b *Binder) missing(name string) {
	if !b.read {
		b.whole, b.read = RawValue(b.body), true
	}
	b.Add(missingAt(b.at(name), b.whole))
}

// String is a required string field.
func (b *Binder) String(name string) string {
	raw, ok := b.obj[name]
	if !ok {
		b.missing(name)
		return ""
	}
	s, ok := StringValue(raw)
	if !ok {
		b.Add(stringTypeAt(b.at(name), RawValue(raw)))
	}
	return s
}

// StringOr is a string field with a default: absent is def; null, like any
// other non-string, is an error.
func (b *Binder) StringOr(name, def string) string {
	if _, ok := b.obj[name]; !ok {
		return def
	}
	return b.String(name)
}

// OptString is an optional string field (str | None): absent or null is
// ("", false).
func (b *Binder) OptString(name string) (string, bool) {
	raw, ok := b.obj[name]
	if !ok || isNull(raw) {
		return "", false
	}
	s, ok := StringValue(raw)
	if !ok {
		b.Add(stringTypeAt(b.at(name), RawValue(raw)))
	}
	return s, ok
}

// MaxRunes records a string_too_long item when s, the value of field name,
// has more than max code points.
func (b *Binder) MaxRunes(name, s string, max int) {
	if utf8.RuneCountInString(s) > max {
		b.Add(stringTooLongAt(b.at(name), s, max))
	}
}

// OptObject decodes an optional object field (dict | None) into dst, a
// pointer to a map or struct: absent or null is false with dst untouched.
func (b *Binder) OptObject(name string, dst any) bool {
	raw, ok := b.obj[name]
	if !ok || isNull(raw) {
		return false
	}
	return b.object(name, raw, dst)
}

// ObjectOr decodes an object field with a default into dst: absent leaves
// dst as it is; null, like any other non-object, is an error.
func (b *Binder) ObjectOr(name string, dst any) {
	if raw, ok := b.obj[name]; ok {
		b.object(name, raw, dst)
	}
}

func (b *Binder) object(name string, raw json.RawMessage, dst any) bool {
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, dst) != nil {
		b.Add(dictTypeAt(b.at(name), RawValue(raw)))
		return false
	}
	return true
}

// OptNumber is an optional number field (float | None) in pydantic's lax
// mode, which also takes a string holding a number: absent or null is
// (0, false).
func (b *Binder) OptNumber(name string) (float64, bool) {
	raw, ok := b.obj[name]
	if !ok || isNull(raw) {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, true
	}
	if s, ok := StringValue(raw); ok {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, true
		}
	}
	b.Add(ValidationItem{Type: "float_parsing", Loc: b.at(name),
		Msg: "Input should be a valid number, unable to parse string as a number", Input: RawValue(raw)})
	return 0, false
}

// Bool is a required boolean field in pydantic's lax mode: true and false,
// the numbers 0 and 1, and the usual words ("yes", "off", …).
func (b *Binder) Bool(name string) bool {
	raw, ok := b.obj[name]
	if !ok {
		b.missing(name)
		return false
	}
	switch v := RawValue(raw).(type) {
	case bool:
		return v
	case float64:
		if v == 0 || v == 1 {
			return v == 1
		}
	case string:
		switch strings.ToLower(v) {
		case "1", "true", "t", "yes", "y", "on":
			return true
		case "0", "false", "f", "no", "n", "off":
			return false
		}
	default:
		b.Add(ValidationItem{Type: "bool_type", Loc: b.at(name), Msg: "Input should be a valid boolean", Input: v})
		return false
	}
	b.Add(ValidationItem{Type: "bool_parsing", Loc: b.at(name),
		Msg: "Input should be a valid boolean, unable to interpret input", Input: RawValue(raw)})
	return false
}

// BoolOr is a boolean field with a default, read like Bool: absent is
// def; null, like any other non-boolean, is an error.
func (b *Binder) BoolOr(name string, def bool) bool {
	if _, ok := b.obj[name]; !ok {
		return def
	}
	return b.Bool(name)
}

// StringValue decodes raw when it is a JSON string.
func StringValue(raw []byte) (string, bool) {
	if s, ok := plainString(raw); ok {
		return s, true
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// plainString reads a JSON string with nothing to unescape or replace
// (no backslash, no control character, valid UTF-8) without the decoder:
// its bytes between the quotes are its value.
func plainString(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return "", false
	}
	body := raw[1 : n-1]
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// RawValue decodes raw into a plain Go value (nil when it does not
// parse), for the "input" of a validation item.
func RawValue(raw []byte) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }
