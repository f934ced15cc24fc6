package perception

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// FellBehind is the name of the last event a feed client gets when it is
// evicted for falling behind.
const FellBehind = "fell_behind"

// feed is GET /api/perception/feed: every bus event as an SSE data frame,
// a keepalive comment after Keepalive of silence. It ends when the client
// goes, the server stops, or the client falls behind (then after one
// fell_behind event, so EventSource reconnects).
func (s *Service) feed(c echo.Context) error {
	w := c.Response()
	flusher, ok := w.Writer.(http.Flusher)
	if !ok {
		return echo.NewHTTPError(http.StatusInternalServerError, "streaming unsupported")
	}
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

	httpapi.StartEventStream(w)
	flusher.Flush()

	ctx := c.Request().Context()
	ticker := s.clock.NewTicker(s.cfg.Keepalive)
	defer ticker.Stop()
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
	frame := func(ev Event) {
		buf.WriteString("data: ")
		if err := ev.appendJSON(&buf); err != nil {
			s.log.Warn("perception event not encodable; skipped on the feed", "name", ev.Name, "error", err)
			buf.Reset()
			return
		}
		buf.WriteString("\n\n")
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.cfg.Stopping:
			return nil
		case <-sub.Done():
			return s.feedEnd(sub, frame, write)
		case ev := <-sub.C:
			select {
			case <-sub.Done(): // evicted: the queue is discarded
				return s.feedEnd(sub, frame, write)
			default:
			}
			frame(ev)
			// Write whatever else is already queued in the same flush.
			for more := true; more && buf.Len() < 64<<10; {
				select {
				case ev := <-sub.C:
					frame(ev)
				default:
					more = false
				}
			}
			if !write() {
				return nil
			}
			ticker.Reset(s.cfg.Keepalive)
		case <-ticker.Chan():
			buf.WriteString(": keepalive\n\n")
			if !write() {
				return nil
			}
		}
	}
}

// feedEnd writes the fell_behind event when the bus evicted the client.
func (s *Service) feedEnd(sub *Subscription, frame func(Event), write func() bool) error {
	if sub.Evicted() {
		frame(Event{Name: FellBehind, Data: map[string]any{"queue": FeedQueue}, TS: epochSeconds(s.clock.Now())})
		write()
	}
	return nil
}
