package subproc_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/subproc"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestTailKeepsTheEnd(t *testing.T) {
	tail := &subproc.Tail{Max: 8}
	for _, s := range []string{"hello ", "wide ", "wörld"} {
		if n, err := tail.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	// "e wörld" is 8 bytes: the ö's two bytes are kept whole.
	if got := tail.String(); got != "e wörld" || !tail.Cut() {
		t.Errorf("tail %q cut %v, want %q cut", got, tail.Cut(), "e wörld")
	}
	small := &subproc.Tail{Max: 64}
	_, _ = small.Write([]byte("ok"))
	if small.String() != "ok" || small.Cut() {
		t.Errorf("tail %q cut %v, want ok, not cut", small.String(), small.Cut())
	}
}

// TestConfigureKillsTheGroup: a shell whose child holds the output pipe
// open ends at the deadline, grandchild and all.
func TestConfigureKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 30 & echo $!; wait")
	out := &subproc.Tail{Max: 64}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	subproc.Configure(cmd)
	start := time.Now()
	err := cmd.Run()
	if err == nil || ctx.Err() == nil {
		t.Fatalf("Run = %v with ctx %v, want a kill at the deadline", err, ctx.Err())
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		t.Errorf("Run = %v: the grandchild kept the pipe open past the kill", err)
	}
	pid, perr := strconv.Atoi(strings.TrimSpace(out.String()))
	if perr != nil {
		t.Fatalf("output %q, want the grandchild's pid", out.String())
	}
	testkit.WaitFor(t, 5*time.Second, "the grandchild gone", func() bool { return testkit.ProcessGone(pid) })
	t.Logf("ended %s after the start", time.Since(start).Round(time.Millisecond))
}
