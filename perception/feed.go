package perception

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/sse"
)

// FellBehind is the name of the last event a feed client gets when it is
// evicted for falling behind.
const FellBehind = "fell_behind"

// feed is GET /api/perception/feed: every bus event as an SSE data frame,
// a keepalive comment after Keepalive of silence (sse.Serve). It ends
// when the client goes, the server stops, or the client falls behind
// (then after one fell_behind event, so EventSource reconnects).
func (s *Service) feed(c echo.Context) error {
	select {
	case s.feedSlots <- struct{}{}:
		defer func() { <-s.feedSlots }()
	default:
		// Refused before any stream starts: each client holds a socket, a
		// goroutine and a queue, and a LAN client could open thousands.
		return httpapi.NewError(http.StatusServiceUnavailable,
			fmt.Sprintf("too many perception feed clients (limit %d); try again later", cap(s.feedSlots)))
	}
	sub := s.bus.Watch(0)
	defer sub.Close()
	return sse.Serve(c, sse.Stream[Event]{Sub: sub, Frame: s.frame, Keepalive: ": keepalive\n\n", Every: s.cfg.Keepalive,
		Clock: s.clock, Stopping: s.cfg.Stopping, FellBehind: func(buf *bytes.Buffer) {
			s.frame(buf, Event{Name: FellBehind, Data: DataOf(map[string]any{"queue": FeedQueue}), TS: epochSeconds(s.clock.Now())})
		}})
}

// frame appends ev's feed frame to buf; an event that cannot be encoded
// is logged and skipped, with the frames before it in buf.
func (s *Service) frame(buf *bytes.Buffer, ev Event) {
	buf.WriteString("data: ")
	if err := ev.appendJSON(buf); err != nil {
		s.log.Warn("perception event not encodable; skipped on the feed", "name", ev.Name, "error", err)
		buf.Reset()
		return
	}
	buf.WriteString("\n\n")
}
