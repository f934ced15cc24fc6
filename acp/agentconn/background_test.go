package agentconn

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// Wait waits for every goroutine Go started, and Go refuses (running
// nothing) once Wait has begun, also when asked from a goroutine of its
// own that Wait is waiting for.
func TestBackgroundWaitsAndRefusesAfter(t *testing.T) {
	var b Background
	release := make(chan struct{})
	var ran, refused atomic.Int32
	for range 4 {
		if !b.Go(func() { <-release; ran.Add(1) }) {
			t.Fatal("Go refused before Wait")
		}
	}
	late := make(chan bool, 1)
	b.Go(func() {
		<-release
		// Wait has begun by now: the test releases only once it has.
		late <- b.Go(func() { refused.Add(1) })
	})
	waited := make(chan struct{})
	go func() { b.Wait(); close(waited) }()
	testkit.WaitFor(t, 10*time.Second, "Wait to refuse new goroutines", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.closed
	})
	select {
	case <-waited:
		t.Fatal("Wait returned while goroutines were blocked")
	default:
	}
	close(release)
	testkit.Recv(t, 10*time.Second, waited, "Wait to return")
	if ok := testkit.Recv(t, 10*time.Second, late, "the late Go's answer"); ok {
		t.Error("Go started a goroutine after Wait had begun")
	}
	if ran.Load() != 4 || refused.Load() != 0 {
		t.Errorf("ran %d of 4, refused goroutine ran %d times: want 4 and 0", ran.Load(), refused.Load())
	}
	if b.Go(func() { refused.Add(1) }) || refused.Load() != 0 {
		t.Error("Go ran f after Wait returned")
	}
}
