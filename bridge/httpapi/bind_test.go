package httpapi

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// detail binds body with read and returns the 422 detail as JSON, or "".
func detail(t *testing.T, body string, read func(b *Binder)) string {
	t.Helper()
	b, err := Bind(strings.NewReader(body), 0)
	if err != nil {
		t.Fatalf("Bind(%s): %v", body, err)
	}
	return detailOf(t, b, read)
}

// detailOf runs read on b and returns its 422 detail as JSON, or "".
func detailOf(t *testing.T, b *Binder, read func(b *Binder)) string {
	t.Helper()
	read(b)
	e := asValidation(t, b.Err())
	if e == nil {
		return ""
	}
	out, _ := Marshal(e.Detail)
	return string(out)
}

// asValidation returns err as its 422 APIError (nil for nil), failing the
// test on any other error.
func asValidation(t *testing.T, err error) *APIError {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *APIError
	if !errors.As(err, &e) || e.Status != 422 {
		t.Fatalf("Err() = %v, want a 422", err)
	}
	return e
}

func TestBinderItems(t *testing.T) {
	str := func(name string) func(*Binder) { return func(b *Binder) { b.String(name) } }
	tests := []struct {
		name, body string
		read       func(*Binder)
		want       string
	}{
		{"required string present", `{"a":"x"}`, str("a"), ``},
		{"required string missing quotes the body", `{"b":1}`, str("a"),
			`[{"type":"missing","loc":["body","a"],"msg":"Field required","input":{"b":1}}]`},
		{"required string null", `{"a":null}`, str("a"),
			`[{"type":"string_type","loc":["body","a"],"msg":"Input should be a valid string","input":null}]`},
		{"string with default: absent", `{}`, func(b *Binder) {
			if b.StringOr("a", "d") != "d" {
				t.Error("default not used")
			}
		}, ``},
		{"string with default: null is an error", `{"a":null}`, func(b *Binder) { b.StringOr("a", "d") },
			`[{"type":"string_type","loc":["body","a"],"msg":"Input should be a valid string","input":null}]`},
		{"optional string: null is absent", `{"a":null}`, func(b *Binder) {
			if s, ok := b.OptString("a"); ok || s != "" {
				t.Errorf("OptString = %q %v", s, ok)
			}
		}, ``},
		{"optional string: a number", `{"a":5}`, func(b *Binder) { b.OptString("a") },
			`[{"type":"string_type","loc":["body","a"],"msg":"Input should be a valid string","input":5}]`},
		{"too long in code points", `{"a":"ééé"}`, func(b *Binder) { s := b.String("a"); b.MaxRunes("a", s, 2) },
			`[{"type":"string_too_long","loc":["body","a"],"msg":"String should have at most 2 characters","input":"ééé","ctx":{"max_length":2}}]`},
		{"optional object", `{"m":{"k":"v"}}`, func(b *Binder) {
			var m map[string]string
			if !b.OptObject("m", &m) || m["k"] != "v" {
				t.Errorf("OptObject: %v", m)
			}
		}, ``},
		{"optional object: an array", `{"m":[1]}`, func(b *Binder) { var m map[string]any; b.OptObject("m", &m) },
			`[{"type":"dict_type","loc":["body","m"],"msg":"Input should be a valid dictionary","input":[1]}]`},
		{"object with default: null is an error", `{"m":null}`, func(b *Binder) { m := map[string]any{}; b.ObjectOr("m", &m) },
			`[{"type":"dict_type","loc":["body","m"],"msg":"Input should be a valid dictionary","input":null}]`},
		{"number from a string", `{"n":"1.5"}`, func(b *Binder) {
			if f, ok := b.OptNumber("n"); !ok || f != 1.5 {
				t.Errorf("OptNumber = %v %v", f, ok)
			}
		}, ``},
		{"number: not one", `{"n":"x"}`, func(b *Binder) { b.OptNumber("n") },
			`[{"type":"float_parsing","loc":["body","n"],"msg":"Input should be a valid number, unable to parse string as a number","input":"x"}]`},
		{"lax bool words", `{"a":"Yes","b":0}`, func(b *Binder) {
			if !b.Bool("a") || b.Bool("b") {
				t.Error("lax bools misread")
			}
		}, ``},
		{"bool: a list", `{"a":[]}`, func(b *Binder) { b.Bool("a") },
			`[{"type":"bool_type","loc":["body","a"],"msg":"Input should be a valid boolean","input":[]}]`},
		{"bool: a word it does not know", `{"a":"maybe"}`, func(b *Binder) { b.Bool("a") },
			`[{"type":"bool_parsing","loc":["body","a"],"msg":"Input should be a valid boolean, unable to interpret input","input":"maybe"}]`},
		{"items in read order", `{"b":1}`, func(b *Binder) { b.String("z"); b.OptString("b"); b.String("a") },
			`[{"type":"missing","loc":["body","z"],"msg":"Field required","input":{"b":1}},` +
				`{"type":"string_type","loc":["body","b"],"msg":"Input should be a valid string","input":1},` +
				`{"type":"missing","loc":["body","a"],"msg":"Field required","input":{"b":1}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := detail(t, tt.body, tt.read); got != tt.want {
				t.Errorf("detail\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A body that is not an object fails in Bind, with DecodeObject's 422.
func TestBindNotAnObject(t *testing.T) {
	_, err := Bind(strings.NewReader(`[1]`), 0)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 422 {
		t.Fatalf("Bind([1]) = %v", err)
	}
	if _, err := Bind(strings.NewReader(`{"a":"`+strings.Repeat("x", 100)+`"}`), 50); err == nil {
		t.Error("a body over the limit was bound")
	}
}

// BindFields reads the fields of a body it could bind and answers their
// 422; a body it cannot bind is Bind's error, with no field read.
func TestBindFields(t *testing.T) {
	var got string
	read := func(b *Binder) { got = b.String("s") }
	if err := BindFields(strings.NewReader(`{"s":"x"}`), 0, read); err != nil || got != "x" {
		t.Errorf("good body: %q, %v", got, err)
	}
	if e := asValidation(t, BindFields(strings.NewReader(`{"s":1}`), 0, read)); e == nil {
		t.Error("a bad field answered no 422")
	}
	got = "unread"
	if err := BindFields(strings.NewReader(`{"s":"`+strings.Repeat("x", 100)+`"}`), 50, read); err == nil || got != "unread" {
		t.Errorf("a body over the limit: %v, read %q", err, got)
	}
}

// FuzzBinder: whatever the body, reading every kind of field ends in nil
// or a 422 whose detail encodes, never a panic.
func FuzzBinder(f *testing.F) {
	for _, seed := range []string{`{"s":"x","o":{},"n":1,"b":true}`, `{"s":null,"o":null,"n":null,"b":null}`,
		`{"s":1,"o":[],"n":"1e3","b":"off"}`, `{}`, `{"s":"\u00e9\u00e9"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		obj, apiErr := DecodeObject(body)
		if apiErr != nil {
			return
		}
		b := NewBinder(obj, body)
		s := b.String("s")
		b.MaxRunes("s", s, 3)
		b.StringOr("d", "x")
		b.OptString("o2")
		var m map[string]any
		b.OptObject("o", &m)
		b.ObjectOr("o3", &m)
		b.OptNumber("n")
		b.Bool("b")
		e := asValidation(t, b.Err())
		if e == nil {
			return
		}
		if _, err := json.Marshal(e.Detail); err != nil {
			t.Fatalf("detail does not encode: %v", err)
		}
	})
}

// queryDetail binds the raw query string q with read and returns the 422
// detail as JSON, or "".
func queryDetail(t *testing.T, q string, read func(b *Binder)) string {
	t.Helper()
	vals, err := url.ParseQuery(q)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", q, err)
	}
	b := BindQuery(vals)
	return detailOf(t, b, read)
}

func TestBindQueryItems(t *testing.T) {
	boolIs := func(name string, def, want bool) func(*Binder) {
		return func(b *Binder) {
			if got := b.BoolOr(name, def); got != want {
				t.Errorf("BoolOr(%q, %v) = %v, want %v", name, def, got, want)
			}
		}
	}
	tests := []struct {
		name, query string
		read        func(*Binder)
		want        string
	}{
		{"optional string absent", ``, func(b *Binder) {
			if s, ok := b.OptString("person"); ok || s != "" {
				t.Errorf("OptString = %q %v, want absent", s, ok)
			}
		}, ``},
		{"optional string empty is present", `person=`, func(b *Binder) {
			if s, ok := b.OptString("person"); !ok || s != "" {
				t.Errorf("OptString = %q %v, want \"\" present", s, ok)
			}
		}, ``},
		{"the word null is a string", `person=null`, func(b *Binder) {
			if s, ok := b.OptString("person"); !ok || s != "null" {
				t.Errorf("OptString = %q %v", s, ok)
			}
		}, ``},
		{"escaped value", `person=Alex%20B%C3%A9`, func(b *Binder) {
			if s, _ := b.OptString("person"); s != "Alex Bé" {
				t.Errorf("OptString = %q", s)
			}
		}, ``},
		{"repeated name takes the last value", `person=a&person=b`, func(b *Binder) {
			if s, _ := b.OptString("person"); s != "b" {
				t.Errorf("OptString = %q, want b", s)
			}
		}, ``},
		{"bool default when absent", `other=1`, boolIs("flag", true, true), ``},
		{"bool default false when absent", ``, boolIs("flag", false, false), ``},
		{"bool false", `flag=false`, boolIs("flag", true, false), ``},
		{"bool 0", `flag=0`, boolIs("flag", true, false), ``},
		{"bool 1", `flag=1`, boolIs("flag", false, true), ``},
		{"bool Off", `flag=Off`, boolIs("flag", true, false), ``},
		{"bool YES", `flag=YES`, boolIs("flag", false, true), ``},
		{"bool n", `flag=n`, boolIs("flag", true, false), ``},
		{"bool T", `flag=T`, boolIs("flag", false, true), ``},
		{"bool a word it does not know", `flag=maybe`, func(b *Binder) { b.BoolOr("flag", true) },
			`[{"type":"bool_parsing","loc":["query","flag"],"msg":"Input should be a valid boolean, unable to interpret input","input":"maybe"}]`},
		{"bool empty", `flag=`, func(b *Binder) { b.BoolOr("flag", true) },
			`[{"type":"bool_parsing","loc":["query","flag"],"msg":"Input should be a valid boolean, unable to interpret input","input":""}]`},
		{"bool 2", `flag=2`, func(b *Binder) { b.BoolOr("flag", true) },
			`[{"type":"bool_parsing","loc":["query","flag"],"msg":"Input should be a valid boolean, unable to interpret input","input":"2"}]`},
		{"required missing quotes null", `other=x`, func(b *Binder) { b.String("q") },
			`[{"type":"missing","loc":["query","q"],"msg":"Field required","input":null}]`},
		{"number", `n=2.5`, func(b *Binder) {
			if f, ok := b.OptNumber("n"); !ok || f != 2.5 {
				t.Errorf("OptNumber = %v %v", f, ok)
			}
		}, ``},
		{"number: not one", `n=x`, func(b *Binder) { b.OptNumber("n") },
			`[{"type":"float_parsing","loc":["query","n"],"msg":"Input should be a valid number, unable to parse string as a number","input":"x"}]`},
		{"too long", `s=abc`, func(b *Binder) { s := b.String("s"); b.MaxRunes("s", s, 2) },
			`[{"type":"string_too_long","loc":["query","s"],"msg":"String should have at most 2 characters","input":"abc","ctx":{"max_length":2}}]`},
		{"items in read order", `b=x`, func(b *Binder) { b.String("z"); b.BoolOr("b", true); b.String("a") },
			`[{"type":"missing","loc":["query","z"],"msg":"Field required","input":null},` +
				`{"type":"bool_parsing","loc":["query","b"],"msg":"Input should be a valid boolean, unable to interpret input","input":"x"},` +
				`{"type":"missing","loc":["query","a"],"msg":"Field required","input":null}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := queryDetail(t, tt.query, tt.read); got != tt.want {
				t.Errorf("detail\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// BoolOr on a body: absent is the default, null is an error, as pydantic
// treats a field with a default.
func TestBinderBoolOr(t *testing.T) {
	if got := detail(t, `{}`, func(b *Binder) {
		if !b.BoolOr("a", true) {
			t.Error("default not used")
		}
	}); got != "" {
		t.Errorf("detail %s, want none", got)
	}
	want := `[{"type":"bool_type","loc":["body","a"],"msg":"Input should be a valid boolean","input":null}]`
	if got := detail(t, `{"a":null}`, func(b *Binder) { b.BoolOr("a", true) }); got != want {
		t.Errorf("detail\n got %s\nwant %s", got, want)
	}
}

// A zero Binder locates its items in the body, as before query binding.
func TestBinderZeroValueLoc(t *testing.T) {
	var b Binder
	b.String("a")
	var apiErr *APIError
	if !errors.As(b.Err(), &apiErr) {
		t.Fatalf("Err() = %v", b.Err())
	}
	out, _ := Marshal(apiErr.Detail)
	if want := `[{"type":"missing","loc":["body","a"],"msg":"Field required","input":null}]`; string(out) != want {
		t.Errorf("detail\n got %s\nwant %s", out, want)
	}
}
