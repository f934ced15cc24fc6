//go:build !unix

package periphery

import "os/exec"

// configureProcess keeps exec's default kill on platforms without process
// groups; WaitDelay still bounds Wait.
func configureProcess(*exec.Cmd) {}
