package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by a call the connection ended under.
var ErrClosed = errors.New("jsonrpc: connection closed")

// maxLate bounds the given-up calls remembered for their late answers.
const maxLate = 64

// Options are a Conn's handlers. Each runs on the reader goroutine, in
// wire order, and must not block (answers are written from elsewhere when
// the peer may not be reading).
type Options struct {
	// MaxLine bounds one line read; a longer one is discarded unread and
	// reported to Oversize. Zero means 64 MiB.
	MaxLine int
	// Handle receives every frame that is not the answer to a call of
	// this Conn: requests, notifications, and answers nobody waits for.
	Handle func(m *Message)
	// Noise receives a line (trimmed) that is not a JSON-RPC frame: err
	// is why it is not JSON, nil for JSON that is not an object.
	Noise func(line []byte, err error)
	// Oversize is told of each line over MaxLine.
	Oversize func()
	// Received, when set, sees every line read (trimmed, not empty)
	// before it is handled: a fake records what it was sent.
	Received func(line []byte)
}

// CallOptions refine one call.
type CallOptions struct {
	// OnResult runs on the reader goroutine when a result arrives, before
	// the next frame is read; its error is the call's.
	OnResult func(json.RawMessage) error
	// OnLate, when set, keeps a call given up by its context: if its
	// answer still comes, OnLate gets it on the reader goroutine.
	OnLate func(*Message)
}

// Conn is one line-delimited JSON-RPC 2.0 connection: Run reads the
// peer's frames; every other method may be called from any goroutine.
type Conn struct {
	w    io.Writer
	wmu  sync.Mutex
	opts Options

	nextID atomic.Int64
	stop   atomic.Bool // set by StopReading

	mu      sync.Mutex
	pending map[int64]*call
	late    map[int64]func(*Message)
	closed  bool
}

type call struct {
	ch       chan reply // cap 1
	onResult func(json.RawMessage) error
}

type reply struct {
	result json.RawMessage
	err    error
}

// NewConn returns a connection writing whole frames to w, one Write per
// frame, serialised.
func NewConn(w io.Writer, opts Options) *Conn {
	if opts.MaxLine <= 0 {
		opts.MaxLine = 64 << 20
	}
	return &Conn{w: w, opts: opts, pending: make(map[int64]*call), late: make(map[int64]func(*Message))}
}

// WriteLine writes one line as it is (a frame built by hand, or noise a
// fake puts on the wire).
func (c *Conn) WriteLine(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(line[:len(line):len(line)], '\n'))
	return err
}

// Send writes one message.
func (c *Conn) Send(m Message) error {
	b, err := Encode(m)
	if err != nil {
		return err
	}
	return c.WriteLine(b)
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	m, err := NewNotification(method, params)
	if err != nil {
		return err
	}
	return c.Send(m)
}

// Reply answers request id with result, or err when not nil.
func (c *Conn) Reply(id json.RawMessage, result any, err *Error) error {
	m, e := NewResponse(id, result, err)
	if e != nil {
		return e
	}
	return c.Send(m)
}

// Post sends a request whose answer nobody waits for: it arrives as an
// answer nobody waits for, at Options.Handle.
func (c *Conn) Post(method string, params any) error {
	m, err := NewRequest(IntID(c.nextID.Add(1)), method, params)
	if err != nil {
		return err
	}
	return c.Send(m)
}

// Call sends a request and waits, within ctx, for its answer: the result,
// an *Error the peer answered, OnResult's error, the writer's error,
// ctx's error, or ErrClosed.
func (c *Conn) Call(ctx context.Context, method string, params any, opts CallOptions) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	m, err := NewRequest(IntID(id), method, params)
	if err != nil {
		return nil, err
	}
	cl := &call{ch: make(chan reply, 1), onResult: opts.OnResult}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.pending[id] = cl
	c.mu.Unlock()
	if err := c.Send(m); err != nil {
		c.forget(id, nil)
		return nil, err
	}
	select {
	case r := <-cl.ch:
		return r.result, r.err
	case <-ctx.Done():
		c.forget(id, opts.OnLate)
		return nil, ctx.Err()
	}
}

// forget removes a call given up; with late set, a call still unanswered
// is remembered for its answer, the table bounded by dropping others.
func (c *Conn) forget(id int64, late func(*Message)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[id] == nil {
		return // answered meanwhile
	}
	delete(c.pending, id)
	if late == nil || c.closed {
		return
	}
	for k := range c.late {
		if len(c.late) < maxLate {
			break
		}
		delete(c.late, k)
	}
	c.late[id] = late
}

// Close fails every pending call with ErrClosed and refuses new ones. The
// owner closes the connection once the peer is gone (Run does not, so the
// owner can record why first).
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for id, cl := range c.pending {
		delete(c.pending, id)
		cl.ch <- reply{err: ErrClosed}
	}
	clear(c.late)
}

// StopReading makes Run return nil after the frame being handled: a
// server's handler calls it for a request that ends the session.
func (c *Conn) StopReading() { c.stop.Store(true) }

// Run reads frames from r until it ends and returns the read error
// (io.EOF at a clean end), or nil once StopReading was called.
func (c *Conn) Run(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := ReadLine(br, c.opts.MaxLine)
		switch {
		case tooLong:
			if c.opts.Oversize != nil {
				c.opts.Oversize()
			}
		case len(line) > 0:
			c.frame(line)
		}
		if c.stop.Load() {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// frame dispatches one line.
func (c *Conn) frame(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if c.opts.Received != nil {
		c.opts.Received(line)
	}
	m, ok, err := Decode(line)
	if err != nil || !ok {
		if c.opts.Noise != nil {
			c.opts.Noise(line, err)
		}
		return
	}
	if m.Method == "" && m.HasID() && c.answer(&m) {
		return
	}
	if c.opts.Handle != nil {
		c.opts.Handle(&m)
	}
}

// answer hands an answer to its call and reports whether one took it.
func (c *Conn) answer(m *Message) bool {
	id, ok := ParseID(m.ID)
	if !ok {
		return false
	}
	c.mu.Lock()
	cl := c.pending[id]
	late := c.late[id]
	delete(c.pending, id)
	delete(c.late, id)
	c.mu.Unlock()
	switch {
	case cl != nil:
		var r reply
		switch {
		case m.Error != nil:
			r.err = m.Error
		case cl.onResult != nil:
			r.result, r.err = m.Result, cl.onResult(m.Result)
		default:
			r.result = m.Result
		}
		cl.ch <- r
		return true
	case late != nil:
		late(m)
		return true
	}
	return false
}
