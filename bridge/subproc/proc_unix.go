//go:build unix

package subproc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Configure runs cmd in its own process group and makes its context's
// kill take the whole group, so a helper it spawned (ssh under sh -c)
// cannot keep the output pipes open, or run on, past the deadline. Set
// cmd.WaitDelay too: it bounds Wait after the kill.
func Configure(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}
