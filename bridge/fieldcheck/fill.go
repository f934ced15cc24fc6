package fieldcheck

import (
	"fmt"
	"reflect"
)

// Fill is a component's per-field defaulting: each field of *c named in
// fields that is unset (its zero value, or a number below zero) takes its
// value in def, the component's Default… function, so the default is
// written once. Other fields are left as they are. A name that is no
// field of T is a mistake of the caller and panics.
func Fill[T any](c *T, def T, fields ...string) {
	v, d := reflect.ValueOf(c).Elem(), reflect.ValueOf(def)
	for _, name := range fields {
		f := v.FieldByName(name)
		if !f.IsValid() {
			panic(fmt.Sprintf("fieldcheck.Fill: %s has no field %s", v.Type(), name))
		}
		if f.IsZero() || (f.CanInt() && f.Int() < 0) || (f.CanFloat() && f.Float() < 0) {
			f.Set(d.FieldByName(name))
		}
	}
}
