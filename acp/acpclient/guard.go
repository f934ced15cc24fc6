package acpclient

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

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
)

// stdoutGuard is the reader the SDK connection reads the child's stdout
// through. It reads lines of any length, drops non-JSON noise (legacy
// agents log on stdout), keeps oversize frames away from the SDK, answers
// requests the bridge does not serve, and handles notifications itself.
// It runs on the SDK's own reading goroutine: a frame reaches the SDK
// without a second goroutine or pipe in between, which would cost two
// thread wake-ups per frame.
//
// Notifications never reach the SDK. The SDK queues them for a goroutine
// of their own and, before returning a response, waits for that goroutine
// to finish the notifications received ahead of it (another goroutine
// started and joined per request): three thread wake-ups per turn. The
// guard instead calls the client's handler for each notification, in
// order, before it reads the next frame, so a notification is handled
// before any response or request sent after it is seen at all, and the
// SDK's queue, which closes the connection when it overflows, stays empty.
// Frames that arrive together (a reply's last chunks and its result) are
// handled in one go: the turn is woken once and forwards its chunks in one
// write.
type stdoutGuard struct {
	src    *bufio.Reader
	reply  io.Writer // the child's stdin, for answers the guard gives itself
	log    hclog.Logger
	noise  *childlog.Limiter
	onDrop func(reason string)
	// sdkLine and maxLine are sdkSafeLine and guardMaxLine, smaller in tests.
	sdkLine, maxLine int

	// notify handles one notification; it must not block for long (it
	// holds up the child's stdout).
	notify func(method string, params json.RawMessage)

	out     []byte        // the frame being handed to the SDK, not yet read
	frames  []byte        // out's backing array, reused between frames
	readErr error         // the error that ended src; returned once out is empty
	gate    chan struct{} // closed by open: the SDK reads nothing before
	done    <-chan struct{}
}

func newStdoutGuard(src io.Reader, reply io.Writer, log hclog.Logger, onDrop func(string), notify func(string, json.RawMessage), done <-chan struct{}) *stdoutGuard {
	return &stdoutGuard{
		src:     bufio.NewReaderSize(src, 64<<10),
		reply:   reply,
		log:     log,
		noise:   childlog.NewLimiter(log, 50, clockwork.NewRealClock()),
		onDrop:  onDrop,
		notify:  notify,
		sdkLine: sdkSafeLine,
		maxLine: guardMaxLine,
		done:    done,
		gate:    make(chan struct{}),
	}
}

// open lets the SDK's reader start. The SDK starts reading as soon as its
// connection is made, and its logger must be set before anything it reads
// can make it log.
func (g *stdoutGuard) open() { close(g.gate) }

// Read implements io.Reader for the SDK: the next forwarded frame (or
// what is left of it), newline-terminated. It reads and classifies child
// lines, handling notifications, until one is forwarded, and returns the
// child's read error (nil at EOF becomes io.EOF) once the frames before it
// are read.
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
	var head struct {
		jsonrpc.Head
		Params json.RawMessage `json:"params"`
	}
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
		g.notify(head.Method, head.Params)
		return nil
	default:
		g.noise.Emit(hclog.Warn, "agent sent a frame with neither id nor method")
		return nil
	}
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
