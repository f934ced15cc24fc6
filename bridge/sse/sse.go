// Package sse writes a Server-Sent Events stream from a watched
// fanout.Sub: the perception feed (/api/perception/feed) and the
// dashboard's turn feed (/ui/events) are both a Stream. The route keeps
// its own admission (its bound on clients, its 503s); Stream owns the
// wire: the headers, the frames (what is already queued goes out in one
// flush), a keepalive comment after a quiet interval, and the one last
// frame of a client the bus evicted for falling behind, after which the
// stream ends so that EventSource reconnects.
package sse

import (
	"bytes"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fanout"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// maxBatch bounds the bytes of queued frames written in one flush.
const maxBatch = 64 << 10

// Stream configures one client's stream.
type Stream[T any] struct {
	// Sub is the client's subscription (a fanout Watch); Stream closes it
	// only by returning: the caller defers its Close.
	Sub *fanout.Sub[T]
	// Frame appends v's frame ("data: …\n\n") to buf; it may leave buf
	// without one to skip v.
	Frame func(buf *bytes.Buffer, v T)
	// Hello is written before the first frame (a retry hint); "" is none.
	Hello string
	// Keepalive is the comment written after Every without a frame
	// (": keepalive\n\n").
	Keepalive string
	Every     time.Duration
	// Clock times Every; nil is the real clock.
	Clock clockwork.Clock
	// FellBehind appends the last frame of an evicted client.
	FellBehind func(buf *bytes.Buffer)
	// Stopping closes when the server shuts down; the stream ends then.
	Stopping <-chan struct{}
}

// Serve streams s to c's client until the client goes, the server stops,
// the subscription ends or a write fails. A writer that cannot flush is a
// 500 before anything is written.
func Serve[T any](c echo.Context, s Stream[T]) error {
	w := c.Response()
	flusher, ok := w.Writer.(http.Flusher)
	if !ok {
		return echo.NewHTTPError(http.StatusInternalServerError, "streaming unsupported")
	}
	if s.Clock == nil {
		s.Clock = clockwork.NewRealClock()
	}
	httpapi.StartEventStream(w)
	var buf bytes.Buffer
	write := func() bool {
		_, err := w.Write(buf.Bytes())
		buf.Reset()
		if err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	buf.WriteString(s.Hello)
	if !write() {
		return nil
	}
	ctx := c.Request().Context()
	ticker := s.Clock.NewTicker(s.Every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.Stopping:
			return nil
		case <-s.Sub.Done():
			return s.end(write, &buf)
		case v := <-s.Sub.C:
			select {
			case <-s.Sub.Done(): // evicted meanwhile: the queue is discarded
				return s.end(write, &buf)
			default:
			}
			s.Frame(&buf, v)
			// Write whatever else is already queued in the same flush.
			for more := true; more && buf.Len() < maxBatch; {
				select {
				case v := <-s.Sub.C:
					s.Frame(&buf, v)
				default:
					more = false
				}
			}
			if !write() {
				return nil
			}
			ticker.Reset(s.Every)
		case <-ticker.Chan():
			buf.WriteString(s.Keepalive)
			if !write() {
				return nil
			}
		}
	}
}

// end writes the FellBehind frame when the bus evicted the client (not
// when the bus closed).
func (s Stream[T]) end(write func() bool, buf *bytes.Buffer) error {
	if s.Sub.Evicted() {
		s.FellBehind(buf)
		write()
	}
	return nil
}
