package jsonrpc

import (
	"errors"
	"io"
	"sync"
)

// LockedWriter serialises whole frames onto a peer's input and bounds each
// write, so a child that stops reading cannot block the bridge forever
// (the pipe buffer is only 64 KiB). A timed-out write calls OnTimeout.
type LockedWriter struct {
	mu sync.Mutex

	// W is the peer's input; Deadline, when set, sets the deadline of
	// the next write.
	W         io.Writer
	Deadline  func() error
	OnTimeout func()
}

// Write writes p whole, after any write in progress.
func (w *LockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.Deadline != nil {
		_ = w.Deadline()
	}
	n, err := w.W.Write(p)
	if err != nil && w.OnTimeout != nil && isTimeout(err) {
		w.OnTimeout()
	}
	return n, err
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
