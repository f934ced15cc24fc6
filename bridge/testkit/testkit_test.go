package testkit

import (
	"os/exec"
	"testing"
	"time"
)

// A running child is not gone; killed, it is, already as a zombie before
// it is reaped.
func TestProcessGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if ProcessGone(pid) {
		t.Fatal("a running child reported gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 10*time.Second, "the killed child gone before its reaping", func() bool { return ProcessGone(pid) })
	_ = cmd.Wait()
	if !ProcessGone(pid) {
		t.Error("a reaped child reported running")
	}
}
