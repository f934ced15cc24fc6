package perception

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/internal/lru"
)

// Queue sizes: consumers drop and count, feed clients are evicted; a
// publisher never waits for either.
const (
	ConsumerQueue = 200
	FeedQueue     = 128
	RecentSize    = 20
)

// countedEvents are the only type labels of dotty_perception_events_total.
var countedEvents = []string{"face_detected", "face_lost", "sound_event", "state_changed",
	"face_identified_applied", "face_identified_rejected"}

// Bus fans events out to subscribers. See the package doc for its
// ordering and back-pressure rules.
type Bus struct {
	log      hclog.Logger
	counters map[string]prometheus.Counter
	dropped  *prometheus.CounterVec
	evicted  prometheus.Counter

	mu     sync.Mutex
	subs   []*Subscription
	recent *lru.Cache[string, *ring]
}

// BusConfig configures a Bus; nil metrics are not recorded.
type BusConfig struct {
	Events    *prometheus.CounterVec // dotty_perception_events_total{type}
	Dropped   *prometheus.CounterVec // dotty_perception_dropped_total{consumer}
	Evictions prometheus.Counter     // dotty_sse_evictions_total
	// MaxRings bounds the recent rings (DefaultMaxDevices when 0): the
	// device table forgets its evicted devices' rings, but a broadcast
	// (an audio caption) can name a device the table never saw, so the
	// rings keep the same bound themselves, the least recently written
	// ring making room.
	MaxRings int
	Logger   hclog.Logger
}

// NewBus returns a bus with no subscribers.
func NewBus(cfg BusConfig) *Bus {
	if cfg.MaxRings <= 0 {
		cfg.MaxRings = DefaultMaxDevices
	}
	b := &Bus{log: cfg.Logger, dropped: cfg.Dropped, evicted: cfg.Evictions, recent: lru.New[string, *ring](cfg.MaxRings)}
	if b.log == nil {
		b.log = hclog.NewNullLogger()
	}
	if cfg.Events != nil {
		b.counters = map[string]prometheus.Counter{}
		for _, n := range countedEvents {
			b.counters[n] = cfg.Events.WithLabelValues(n)
		}
	}
	return b
}

// Subscription is one subscriber's queue. Read events from C until Done
// is closed.
type Subscription struct {
	// C delivers events in publish order.
	C <-chan Event

	name    string
	only    map[string]bool // event names delivered; nil: all
	ch      chan Event
	evict   bool
	done    chan struct{}
	evicted bool // set under Bus.mu before done closes
	drops   prometheus.Counter
	bus     *Bus

	lastWarn time.Time // under Bus.mu
	missed   int       // drops since the last warning, under Bus.mu
}

// Done is closed when the subscription ends: Close was called or, for a
// feed subscription, it fell behind and was evicted.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Evicted reports whether the bus dropped this subscriber for falling
// behind (only after Done is closed).
func (s *Subscription) Evicted() bool {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.evicted
}

// Close unsubscribes. It is idempotent.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.bus.removeLocked(s)
}

// Consume subscribes an internal consumer: a queue of size (ConsumerQueue
// when 0) that drops events when full, counting them under name. With
// names, only events of those names are delivered (and can be dropped).
func (b *Bus) Consume(name string, size int, names ...string) *Subscription {
	if size <= 0 {
		size = ConsumerQueue
	}
	s := b.subscribe(name, size, false)
	if len(names) > 0 {
		s.only = map[string]bool{}
		for _, n := range names {
			s.only[n] = true
		}
	}
	if b.dropped != nil {
		s.drops = b.dropped.WithLabelValues(name)
	}
	return s
}

// Watch subscribes an external watcher (an SSE client): a queue of size
// (FeedQueue when 0); when it is full the watcher is evicted and Done
// closes.
func (b *Bus) Watch(size int) *Subscription {
	if size <= 0 {
		size = FeedQueue
	}
	return b.subscribe("feed", size, true)
}

func (b *Bus) subscribe(name string, size int, evict bool) *Subscription {
	ch := make(chan Event, size)
	s := &Subscription{C: ch, name: name, ch: ch, evict: evict, done: make(chan struct{}), bus: b}
	b.mu.Lock()
	b.subs = append(b.subs, s)
	b.mu.Unlock()
	return s
}

func (b *Bus) removeLocked(s *Subscription) {
	for i, x := range b.subs {
		if x == s {
			b.subs = append(b.subs[:i:i], b.subs[i+1:]...)
			close(s.done)
			return
		}
	}
}

// Publish counts ev, records it in its device's recent ring and offers it
// to every subscriber without waiting.
func (b *Bus) Publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.publishLocked(ev)
}

func (b *Bus) publishLocked(ev Event) {
	if c := b.counters[ev.Name]; c != nil {
		c.Inc()
	}
	if ev.DeviceID != "" && ev.DeviceID != "unknown" {
		r, _, _ := b.recent.Use(ev.DeviceID, newRing)
		r.add(ev)
	}
	for i := 0; i < len(b.subs); i++ {
		s := b.subs[i]
		if s.only != nil && !s.only[ev.Name] {
			continue
		}
		select {
		case s.ch <- ev:
			continue
		default:
		}
		if s.evict {
			s.evicted = true
			b.removeLocked(s)
			i--
			if b.evicted != nil {
				b.evicted.Inc()
			}
			b.log.Warn("perception feed client fell behind; disconnecting it", "queue", cap(s.ch))
			continue
		}
		if s.drops != nil {
			s.drops.Inc()
		}
		s.missed++
		if now := time.Now(); now.Sub(s.lastWarn) >= 10*time.Second {
			b.log.Warn("perception consumer fell behind; dropping events", "consumer", s.name, "dropped", s.missed)
			s.lastWarn, s.missed = now, 0
		}
	}
}

// Recent returns up to limit of a device's most recent events, newest
// first (limit ≤ 0 or over RecentSize means all).
func (b *Bus) Recent(device string, limit int) []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.recent.Get(device)
	if !ok {
		return []Event{}
	}
	return r.newestFirst(limit)
}

// Forget drops a device's recent ring (the device was evicted).
func (b *Bus) Forget(device string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recent.Remove(device)
}

// Rings reports how many devices have a recent ring.
func (b *Bus) Rings() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.recent.Len()
}

// Watchers reports how many feed clients are subscribed.
func (b *Bus) Watchers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.subs {
		if s.evict {
			n++
		}
	}
	return n
}

// Subscribers reports how many subscriptions are open.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// ring keeps the RecentSize most recent events.
type ring struct {
	buf  [RecentSize]Event
	next int
	n    int
}

func newRing() *ring { return &ring{} }

func (r *ring) add(ev Event) {
	r.buf[r.next] = ev
	r.next = (r.next + 1) % RecentSize
	r.n = min(r.n+1, RecentSize)
}

func (r *ring) newestFirst(limit int) []Event {
	if limit <= 0 || limit > r.n {
		limit = r.n
	}
	out := make([]Event, 0, limit)
	for i := 1; i <= limit; i++ {
		out = append(out, r.buf[(r.next-i+RecentSize)%RecentSize])
	}
	return out
}
