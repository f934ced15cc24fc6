package bridge

import (
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener bounds the connections the HTTP server holds open. Each
// served connection takes one of max ordinary slots; loopback peers may
// also take one of reserve extra slots, because an operator checking
// /health from the robot's host must get in while LAN clients hold every
// ordinary slot (netutil.LimitListener cannot tell peers apart: it stops
// accepting, which leaves loopback behind the LAN in the kernel backlog).
//
// A connection that finds no slot is parked: it waits, first come first
// served, for an ordinary slot to free, at most wait, then is closed. At
// most max connections are parked; past that a newcomer is closed at once.
// A parked connection costs its file descriptor and a list entry — no
// goroutine and none of the server's per-connection buffers.
type limitListener struct {
	net.Listener
	wait time.Duration

	// mu also covers every send on conns, so once Close has drained
	// conns under it no connection can be handed over and then forgotten.
	mu          sync.Mutex
	closed      bool
	free        int // ordinary slots free
	reserveFree int // loopback-only slots free
	maxParked   int
	parked      []parkedConn // oldest first

	conns     chan net.Conn // connections holding a slot, for Accept
	errs      chan error
	done      chan struct{}
	closeOnce sync.Once

	refused  atomic.Int64
	reported atomic.Int64 // unix nanos of the last report
	report   func(n int64)
	counted  func() // per connection turned away; nil: none
}

type parkedConn struct {
	c  net.Conn
	at time.Time
}

// reportEvery spaces the connection-limit log lines.
const reportEvery = time.Minute

// newLimitListener wraps ln. report gets, at most once per reportEvery, how
// many connections were turned away since the last report (for a log
// line); counted runs for each one (for a metric). Either may be nil.
func newLimitListener(ln net.Listener, max, reserve int, wait time.Duration, report func(int64), counted func()) *limitListener {
	l := &limitListener{
		Listener:    ln,
		wait:        wait,
		free:        max,
		reserveFree: reserve,
		maxParked:   max,
		// Every connection in the channel holds a slot, so it never holds
		// more than max+reserve and a release never blocks.
		conns:   make(chan net.Conn, max+reserve),
		errs:    make(chan error),
		done:    make(chan struct{}),
		report:  report,
		counted: counted,
	}
	go l.acceptLoop()
	go l.expireLoop()
	return l
}

// Accept returns the next connection that holds a slot.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; parked connections are closed.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.mu.Lock()
		l.closed = true
		parked := l.parked
		l.parked = nil
		var unaccepted []net.Conn // handed over but never accepted
		for len(l.conns) > 0 {
			unaccepted = append(unaccepted, <-l.conns)
		}
		l.mu.Unlock()
		for _, p := range parked {
			_ = p.c.Close()
		}
		for _, c := range unaccepted {
			_ = c.Close()
		}
	})
	return l.Listener.Close()
}

func (l *limitListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case l.errs <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: the server logs the
			// error; pause so the loop does not spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.admit(c)
	}
}

// admit gives c a slot, parks it, or turns it away. A connection that
// arrives while the listener closes is closed, not parked or handed over.
// The sends on conns happen under mu and never block: conns has room for
// every slot.
func (l *limitListener) admit(c net.Conn) {
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		_ = c.Close()
	case l.free > 0 && len(l.parked) == 0:
		l.free--
		l.conns <- &limitedConn{Conn: c, release: l.releaseOrdinary}
		l.mu.Unlock()
	case l.reserveFree > 0 && isLoopback(c.RemoteAddr()):
		l.reserveFree--
		l.conns <- &limitedConn{Conn: c, release: l.releaseReserve}
		l.mu.Unlock()
	case len(l.parked) < l.maxParked:
		l.parked = append(l.parked, parkedConn{c, time.Now()})
		l.mu.Unlock()
	default:
		l.mu.Unlock()
		l.turnAway(c)
	}
}

// releaseOrdinary hands a freed ordinary slot to the oldest parked
// connection, or marks it free.
func (l *limitListener) releaseOrdinary() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.parked) == 0 {
		l.free++
		return
	}
	p := l.parked[0]
	l.parked = l.parked[1:]
	l.conns <- &limitedConn{Conn: p.c, release: l.releaseOrdinary}
}

func (l *limitListener) releaseReserve() {
	l.mu.Lock()
	l.reserveFree++
	l.mu.Unlock()
}

// expireLoop closes connections parked for longer than wait.
func (l *limitListener) expireLoop() {
	t := time.NewTicker(max(l.wait/10, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case now := <-t.C:
			l.mu.Lock()
			n := 0
			for n < len(l.parked) && now.Sub(l.parked[n].at) >= l.wait {
				n++
			}
			expired := slices.Clone(l.parked[:n])
			l.parked = slices.Delete(l.parked, 0, n)
			l.mu.Unlock()
			for _, p := range expired {
				l.turnAway(p.c)
			}
		}
	}
}

// turnAway closes a connection that got no slot and reports it, at most
// once per reportEvery.
func (l *limitListener) turnAway(c net.Conn) {
	// Counted before the close, so whoever sees the connection end also
	// sees it counted.
	if l.counted != nil {
		l.counted()
	}
	_ = c.Close()
	l.refused.Add(1)
	now := time.Now().UnixNano()
	last := l.reported.Load()
	if now-last >= int64(reportEvery) && l.reported.CompareAndSwap(last, now) && l.report != nil {
		l.report(l.refused.Swap(0))
	}
}

// limitedConn frees its slot when closed (once, however often Close runs).
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// isLoopback reports whether addr is a loopback TCP peer.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
