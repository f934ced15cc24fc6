package agentconn

import "sync"

// Background runs a connection's background goroutines (requests left to
// finish after their caller gave up, pings, answers) and waits for them
// when the connection is torn down. The zero value is ready to use.
type Background struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	closed bool
}

// Go runs f on a goroutine Wait waits for. It reports false, running
// nothing, once Wait has begun.
func (b *Background) Go(f func()) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	b.wg.Add(1) // under mu, so never after Wait has begun waiting
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		f()
	}()
	return true
}

// Wait refuses new goroutines and waits for those running to return.
func (b *Background) Wait() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}
