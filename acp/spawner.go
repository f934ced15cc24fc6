package acp

import (
	"os/exec"
	"runtime"
)

// spawner starts agent children from one OS thread that lives as long as
// the supervisor runs. Linux delivers a child's parent-death signal when the
// thread that forked it exits, not the process; Go retires idle threads
// freely, so a child started from an arbitrary goroutine could be killed
// mid-life. Starting every child from a thread locked to a long-lived
// goroutine makes the signal mean what we want: the bridge is gone.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		// Never unlocked: when this goroutine ends, its thread ends with it,
		// which also signals any child still alive (none, after a stop).
		runtime.LockOSThread()
		close(ready)
		for {
			select {
			case r := <-sp.reqs:
				r.err <- r.cmd.Start()
			case <-sp.done:
				return
			}
		}
	}()
	<-ready
	return sp
}

// start runs cmd.Start on the spawner's thread.
func (sp *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	sp.reqs <- r
	return <-r.err
}

// stop ends the spawner's goroutine and thread.
func (sp *spawner) stop() { close(sp.done) }
