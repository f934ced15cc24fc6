// Package fieldcheck is how a component's Validate reports a setting out
// of its range: an Error names the Go field of the component's Config and
// says what it wants, so the bridge's command line can name the variable
// or flag the value came from and the component's own tests can name the
// field. A component holds the one range check of each of its fields, and
// Fill defaults its fields one by one from its one Default… function.
package fieldcheck

import (
	"errors"
	"fmt"
	"net/url"
)

// Error is a field whose value is outside its range.
type Error struct {
	// Field is the field's name in its Config ("GreetHourEnd"); Under
	// prefixes the parent's field ("Consumers.GreetHourEnd").
	Field string
	// Value is the field's value.
	Value any
	// Want is what the field wants, without a unit ("more than 0", "an
	// hour from 0 to 24", "at least"): the command line adds the unit its
	// variable is written in.
	Want string
	// Ref is another field the Want compares with ("IdleSleepMin" after
	// "at least"); "" for none, and then the unit follows Want.
	Ref string
	// Why is the reason for the bound, said in brackets after the Want
	// and its unit ("the firmware gives up at 15"); "" for none.
	Why string
}

func (e *Error) Error() string {
	want := e.Want
	if e.Ref != "" {
		want += " " + e.Ref
	}
	if e.Why != "" {
		want += " (" + e.Why + ")"
	}
	return fmt.Sprintf("%s %v: want %s", e.Field, e.Value, want)
}

// Errors collects a Validate's range errors.
type Errors []error

// Check adds an Error on field unless ok.
func (es *Errors) Check(field string, ok bool, value any, want string) {
	if !ok {
		*es = append(*es, &Error{Field: field, Value: value, Want: want})
	}
}

// CheckRef adds an Error on field, wanting want compared with the field
// ref, unless ok.
func (es *Errors) CheckRef(field string, ok bool, value any, want, ref string) {
	if !ok {
		*es = append(*es, &Error{Field: field, Value: value, Want: want, Ref: ref})
	}
}

// HTTPURL reports whether v is an absolute http or https URL with a host:
// the range of every URL setting, checked with Check(field, HTTPURL(v), v,
// WantHTTPURL).
func HTTPURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// WantHTTPURL is what a URL field wants.
const WantHTTPURL = "an http or https URL"

// Err joins the errors; nil for none.
func (es Errors) Err() error { return errors.Join(es...) }

// Under is err with every Error's Field (and Ref) prefixed by parent and a
// dot: a Config reports the errors of the Config it holds in its field
// parent. Other errors are kept as they are.
func Under(parent string, err error) error {
	var out []error
	for _, e := range Split(err) {
		if fe, ok := e.(*Error); ok {
			c := *fe
			c.Field = parent + "." + c.Field
			if c.Ref != "" {
				c.Ref = parent + "." + c.Ref
			}
			e = &c
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// Split flattens the joins of err into their errors, in order; nil for a
// nil err.
func Split(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, Split(e)...)
	}
	return out
}
