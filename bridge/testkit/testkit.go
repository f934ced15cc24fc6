// Package testkit holds the helpers every package's tests share: a log
// sink safe to write from background goroutines, a bounded polling wait,
// the recording fake clock, running components until the test ends,
// whether a process still runs, a private mount namespace to mount a
// read-only or full file system in, and a component's settings checks
// (CheckDefaults, CheckFieldErrors). It lives under bridge/ with the rest
// of the shared plumbing, is imported only by tests, and imports no
// package of this module but the leaf bridge/fieldcheck, so any package's
// tests (acp's included) may use it without a cycle.
package testkit

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// LogBuffer is an io.Writer for loggers that background goroutines write
// while the test reads it.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Reset empties the buffer.
func (l *LogBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

// MinWait is the least WaitFor waits before it fails a test. Its bounds
// are against hangs, never timing assertions: on a machine loaded many
// times over its cores, a child process can take seconds to start, so a
// bound a test states that is shorter is stretched to this.
const MinWait = time.Minute

// WaitFor polls cond every few milliseconds until it holds, failing the
// test when d (at least MinWait) passes first. A test that holds waits no
// longer for the stretch.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	d = max(d, MinWait)
	if !Within(d, cond) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

// Within polls cond every few milliseconds until it holds or d passes,
// and reports whether it held.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
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

// Fill fills the file system dir is on (a small MountTmpfs) to its last
// byte with a file in dir, and returns the function that removes the file
// again (run at the end of the test too).
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler-*")
	if err != nil {
		t.Fatal(err)
	}
	name := f.Name()
	removed := false
	free = func() {
		if !removed {
			removed = true
			if err := os.Remove(name); err != nil {
				t.Errorf("remove the filler: %v", err)
			}
		}
	}
	t.Cleanup(free)
	// Large writes first, then ever smaller ones for the last block's
	// slack, each until the file system is full.
	for _, size := range []int{64 << 10, 4 << 10, 512, 1} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					_ = f.Close()
					t.Fatalf("fill %s: %v", dir, err)
				}
				break
			}
		}
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fill %s: %v", dir, err)
	}
	return free
}
