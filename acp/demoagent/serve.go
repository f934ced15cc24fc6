package demoagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"
)

// Options tune the demo agent. The zero value works.
type Options struct {
	// ChunkDelay is the pause between streamed chunks (0 = none; the CLI
	// default is 40ms).
	ChunkDelay time.Duration
	// Logger receives diagnostics, the SDK's included; nil discards. Nothing
	// is ever logged to out, which is the protocol channel.
	Logger hclog.Logger
	// QuietReady leaves out ServeSteerable's __SIDECAR_READY__ stderr
	// marker, as the sidecar's --quiet-ready flag does: the bridge then
	// keys off the lifecycle.ready notification alone.
	QuietReady bool
}

// shutdownGrace bounds how long Serve waits, once it stops, for the reader,
// the running turns and a write in progress. Turns end at once when
// cancelled, so it only matters when in cannot be interrupted or nobody
// reads out.
const shutdownGrace = 2 * time.Second

// Serve runs the agent on the given streams (in = what the client writes,
// out = what the client reads) until in reaches EOF / the peer disconnects,
// or ctx ends. It returns nil on a clean EOF and when ctx ends, and a wrapped
// error if reading in fails.
//
// When it returns, every goroutine it started has finished or is about to,
// without blocking: running turns have been cancelled and have ended, the
// reader has stopped, and writes to out are refused from then on (responses
// still owed at that moment are dropped). Serve never closes out.
//
// To stop reading when ctx ends, Serve interrupts in: it sets a read
// deadline in the past if in supports one (net.Conn, pollable *os.File),
// otherwise closes it if it is an io.Closer (e.g. *io.PipeReader). A read
// that cannot be interrupted, such as one blocked on a terminal or a
// blocking pipe on stdin, is abandoned: its goroutine exits when in next
// yields, and whatever it reads is discarded.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	return serve(ctx, in, out, opts, hooks{})
}

func serve(ctx context.Context, in io.Reader, out io.Writer, opts Options, h hooks) error {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	life, endLife := context.WithCancel(context.Background())
	defer endLife()

	src := newInput(in)
	dst := newOutput(out)
	a := newAgent(life, opts.ChunkDelay, log, h)
	conn := acp.NewAgentSideConnection(a, dst, src)
	// The connection's goroutines are already running, but none reads the
	// logger or calls the agent before the first line arrives, and src
	// holds every read back until open: so these writes happen first.
	conn.SetLogger(slog.New(newSlogHandler(log.Named("acp"))))
	a.out = conn
	src.open()
	log.Debug("demo agent serving", "chunk_delay", opts.ChunkDelay)

	waitReader := true
	select {
	case <-conn.Done():
	case <-ctx.Done():
		waitReader = src.interrupt()
		log.Debug("context ended; stopping", "cause", context.Cause(ctx), "reader_interrupted", waitReader)
	}

	endLife()
	idle := a.stop()
	grace, cancelGrace := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancelGrace()
	if waitReader {
		select {
		case <-conn.Done():
		case <-grace.Done():
			log.Warn("reader still blocked after shutdown grace; abandoning it")
		}
	}
	select {
	case <-idle:
	case <-grace.Done():
		log.Warn("turns still running after shutdown grace (is anyone reading out?)")
	}
	if !dst.close(grace.Done()) {
		log.Warn("write to out still blocked after shutdown grace (is anyone reading out?)")
	}
	if err := src.failure(); err != nil {
		return fmt.Errorf("demo agent: reading requests: %w", err)
	}
	log.Debug("demo agent stopped")
	return nil
}

// input is the SDK's view of in. Reads wait until the connection is wired
// up, report EOF once Serve stops reading, and record the first read error.
type input struct {
	r       io.Reader
	ready   chan struct{} // closed by open
	stopped chan struct{} // closed by interrupt

	mu  sync.Mutex
	err error // first read error other than EOF, before stopped
}

func newInput(r io.Reader) *input {
	return &input{r: r, ready: make(chan struct{}), stopped: make(chan struct{})}
}

func (in *input) open() { close(in.ready) }

// Read implements io.Reader.
func (in *input) Read(p []byte) (int, error) {
	select {
	case <-in.ready:
	case <-in.stopped:
		return 0, io.EOF
	}
	select {
	case <-in.stopped:
		return 0, io.EOF
	default:
	}
	n, err := in.r.Read(p)
	select {
	case <-in.stopped:
		// Serve has stopped (maybe by interrupting this very read):
		// whatever came in is no longer wanted.
		return 0, io.EOF
	default:
	}
	if err != nil && !errors.Is(err, io.EOF) {
		in.mu.Lock()
		if in.err == nil {
			in.err = err
		}
		in.mu.Unlock()
	}
	return n, err
}

// interrupt makes every later Read report EOF and tries to wake a Read
// blocked in r. It reports whether the blocked read, if any, can be
// expected to return.
func (in *input) interrupt() bool {
	close(in.stopped)
	if d, ok := in.r.(interface{ SetReadDeadline(time.Time) error }); ok {
		if d.SetReadDeadline(time.Now()) == nil {
			return true
		}
	}
	if _, ok := in.r.(*os.File); ok {
		// A file without deadline support is in blocking mode; closing
		// it would not wake the read.
		return false
	}
	if c, ok := in.r.(io.Closer); ok {
		_ = c.Close() // best effort: the read error that follows is ignored
		return true
	}
	return false
}

// failure returns the first read error seen, if any.
func (in *input) failure() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.err
}

// errServeStopped refuses writes once Serve has returned.
var errServeStopped = errors.New("demo agent: serve has stopped")

// output is the SDK's view of out; close refuses later writes, so no
// goroutine left behind by Serve can block on out.
type output struct {
	w    io.Writer
	lock chan struct{} // one-slot semaphore guarding w and closed
	// closed is guarded by lock.
	closed bool
}

func newOutput(w io.Writer) *output {
	return &output{w: w, lock: make(chan struct{}, 1)}
}

// Write implements io.Writer.
func (o *output) Write(p []byte) (int, error) {
	o.lock <- struct{}{}
	defer func() { <-o.lock }()
	if o.closed {
		return 0, errServeStopped
	}
	return o.w.Write(p)
}

// close waits for a write in progress, then refuses later writes. It gives
// up when abandon is closed first and reports whether it succeeded.
func (o *output) close(abandon <-chan struct{}) bool {
	select {
	case o.lock <- struct{}{}:
		o.closed = true
		<-o.lock
		return true
	case <-abandon:
		return false
	}
}
