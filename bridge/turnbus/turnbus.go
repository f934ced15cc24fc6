// Package turnbus fans completed voice turns out to in-process listeners
// (the dashboard's turn feed). It is a leaf: the voice routes publish, the
// dashboard subscribes, neither imports the other.
package turnbus

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fanout"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Turn is a completed voice turn as the dashboard sees it: the
// conversation record without the session id, plus the xiaozhi emotion of
// the reply.
type Turn struct {
	TS           time.Time
	Channel      string
	SessionID    string
	RequestText  string
	ResponseText string
	EmojiUsed    string
	Emotion      string
	Latency      time.Duration
	// Error is the failure kind ("timeout", "binary_missing", "exception"), empty on success.
	Error string
	// Phases are the agent's latency phases of a successful turn, or nil.
	Phases *convolog.Phases
}

// Bus fans completed turns out to in-process consumers on a fanout.Bus:
// Publish never blocks, and a consumer whose queue is full misses the turn
// (Dropped counts it). Consumers keep what they receive (the dashboard's
// ring of recent turns), so the bus clips each text to convolog.MaxText
// itself rather than trusting every publisher to.
type Bus struct {
	out *fanout.Bus[Turn]
}

// New returns an empty bus; log gets its "fell behind" warnings (nil:
// discarded).
func New(log hclog.Logger) *Bus {
	return &Bus{out: fanout.New[Turn](fanout.Config{Name: "voice turn", Logger: log})}
}

// Subscribe returns a consumer of the next turns with a queue of buf; read
// Sub.C until Sub.Done closes, and Close it when done.
func (b *Bus) Subscribe(name string, buf int) (*fanout.Sub[Turn], error) {
	return b.out.Consume(name, buf, nil, nil)
}

// Publish delivers ev to every subscriber with room for it, its strings
// clipped like the conversation log's.
func (b *Bus) Publish(ev Turn) {
	ev.Channel = text.Truncate(ev.Channel, convolog.TextCut)
	ev.SessionID = text.Truncate(ev.SessionID, convolog.TextCut)
	ev.RequestText = text.Truncate(ev.RequestText, convolog.TextCut)
	ev.ResponseText = text.Truncate(ev.ResponseText, convolog.TextCut)
	b.out.Publish(ev)
}

// Dropped reports how many deliveries were skipped for full subscribers.
func (b *Bus) Dropped() uint64 { return b.out.Dropped() }
