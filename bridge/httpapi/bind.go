package httpapi

import (
	"encoding/json"
	"io"
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
type Binder struct {
	obj   map[string]json.RawMessage
	body  []byte
	whole any
	read  bool // whole has been decoded
	items []ValidationItem
}

// NewBinder binds an object already decoded (DecodeObject); body is the
// raw request, quoted by "missing" items.
func NewBinder(obj map[string]json.RawMessage, body []byte) *Binder {
	return &Binder{obj: obj, body: body}
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

// Err is the 422 listing every bad field read so far, or nil.
func (b *Binder) Err() error {
	if len(b.items) == 0 {
		return nil
	}
	return Validation(b.items...)
}

// Add records an item a handler checked itself.
func (b *Binder) Add(item ValidationItem) { b.items = append(b.items, item) }

// Has reports whether the body has field name (null included).
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
	b.Add(Missing(name, b.whole))
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
		b.Add(StringType(name, RawValue(raw)))
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
		b.Add(StringType(name, RawValue(raw)))
	}
	return s, ok
}

// MaxRunes records a string_too_long item when s, the value of field name,
// has more than max code points.
func (b *Binder) MaxRunes(name, s string, max int) {
	if utf8.RuneCountInString(s) > max {
		b.Add(StringTooLong(name, s, max))
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
		b.Add(DictType(name, RawValue(raw)))
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
	b.Add(ValidationItem{Type: "float_parsing", Loc: []any{"body", name},
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
		b.Add(ValidationItem{Type: "bool_type", Loc: []any{"body", name}, Msg: "Input should be a valid boolean", Input: v})
		return false
	}
	b.Add(ValidationItem{Type: "bool_parsing", Loc: []any{"body", name},
		Msg: "Input should be a valid boolean, unable to interpret input", Input: RawValue(raw)})
	return false
}

// StringValue decodes raw when it is a JSON string.
func StringValue(raw []byte) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// RawValue decodes raw into a plain Go value (nil when it does not
// parse), for the "input" of a validation item.
func RawValue(raw []byte) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }
