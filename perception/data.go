package perception

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Data is an event's data, a JSON object of at most about MaxData bytes.
// A robot's data is kept as the JSON it was sent in, written as is to the
// feed and the recent rings, and a field is decoded only when a consumer
// reads it. Data that is not plain (whitespace between tokens, an escape,
// an exponent, a nested object, a repeated key, invalid UTF-8, over
// MaxData) is decoded once at ingest and kept as its re-encoding instead,
// so a field a consumer reads is always the field the feed shows. The
// zero Data is {}. A Data never changes once made, so one is shared by
// every subscriber.
type Data struct{ p *dataBox }

type dataBox struct {
	raw string         // the object's JSON
	m   map[string]any // DataOf's fields (nil: read fields from raw)
	err error          // why DataOf's fields cannot be encoded
}

// maxPlainKeys is the most keys data may have to be kept as sent; more
// are decoded at ingest (firmware events have four or fewer).
const maxPlainKeys = 16

// DataOf is data made inside the bridge (a synthetic head_turn, a
// face_recognized from a photo, an audio caption): m summarised as capData
// does, and encoded. The event keeps the result; m must not change after.
func DataOf(m map[string]any) Data {
	if len(m) == 0 {
		return Data{}
	}
	m = capData(m)
	enc, err := json.Marshal(m)
	return Data{&dataBox{raw: string(enc), m: m, err: err}}
}

// newData is the data of a POSTed event: raw, valid JSON, must be an
// object that decodes (a number over float64's range does not: err). A
// plain object is kept as sent; any other is decoded and re-encoded.
func newData(raw []byte) (Data, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return Data{}, errNotObject
	}
	if len(raw) <= MaxData && plainObject(raw) && utf8.Valid(raw) {
		if len(raw) == 2 {
			return Data{}, nil
		}
		return Data{&dataBox{raw: string(raw)}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return Data{}, err
	}
	return DataOf(m), nil
}

var errNotObject = errors.New("data is not a JSON object")

// UnmarshalJSON makes Data a binder target (the slow path's data field).
func (d *Data) UnmarshalJSON(b []byte) error {
	nd, err := newData(b)
	if err != nil {
		return err
	}
	*d = nd
	return nil
}

// MarshalJSON writes the object's JSON.
func (d Data) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := writeData(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// String is the object's JSON ("{}" for none), for logs and test failures.
func (d Data) String() string {
	if d.p == nil || d.p.err != nil {
		return "{}"
	}
	return d.p.raw
}

// Lookup returns field key's value as encoding/json decodes it into an
// any (a string, float64, bool, nil, []any or map[string]any); ok is false
// when the field is absent.
func (d Data) Lookup(key string) (v any, ok bool) {
	if d.p == nil {
		return nil, false
	}
	if d.p.m != nil {
		v, ok = d.p.m[key]
		return v, ok
	}
	raw, ok := d.field(key)
	if !ok {
		return nil, false
	}
	switch c := raw[0]; {
	case c == '"':
		return raw[1 : len(raw)-1], true // plain: no escapes
	case c == 't':
		return true, true
	case c == 'f':
		return false, true
	case c == 'n':
		return nil, true
	case c == '[':
		var list []any
		_ = json.Unmarshal([]byte(raw), &list) // valid and plain: it decodes
		return list, true
	}
	f, _ := strconv.ParseFloat(raw, 64) // plain: in range
	return f, true
}

// Get is Lookup's value alone: nil when absent.
func (d Data) Get(key string) any {
	v, _ := d.Lookup(key)
	return v
}

// Text returns field key when it is a string.
func (d Data) Text(key string) (string, bool) {
	if d.p == nil {
		return "", false
	}
	if d.p.m != nil {
		s, ok := d.p.m[key].(string)
		return s, ok
	}
	raw, ok := d.field(key)
	if !ok || raw[0] != '"' {
		return "", false
	}
	return raw[1 : len(raw)-1], true
}

// Len is the number of fields.
func (d Data) Len() int {
	if d.p == nil {
		return 0
	}
	if d.p.m != nil {
		return len(d.p.m)
	}
	n := 0
	objectFields(d.p.raw, func(string, string) bool { n++; return true })
	return n
}

// field is key's raw value in plain data.
func (d Data) field(key string) (val string, ok bool) {
	objectFields(d.p.raw, func(k, v string) bool {
		if k == key {
			val, ok = v, true
			return false
		}
		return true
	})
	return val, ok
}

// writeData appends d's JSON to b.
func writeData(b *bytes.Buffer, d Data) error {
	if d.p == nil {
		b.WriteString("{}")
		return nil
	}
	if d.p.err != nil {
		return d.p.err
	}
	b.WriteString(d.p.raw)
	return nil
}

// plainObject reports whether obj, a valid JSON object, may be kept as
// sent: no whitespace between tokens, no backslash, no nested object, no
// number with an exponent or of over 300 bytes (so every number is within
// float64's range), at most maxPlainKeys keys and none repeated. Its
// fields are then read by objectFields and decode exactly as
// encoding/json decodes them.
func plainObject(obj []byte) bool {
	if bytes.IndexByte(obj, '\\') >= 0 {
		return false
	}
	var keys [maxPlainKeys][]byte
	n, depth := 0, 0
	for i := 0; i < len(obj); i++ {
		switch c := obj[i]; c {
		case '"':
			end := bytes.IndexByte(obj[i+1:], '"') + i + 1
			if depth == 1 && obj[end+1] == ':' {
				key := obj[i+1 : end]
				for _, k := range keys[:n] {
					if bytes.Equal(k, key) {
						return false
					}
				}
				if n == maxPlainKeys {
					return false
				}
				keys[n] = key
				n++
			}
			i = end
		case '{':
			if i > 0 {
				return false
			}
			depth++
		case '[':
			depth++
		case ']', '}':
			depth--
		case ' ', '\t', '\r', '\n':
			return false
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			j := i
			for j < len(obj) && obj[j] != ',' && obj[j] != ']' && obj[j] != '}' {
				if c := obj[j]; c == 'e' || c == 'E' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
					return false
				}
				j++
			}
			if j-i > 300 {
				return false
			}
			i = j - 1
		}
	}
	return true
}

// objectFields calls fn with each key and raw value of obj, a valid JSON
// object without backslashes (a fast-path body, plain data), in order,
// until fn returns false.
func objectFields[T ~string | ~[]byte](obj T, fn func(key, val T) bool) {
	i := skipSpace(obj, 0) + 1 // past '{'
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return // '}'
		}
		end := closingQuote(obj, i)
		key := obj[i+1 : end]
		i = skipSpace(obj, end+1) + 1 // past ':'
		i = skipSpace(obj, i)
		j := valueEnd(obj, i)
		if !fn(key, obj[i:j]) {
			return
		}
		i = skipSpace(obj, j)
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
}

// skipSpace is the index of the first non-whitespace byte at or after i.
func skipSpace[T ~string | ~[]byte](b T, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// closingQuote is the index of the quote closing the string opening at i
// (no escapes).
func closingQuote[T ~string | ~[]byte](b T, i int) int {
	for i++; i < len(b) && b[i] != '"'; i++ {
	}
	return i
}

// valueEnd is the index just past the value starting at i.
func valueEnd[T ~string | ~[]byte](b T, i int) int {
	switch b[i] {
	case '"':
		return closingQuote(b, i) + 1
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = closingQuote(b, i)
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	return i
}
