package agentconn

import "sync"

// Ending is a connection's death, recorded once: the Done and Err of a
// Conn. Make it with NewEnding.
type Ending struct {
	once sync.Once
	done chan struct{}
	err  error
}

// NewEnding returns the ending of a live connection.
func NewEnding() *Ending { return &Ending{done: make(chan struct{})} }

// Done is closed once the connection has ended.
func (e *Ending) Done() <-chan struct{} { return e.done }

// Err returns why the connection ended, nil while it lives.
func (e *Ending) Err() error {
	select {
	case <-e.done:
		return e.err
	default:
		return nil
	}
}

// End ends the connection with err (ErrAgentGone when nil); only the
// first call counts, and a later one returns once it is over. before runs
// just ahead of Done closing, after just behind it; either may be nil.
func (e *Ending) End(err error, before, after func()) {
	e.once.Do(func() {
		if err == nil {
			err = ErrAgentGone
		}
		e.err = err
		if before != nil {
			before()
		}
		close(e.done)
		if after != nil {
			after()
		}
	})
}
