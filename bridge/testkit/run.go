package testkit

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Runner is a component that runs until its context ends: a supervisor,
// a pool.
type Runner interface {
	Run(ctx context.Context) error
}

// Run runs r in its own goroutine until stop, which ends its context and
// returns what r.Run returned, failing the test when it has not returned
// within limit (at least MinWait) of that. stop also runs when the test
// ends; later calls return the first one's error.
func Run(t testing.TB, r Runner, limit time.Duration) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		t.Helper()
		once.Do(func() {
			cancel()
			err = Recv(t, limit, done, "Run did not return after its context ended")
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// RunAll runs each of rs in its own goroutine until stop, which ends
// them (each within MinWait, or the test fails), checks that the child
// process pid names (read before they are ended; 0 for none) no longer
// exists and that no goroutine started since RunAll was called is left,
// and returns how long they took to return. stop also runs when the test
// ends; a second call returns the first's duration.
func RunAll(t testing.TB, pid func() int, rs ...Runner) (stop func() time.Duration) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	done := make([]chan struct{}, len(rs))
	for i, r := range rs {
		done[i] = make(chan struct{})
		go func() { defer close(done[i]); _ = r.Run(ctx) }()
	}
	var once sync.Once
	var took time.Duration
	stop = func() time.Duration {
		once.Do(func() {
			p := pid()
			begin := time.Now()
			cancel()
			for _, ch := range done {
				Recv(t, MinWait, ch, "a runner did not stop")
			}
			took = time.Since(begin)
			if p > 0 {
				if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("child pid %d still exists after stop (kill 0: %v)", p, err)
				}
			}
			goleak.VerifyNone(t, ignore)
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return stop
}
