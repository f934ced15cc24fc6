//go:build !unix

package subproc

import "os/exec"

// Configure keeps exec's default kill on platforms without process
// groups; WaitDelay still bounds Wait.
func Configure(*exec.Cmd) {}
