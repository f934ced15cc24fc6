// Package reexec is the plumbing both fake agents of the tests share
// (acptest speaks ACP, steerabletest the steerable sidecar's protocol):
// the test binary re-executes itself in a fake's mode, selected by an
// environment variable, and reads its fault settings from the environment.
// It imports nothing of the module, so any package's tests may use it.
package reexec

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaybeRun runs run(mode) and exits with its status when the environment
// variable modeEnv is set; otherwise it returns at once.
func MaybeRun(modeEnv string, run func(mode string) int) {
	mode := os.Getenv(modeEnv)
	if mode == "" {
		return
	}
	os.Exit(run(mode))
}

// Command returns how to start the current test binary in mode: its path
// and an environment of modeEnv=mode followed by extraEnv ("K=V"). Under
// the race detector it also sets GORACE's atexit_sleep_ms=0, so that
// exiting children need not sleep a second.
func Command(modeEnv, mode string, extraEnv ...string) (path string, env []string) {
	path, err := os.Executable()
	if err != nil {
		path = os.Args[0]
	}
	env = []string{modeEnv + "=" + mode}
	if raceEnabled {
		env = append(env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	return path, append(env, extraEnv...)
}

// EnvInt is the integer in the environment variable name, def when unset
// or not an integer.
func EnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// EnvDuration is the Go duration in the environment variable name, def
// when unset or not a duration.
func EnvDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

// ProcessGone reports whether pid no longer runs. A zombie counts as gone:
// in a container its reaper may be a PID 1 that never reaps.
func ProcessGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}
