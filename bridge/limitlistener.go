package bridge

import (
	"errors"
	"net"
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
// A connection that finds no slot is parked: it waits, FIFO with the others,
// for a slot to free, at most wait, then is closed. At most max connections
// are parked; past that a newcomer is closed at once. A parked connection
// costs a file descriptor and a small goroutine, none of the server's
// per-connection buffers.
type limitListener struct {
	net.Listener
	slots   chan struct{}
	reserve chan struct{}
	parked  chan struct{}
	wait    time.Duration

	conns     chan net.Conn
	errs      chan error
	done      chan struct{}
	closeOnce sync.Once

	refused  atomic.Int64
	reported atomic.Int64 // unix nanos of the last report
	report   func(n int64)
}

// reportEvery spaces the connection-limit log lines.
const reportEvery = time.Minute

func newLimitListener(ln net.Listener, max, reserve int, wait time.Duration, report func(int64)) *limitListener {
	l := &limitListener{
		Listener: ln,
		slots:    make(chan struct{}, max),
		reserve:  make(chan struct{}, reserve),
		parked:   make(chan struct{}, max),
		wait:     wait,
		conns:    make(chan net.Conn),
		errs:     make(chan error),
		done:     make(chan struct{}),
		report:   report,
	}
	go l.acceptLoop()
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
	l.closeOnce.Do(func() { close(l.done) })
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
		if release, ok := l.tryAcquire(c); ok {
			l.deliver(&limitedConn{Conn: c, release: release})
			continue
		}
		select {
		case l.parked <- struct{}{}:
			go l.park(c)
		default:
			l.turnAway(c)
		}
	}
}

// tryAcquire takes an ordinary slot, or a reserved one for a loopback peer.
func (l *limitListener) tryAcquire(c net.Conn) (func(), bool) {
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, true
	default:
	}
	if isLoopback(c.RemoteAddr()) {
		select {
		case l.reserve <- struct{}{}:
			return func() { <-l.reserve }, true
		default:
		}
	}
	return nil, false
}

// park waits for an ordinary slot for c.
func (l *limitListener) park(c net.Conn) {
	defer func() { <-l.parked }()
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		l.deliver(&limitedConn{Conn: c, release: func() { <-l.slots }})
	case <-t.C:
		l.turnAway(c)
	case <-l.done:
		_ = c.Close()
	}
}

// deliver hands c to Accept, or closes it when the listener is closing.
func (l *limitListener) deliver(c *limitedConn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// turnAway closes a connection that got no slot and reports it, at most
// once per reportEvery.
func (l *limitListener) turnAway(c net.Conn) {
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
