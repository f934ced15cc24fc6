package httpapi

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"
)

// FuzzDecodeObject: any body decodes to an object or to a 422 whose
// detail list encodes as JSON (the error writer's input), never a panic.
func FuzzDecodeObject(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1}`, ``, `null`, `[1]`, `{"a":`, "{\"\xff\":1}", `"x"`, `{"a":1}{"b":2}`, "\ufeff{}"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		obj, apiErr := DecodeObject(body)
		// The one-pass path gives what decoding the whole value first did.
		wantObj, wantErr := decodeValueFirst(body)
		if !reflect.DeepEqual(obj, wantObj) || !reflect.DeepEqual(apiErr, wantErr) {
			t.Fatalf("%q: got %v, %v; decoding the value first gives %v, %v", body, obj, apiErr, wantObj, wantErr)
		}
		if apiErr == nil {
			if obj == nil {
				t.Fatalf("no object and no error for %q", body)
			}
			return
		}
		if apiErr.Status != 422 {
			t.Fatalf("status %d for %q", apiErr.Status, body)
		}
		if _, err := json.Marshal(map[string]any{"detail": apiErr.Detail}); err != nil {
			t.Fatalf("detail does not encode for %q: %v", body, err)
		}
	})
}

// FuzzStringValue: the decoder-free path reads a string as the decoder does.
func FuzzStringValue(f *testing.F) {
	for _, seed := range []string{`"robot-1"`, `""`, `"a\"b"`, `"caf\u00e9"`, "\"\xff\"", "\"a\x01\"", `"a"b"`, `"`, `1`, `null`, `"日本"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := StringValue(raw)
		var want string
		wantOK := len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &want) == nil
		if got != want || ok != wantOK {
			t.Fatalf("%q: got %q, %v; the decoder gives %q, %v", raw, got, ok, want, wantOK)
		}
	})
}

// FuzzBindQuery: whatever the query string, reading every kind of
// parameter ends in nil or a 422 located in the query, never a panic.
func FuzzBindQuery(f *testing.F) {
	for _, seed := range []string{``, `s=x&b=on&n=1`, `b=maybe&n=x`, `s=%ff&s=`, `b&b=1&b=`, `a=%zz`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw) // keeps what parses, as net/http does
		b := BindQuery(q)
		s := b.String("s")
		b.MaxRunes("s", s, 3)
		b.OptString("o")
		b.OptNumber("n")
		b.BoolOr("b", true)
		e := asValidation(t, b.Err())
		if e == nil {
			return
		}
		items, ok := e.Detail.([]ValidationItem)
		if !ok || len(items) == 0 {
			t.Fatalf("detail %#v", e.Detail)
		}
		for _, it := range items {
			if it.Loc[0] != "query" {
				t.Fatalf("item located at %v", it.Loc)
			}
		}
		if _, err := json.Marshal(e.Detail); err != nil {
			t.Fatalf("detail does not encode: %v", err)
		}
	})
}
