// Package turnbus fans completed voice turns out to in-process listeners
// (the dashboard's turn feed). It is a leaf: the voice routes publish, the
// dashboard subscribes, neither imports the other.
package turnbus

import (
	"sync"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
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
}

// Bus fans completed turns out to subscribers. Publish never blocks: a
// subscriber whose buffer is full misses the turn, and Dropped counts it.
// Subscribers keep what they receive (the dashboard's ring of recent
// turns), so the bus clips each text to convolog.MaxText itself rather than
// trusting every publisher to.
type Bus struct {
	mu      sync.Mutex
	subs    map[chan Turn]struct{}
	dropped int
}

// New returns an empty bus.
func New() *Bus { return &Bus{subs: make(map[chan Turn]struct{})} }

// Subscribe returns a channel of the next turns (buffered by buf) and a
// function that unsubscribes and closes it.
func (b *Bus) Subscribe(buf int) (<-chan Turn, func()) {
	ch := make(chan Turn, max(buf, 1))
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
			close(ch)
		})
	}
}

// Publish delivers ev to every subscriber with room for it, its strings
// clipped like the conversation log's.
func (b *Bus) Publish(ev Turn) {
	ev.Channel = convolog.Clip(ev.Channel, convolog.MaxText)
	ev.SessionID = convolog.Clip(ev.SessionID, convolog.MaxText)
	ev.RequestText = convolog.Clip(ev.RequestText, convolog.MaxText)
	ev.ResponseText = convolog.Clip(ev.ResponseText, convolog.MaxText)
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
			b.dropped++
		}
	}
}

// Dropped reports how many deliveries were skipped for full subscribers.
func (b *Bus) Dropped() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
