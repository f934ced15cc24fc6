package health_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health/healthtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestRunClearsWhatItsCheckPasses: each re-check interval, a failing
// condition whose check passes is cleared with one Info line (in the
// component's logger when it was marked with Failed, else the set's); one
// whose check fails stays, and one without a check is left to its
// component.
func TestRunClearsWhatItsCheckPasses(t *testing.T) {
	var setLogs, compLogs testkit.LogBuffer
	set := healthtest.New(t, hclog.New(&hclog.LoggerOptions{Name: "health", Output: &setLogs}))
	comp := hclog.New(&hclog.LoggerOptions{Name: "convolog", Output: &compLogs})

	var fixed atomic.Bool
	probe := func() error {
		if fixed.Load() {
			return nil
		}
		return errors.New("still read-only")
	}
	calls := 0
	passing := func() error { calls++; return nil }
	set.Fail("a", "a: read-only file system", probe)
	set.Fail("b", "b: database disk image is malformed", nil)
	set.Failed(comp, hclog.Warn, "c", "log directory /x", errors.New("open /x/f: no space left on device"), passing, "cannot write")

	set.Recheck(t)
	if got := set.Problems(); len(got) != 2 || got[0] != "a: read-only file system" || got[1] != "b: database disk image is malformed" {
		t.Errorf("problems after the first re-check %q, want a and b", got)
	}
	if want := `[INFO]  convolog: log directory /x recovered: its re-check passed: problem="log directory /x: open /x/f: no space left on device"`; !strings.Contains(compLogs.String(), want) {
		t.Errorf("component log, want %q:\n%s", want, compLogs.String())
	}

	fixed.Store(true)
	set.Recheck(t)
	set.Recheck(t)
	if got := set.Problems(); len(got) != 1 || got[0] != "b: database disk image is malformed" {
		t.Errorf("problems %q, want only the one without a check", got)
	}
	if lines := strings.Split(strings.TrimSpace(setLogs.String()), "\n"); len(lines) != 1 ||
		!strings.HasSuffix(lines[0], `[INFO]  health: a recovered: its re-check passed: problem="a: read-only file system"`) {
		t.Errorf("want one Info line for a, in the set's logger:\n%s", setLogs.String())
	}
	if n := strings.Count(compLogs.String(), "recovered"); n != 1 || calls != 1 {
		t.Errorf("c: %d recovery lines and %d checks, want 1 and 1 (a cleared condition is not checked again)", n, calls)
	}
}

// TestRecheckKeepsANewerFailure: a component that marks the key again
// while its check runs has the newer word: the condition stays, with the
// newer text, until a later re-check.
func TestRecheckKeepsANewerFailure(t *testing.T) {
	set := healthtest.New(t, nil)
	var again health.Check
	again = func() error {
		set.Fail("k", "k: failing again", again) // a write failed meanwhile
		return nil
	}
	set.Fail("k", "k: failing", again)
	set.Recheck(t)
	if got := set.Problems(); len(got) != 1 || got[0] != "k: failing again" {
		t.Errorf("problems %q, want the newer failure kept", got)
	}
	set.Fail("k", "k: failing", func() error { return nil })
	set.Recheck(t)
	if got := set.Problems(); got != nil {
		t.Errorf("problems %q after a re-check with no newer failure", got)
	}
}
