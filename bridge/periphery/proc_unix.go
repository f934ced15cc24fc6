//go:build unix

package periphery

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// configureProcess runs gws in its own process group and makes the
// context's kill take the whole group, so a helper gws spawned cannot keep
// the output pipes open past the timeout.
func configureProcess(cmd *exec.Cmd) {
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
