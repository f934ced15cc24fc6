package acp

import "syscall"

// childProcAttr puts the agent in its own process group (so the stop ladder
// reaches its helpers too) and has the kernel SIGKILL it when the bridge
// dies, even by SIGKILL: an agent that ignores stdin EOF would otherwise
// live on under PID 1 beside the next bridge's agent.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
