package acpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/childlog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

const (
	// sdkSafeLine is the largest line handed to the SDK, comfortably below
	// its 10 MiB scanner limit: one longer line ends the SDK's connection.
	sdkSafeLine = 8 << 20
	// guardMaxLine is the largest line the guard buffers at all; longer lines
	// are discarded unread.
	guardMaxLine = 64 << 20
	// paceHigh is how many notifications may wait in the SDK's 1024-slot
	// queue before the guard stops reading the child, so that queue never
	// overflows however fast the child writes.
	paceHigh = 512
)

// stdoutGuard is the reader the SDK connection reads the child's stdout
// through. It reads lines of any length, drops non-JSON noise (legacy
// agents log on stdout), keeps oversize frames away from the SDK, answers
// requests the bridge does not serve, and paces notifications so the
// SDK's bounded queue can never overflow. It filters on the SDK's own
// reading goroutine: a frame reaches the SDK without a second goroutine
// or pipe in between, which would cost two thread wake-ups per frame.
type stdoutGuard struct {
	src    *bufio.Reader
	reply  io.Writer // the child's stdin, for answers the guard gives itself
	log    hclog.Logger
	noise  *childlog.Limiter
	onDrop func(reason string)
	// sdkLine and maxLine are sdkSafeLine and guardMaxLine, smaller in tests.
	sdkLine, maxLine int

	out     []byte        // the frame being handed to the SDK, not yet read
	frames  []byte        // out's backing array, reused between frames
	readErr error         // the error that ended src; returned once out is empty
	paced   bool          // the last frame was a notification: pace before the next
	gate    chan struct{} // closed by open: the SDK reads nothing before

	forwarded atomic.Uint64 // notifications handed to the SDK (written by the reading goroutine)
	handled   atomic.Uint64 // notifications the dispatcher has finished
	wake      chan struct{} // cap 1; dispatcher → guard
	done      <-chan struct{}

	// Barrier waiters (see waitHandled).
	waiters  atomic.Int32
	mu       sync.Mutex
	progress chan struct{} // closed at the next handled notification
}

func newStdoutGuard(src io.Reader, reply io.Writer, log hclog.Logger, onDrop func(string), done <-chan struct{}) *stdoutGuard {
	return &stdoutGuard{
		src:     bufio.NewReaderSize(src, 64<<10),
		reply:   reply,
		log:     log,
		noise:   childlog.NewLimiter(log, 50, clockwork.NewRealClock()),
		onDrop:  onDrop,
		sdkLine: sdkSafeLine,
		maxLine: guardMaxLine,
		wake:    make(chan struct{}, 1),
		done:    done,
		gate:    make(chan struct{}),
	}
}

// open lets the SDK's reader start. The SDK starts reading as soon as its
// connection is made, and its logger must be set before anything it reads
// can make it log.
func (g *stdoutGuard) open() { close(g.gate) }

// notificationHandled is called by the dispatcher after each notification.
func (g *stdoutGuard) notificationHandled() {
	g.handled.Add(1)
	select {
	case g.wake <- struct{}{}:
	default:
	}
	if g.waiters.Load() > 0 {
		g.mu.Lock()
		if g.progress != nil {
			close(g.progress)
			g.progress = nil
		}
		g.mu.Unlock()
	}
}

// barrier waits until every notification forwarded so far has been
// handled, within ctx and at most limit. The SDK runs an inbound request at
// once on its own goroutine, while notifications are processed in order on
// another, so a request can overtake the notifications sent before it
// (a permission request its tool_call update).
func (g *stdoutGuard) barrier(ctx context.Context, limit time.Duration) {
	target := g.forwarded.Load()
	if g.handled.Load() >= target {
		return
	}
	g.waiters.Add(1)
	defer g.waiters.Add(-1)
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for {
		g.mu.Lock()
		if g.handled.Load() >= target {
			g.mu.Unlock()
			return
		}
		if g.progress == nil {
			g.progress = make(chan struct{})
		}
		ch := g.progress
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-g.done:
			return
		case <-timeout.C:
			return
		}
	}
}

// Read implements io.Reader for the SDK: the next forwarded frame (or
// what is left of it), newline-terminated. It reads and classifies child
// lines until one is forwarded, blocks while the SDK's queue is full, and
// returns the child's read error (nil at EOF becomes io.EOF) once the
// frames before it are read.
func (g *stdoutGuard) Read(p []byte) (int, error) {
	if g.gate != nil {
		select {
		case <-g.gate:
			g.gate = nil
		case <-g.done:
			return 0, agentconn.ErrAgentGone
		}
	}
	for len(g.out) == 0 {
		if g.readErr != nil {
			return 0, g.readErr
		}
		if g.paced {
			g.paced = false
			if err := g.pace(); err != nil {
				g.readErr = err
				return 0, err
			}
			if g.src.Buffered() > 0 {
				// More frames are already here (a reply's last chunk and
				// its result): let the notification just queued be
				// handled before the next frame is parsed, so a chunk is
				// not overtaken by the result behind it.
				runtime.Gosched()
			}
		}
		line, tooLong, err := jsonrpc.ReadLine(g.src, g.maxLine)
		if len(line) > 0 || tooLong {
			if ferr := g.frame(line, tooLong); ferr != nil {
				err = ferr
			}
		}
		if err != nil {
			g.readErr = err
		}
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
	return n, nil
}

func (g *stdoutGuard) frame(line []byte, tooLong bool) error {
	if tooLong {
		g.log.Warn("discarded agent stdout line over the size limit", "limit", g.maxLine)
		g.onDrop("oversize")
		return nil
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil
	}
	var head jsonrpc.Head
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &head) != nil {
		// Cleaned like stderr (legacy agents colour these tracing lines),
		// secrets redacted (ZeroClaw prints its OTP enrollment URI here).
		g.noise.Emit(hclog.Info, childlog.NoiseLine(string(trimmed[:min(len(trimmed), 4096)])))
		return nil
	}
	oversize := len(trimmed) > g.sdkLine
	switch {
	case head.ID != nil && head.Method == "": // response
		if oversize {
			g.log.Warn("agent response over the size limit replaced by an error", "bytes", len(trimmed), "id", string(*head.ID))
			g.forward(jsonrpc.ErrorFrame(*head.ID, jsonrpc.CodeInternal, fmt.Sprintf("agent response too large (%d bytes)", len(trimmed))))
			return nil
		}
		g.forward(trimmed)
		return nil
	case head.ID != nil: // request from the agent
		if head.Method != methodRequestPermission {
			return g.answer(jsonrpc.ErrorFrame(*head.ID, jsonrpc.CodeMethodNotFound, "Method not found: "+head.Method))
		}
		if oversize {
			return g.answer(jsonrpc.ErrorFrame(*head.ID, jsonrpc.CodeInternal, "request too large"))
		}
		g.forward(trimmed)
		return nil
	case head.Method == "$/cancel_request":
		g.forward(trimmed) // handled synchronously by the SDK, never queued
		return nil
	case head.Method == methodRequestPermission:
		g.log.Warn("ignoring permission request sent as a notification")
		return nil
	case head.Method != "": // notification
		if oversize {
			g.log.Warn("dropped agent notification over the size limit", "method", head.Method, "bytes", len(trimmed))
			g.onDrop("oversize")
			return nil
		}
		g.forward(trimmed)
		g.forwarded.Add(1)
		g.paced = true
		return nil
	default:
		g.noise.Emit(hclog.Warn, "agent sent a frame with neither id nor method")
		return nil
	}
}

// pace blocks while too many notifications wait in the SDK's queue.
func (g *stdoutGuard) pace() error {
	for g.forwarded.Load()-g.handled.Load() >= paceHigh {
		select {
		case <-g.wake:
		case <-g.done:
			return agentconn.ErrAgentGone
		}
	}
	return nil
}

// forward queues frame for the SDK's next reads. The buffer is reused
// unless a huge frame grew it, which is then let go.
func (g *stdoutGuard) forward(frame []byte) {
	if cap(g.frames) > 256<<10 {
		g.frames = nil
	}
	g.frames = append(append(g.frames[:0], frame...), '\n')
	g.out = g.frames
}

func (g *stdoutGuard) answer(frame []byte) error {
	_, err := g.reply.Write(append(frame, '\n'))
	if err != nil {
		g.log.Debug("could not answer agent request", "error", err)
	}
	return nil
}
