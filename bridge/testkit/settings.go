package testkit

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
)

// CheckDefaults is a component's settings test of one Default… function:
// it fails t unless def (what the function returns) is want, the values
// the test holds (bridge.py's), and passes its own Validate.
func CheckDefaults[T interface{ Validate() error }](t testing.TB, name string, def, want T, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(def, want, opts...); d != "" {
		t.Errorf("%s (-got +want):\n%s", name, d)
	}
	if err := def.Validate(); err != nil {
		t.Errorf("%s is not valid: %v", name, err)
	}
}

// CheckFieldErrors fails t unless err, a component's Validate, is the
// range errors want: one "Field: want Want" line (" Ref" added when it
// compares with another field) per *fieldcheck.Error, in order. Any
// other error fails t too.
func CheckFieldErrors(t testing.TB, name string, err error, want ...string) {
	t.Helper()
	if d := cmp.Diff(fieldLines(t, err), want); d != "" {
		t.Errorf("%s's range errors (-got +want):\n%s", name, d)
	}
}

// fieldLines is err's *fieldcheck.Error lines; any other error fails t.
func fieldLines(t testing.TB, err error) []string {
	t.Helper()
	var out []string
	for _, e := range fieldcheck.Split(err) {
		fe, ok := e.(*fieldcheck.Error)
		if !ok {
			t.Errorf("%v is not a fieldcheck.Error", e)
			continue
		}
		line := fe.Field + ": want " + fe.Want
		if fe.Ref != "" {
			line += " " + fe.Ref
		}
		out = append(out, line)
	}
	return out
}
