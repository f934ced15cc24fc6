package bridge

import (
	"sync"
	"time"
)

// TurnEvent is a completed voice turn as the dashboard sees it: the
// conversation record without the session id and response length.
type TurnEvent struct {
	TS           time.Time
	Channel      string
	RequestText  string
	ResponseText string
	EmojiUsed    string
	Latency      time.Duration
	Error        string
}

// TurnBus fans completed turns out to in-process subscribers (the
// dashboard, later). Publish never blocks: a subscriber whose buffer is
// full misses the event, and Dropped counts it.
type TurnBus struct {
	mu      sync.Mutex
	subs    map[chan TurnEvent]struct{}
	dropped int
}

// NewTurnBus returns an empty bus.
func NewTurnBus() *TurnBus { return &TurnBus{subs: make(map[chan TurnEvent]struct{})} }

// Subscribe returns a channel of the next turns (buffered by buf) and a
// function that unsubscribes and closes it.
func (b *TurnBus) Subscribe(buf int) (<-chan TurnEvent, func()) {
	ch := make(chan TurnEvent, max(buf, 1))
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

// Publish delivers ev to every subscriber with room for it.
func (b *TurnBus) Publish(ev TurnEvent) {
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
func (b *TurnBus) Dropped() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
