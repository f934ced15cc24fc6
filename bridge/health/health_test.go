package health

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestConditions(t *testing.T) {
	c := New()
	if c.Problems() != nil {
		t.Fatalf("a new set has problems: %q", c.Problems())
	}
	if !c.Fail("b", "b: disk full", nil) || c.Fail("b", "b: permission denied", nil) {
		t.Error("Fail should be news only when the key was not failing")
	}
	if !c.Fail("a", "a: read-only file system", nil) {
		t.Error("another key's failure is news")
	}
	if got, want := c.Problems(), []string{"a: read-only file system", "b: permission denied"}; !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q (sorted, the latest text)", got, want)
	}
	if !c.Clear("b") || c.Clear("b") || c.Clear("never") {
		t.Error("Clear should report whether the key was failing")
	}
	if !c.Fail("b", "b: again", nil) {
		t.Error("a failure after a clear is news again")
	}
	c.Clear("a")
	c.Clear("b")
	if c.Problems() != nil {
		t.Errorf("problems after clearing all: %q", c.Problems())
	}

	var none *Conditions
	if !none.Fail("x", "x", nil) || none.Clear("x") || none.Problems() != nil {
		t.Error("a nil set holds nothing and reports every failure as news")
	}
}

// TestConditionsConcurrent: components mark and clear their keys while
// /health reads; exactly one Fail per key and round is news.
func TestConditionsConcurrent(t *testing.T) {
	c := New()
	var wg sync.WaitGroup
	news := make([]int, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("k", w%4) // two writers share each key
			for range 200 {
				if c.Fail(key, key+": failing", nil) {
					news[w]++
				}
				_ = c.Problems()
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range news {
		total += n
	}
	if total != 4 || len(c.Problems()) != 4 {
		t.Errorf("%d news for 4 keys, problems %q", total, c.Problems())
	}
}

// TestFailedAndRecoveredLogOncePerCause: the first failure is logged at
// the given level with the error, the rest at Debug; a recovery once.
func TestFailedAndRecoveredLogOncePerCause(t *testing.T) {
	var logs strings.Builder
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	c := New()
	err := errors.New("open /x/state: permission denied")
	for range 3 {
		c.Failed(log, hclog.Error, "state /x/state", "greeter state", err, nil, "cannot save the greeter state", "path", "/x/state")
	}
	c.Recovered(log, "state /x/state", "greeter state saved again", "path", "/x/state")
	c.Recovered(log, "state /x/state", "greeter state saved again", "path", "/x/state")
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	want := []string{
		`[ERROR] cannot save the greeter state: path=/x/state error="open /x/state: permission denied"`,
		`[DEBUG] cannot save the greeter state: path=/x/state error="open /x/state: permission denied"`,
		`[DEBUG] cannot save the greeter state: path=/x/state error="open /x/state: permission denied"`,
		`[INFO]  greeter state saved again: path=/x/state`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), logs.String())
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d: %q, want it to end %q", i, lines[i], w)
		}
	}
	if c.Problems() != nil {
		t.Errorf("problems after the recovery: %q", c.Problems())
	}
	c.Failed(log, hclog.Warn, "k", "memory journal", err, nil, "m")
	if got := c.Problems(); len(got) != 1 || got[0] != "memory journal: open /x/state: permission denied" {
		t.Errorf("problem text %q", got)
	}
}
