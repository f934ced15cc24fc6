// Package testkit holds the helpers every package's tests share: a log
// sink safe to write from background goroutines and a bounded polling
// wait. It lives under bridge/ with the rest of the shared plumbing, is
// imported only by tests, and imports nothing but the standard library, so
// any package's tests (acp's included) may use it without a cycle.
package testkit

import (
	"strings"
	"sync"
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

// WaitFor polls cond every few milliseconds until it holds, failing the
// test when d passes first.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
