package bridgeapp

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// readableDurations wraps a JSON logger so durations read "1.5s" or "250ms"
// instead of bare nanoseconds (encoding/json writes a time.Duration as its
// integer); the text format already prints them with units.
type readableDurations struct{ hclog.Logger }

func withReadableDurations(l hclog.Logger) hclog.Logger { return readableDurations{l} }

// durationsAsText returns args with every time.Duration as its String,
// copying the slice (the caller's may be shared) only when there is one.
func durationsAsText(args []any) []any {
	copied := false
	for i, a := range args {
		if d, ok := a.(time.Duration); ok {
			if !copied {
				args, copied = append([]any(nil), args...), true
			}
			args[i] = d.String()
		}
	}
	return args
}

func (r readableDurations) Log(level hclog.Level, msg string, args ...any) {
	r.Logger.Log(level, msg, durationsAsText(args)...)
}
func (r readableDurations) Trace(msg string, args ...any) {
	r.Logger.Trace(msg, durationsAsText(args)...)
}
func (r readableDurations) Debug(msg string, args ...any) {
	r.Logger.Debug(msg, durationsAsText(args)...)
}
func (r readableDurations) Info(msg string, args ...any) {
	r.Logger.Info(msg, durationsAsText(args)...)
}
func (r readableDurations) Warn(msg string, args ...any) {
	r.Logger.Warn(msg, durationsAsText(args)...)
}
func (r readableDurations) Error(msg string, args ...any) {
	r.Logger.Error(msg, durationsAsText(args)...)
}
func (r readableDurations) With(args ...any) hclog.Logger {
	return readableDurations{r.Logger.With(durationsAsText(args)...)}
}
func (r readableDurations) Named(name string) hclog.Logger {
	return readableDurations{r.Logger.Named(name)}
}
func (r readableDurations) ResetNamed(name string) hclog.Logger {
	return readableDurations{r.Logger.ResetNamed(name)}
}

// logFlushDelay is how long a log line may wait in logWriter's buffer.
const logFlushDelay = 2 * time.Millisecond

// logBufferMax is how much logWriter holds before a Write flushes in line.
const logBufferMax = 256 << 10

// logWriter takes log lines into a buffer and writes them out at most
// logFlushDelay later, in one write for all lines of that window. A voice
// turn logs two lines; written in line, each was a system call on the
// request's path. Lines keep their order; a burst past logBufferMax is
// written by the logger's caller, after the buffer, so memory stays
// bounded. Warnings and errors are written at once with what is buffered
// before them: they are rare, and the lines before a crash are the ones
// an operator needs. Close writes what is left (call it before the
// process exits).
type logWriter struct {
	w     io.Writer
	delay time.Duration // logFlushDelay; tests that count writes make it long

	mu     sync.Mutex
	buf    []byte
	armed  bool // a flush is scheduled
	closed bool
	timer  *time.Timer
}

func newLogWriter(w io.Writer) *logWriter {
	lw := &logWriter{w: w, delay: logFlushDelay}
	lw.timer = time.AfterFunc(time.Hour, lw.flush)
	lw.timer.Stop()
	return lw
}

// Write implements io.Writer; it never fails (a failed flush is dropped,
// as a failed write to stderr was).
func (lw *logWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.closed || len(lw.buf)+len(p) > logBufferMax {
		lw.writeLocked()
		_, _ = lw.w.Write(p)
		return len(p), nil
	}
	lw.buf = append(lw.buf, p...)
	if urgent(p) {
		lw.writeLocked()
		return len(p), nil
	}
	if !lw.armed {
		lw.armed = true
		lw.timer.Reset(lw.delay)
	}
	return len(p), nil
}

// urgent reports a warning or error line, in hclog's text or JSON format.
func urgent(p []byte) bool {
	return bytes.Contains(p, []byte("[WARN]")) || bytes.Contains(p, []byte("[ERROR]")) ||
		bytes.Contains(p, []byte(`"@level":"warn"`)) || bytes.Contains(p, []byte(`"@level":"error"`))
}

func (lw *logWriter) flush() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.writeLocked()
}

func (lw *logWriter) writeLocked() {
	lw.armed = false
	if len(lw.buf) == 0 {
		return
	}
	_, _ = lw.w.Write(lw.buf)
	if cap(lw.buf) > 64<<10 {
		lw.buf = nil // a burst's buffer is let go
	} else {
		lw.buf = lw.buf[:0]
	}
}

// Close writes what is buffered; later lines are written in line.
func (lw *logWriter) Close() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.timer.Stop()
	lw.closed = true
	lw.writeLocked()
	return nil
}
