// Package reexec is the plumbing both fake agents of the tests share
// (acptest speaks ACP, steerabletest the steerable sidecar's protocol):
// the test binary re-executes itself in a fake's mode, selected by an
// environment variable, and reads its fault settings from the environment.
// It imports nothing of the module but bridge/testkit, so any package's
// tests may use it.
package reexec

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
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

// Bump increments the counter file name in dir and reports whether its
// old value was below the integer in the environment variable limitEnv
// (always true when dir is empty: a fake without a state dir fails every
// time). A counter that cannot be written is reported on stderr as
// "<who>: counter: <error>".
func Bump(who, dir, name, limitEnv string) bool {
	if dir == "" {
		return true
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, who+": counter:", err)
		return 0 < EnvInt(limitEnv, 1<<30)
	}
	defer root.Close()
	b, _ := root.ReadFile(name)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := root.WriteFile(name, []byte(strconv.Itoa(n+1)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, who+": counter:", err)
	}
	return n < EnvInt(limitEnv, 1<<30)
}

// ProcessGone reports whether pid no longer runs (testkit.ProcessGone: a
// zombie counts as gone).
func ProcessGone(pid int) bool { return testkit.ProcessGone(pid) }
