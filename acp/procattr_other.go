//go:build !linux

package acp

import "syscall"

// childProcAttr puts the agent in its own process group; only Linux has a
// parent-death signal.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
