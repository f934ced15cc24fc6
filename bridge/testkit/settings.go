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

// CheckFieldErrors is the one way a test checks a component's Validate:
// it fails t unless err is the range errors want, each one's text (the
// field, its value and what it wants: "Port 0: want a port from 1 to
// 65535"), in order, and every error among them a *fieldcheck.Error.
func CheckFieldErrors(t testing.TB, name string, err error, want ...string) {
	t.Helper()
	if d := cmp.Diff(fieldTexts(t, err), want); d != "" {
		t.Errorf("%s's range errors (-got +want):\n%s", name, d)
	}
}

// fieldTexts is the text of each of err's errors, in order; one that is
// not a *fieldcheck.Error fails t.
func fieldTexts(t testing.TB, err error) []string {
	t.Helper()
	var out []string
	for _, e := range fieldcheck.Split(err) {
		if _, ok := e.(*fieldcheck.Error); !ok {
			t.Errorf("%v is not a fieldcheck.Error", e)
		}
		out = append(out, e.Error())
	}
	return out
}
