package perception

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fanout"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/internal/lru"
)

// Queue sizes: consumers drop and count, feed clients are evicted; a
// publisher never waits for either.
const (
	ConsumerQueue = 200
	FeedQueue     = 128
	RecentSize    = 20
)

// Bus fans events out to subscribers on a fanout.Bus (its lag policy:
// consumers drop and count, feed clients are evicted) and keeps, beside
// it, what only perception needs: the per-type event counters and each
// device's recent ring.
type Bus struct {
	clock    clockwork.Clock
	counters map[string]prometheus.Counter
	dropped  *prometheus.CounterVec
	out      *fanout.Bus[Event]

	mu     sync.Mutex
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
	// Clock times the consumers' "dropping" warnings and their idle
	// ticks (Consumer.Every); nil is the real clock.
	Clock  clockwork.Clock
	Logger hclog.Logger
}

// NewBus returns a bus with no subscribers.
func NewBus(cfg BusConfig) *Bus {
	if cfg.MaxRings <= 0 {
		cfg.MaxRings = DefaultMaxDevices
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	b := &Bus{clock: cfg.Clock, dropped: cfg.Dropped, recent: lru.New[string, *ring](cfg.MaxRings),
		out: fanout.New[Event](fanout.Config{Name: "perception", Evictions: cfg.Evictions, Clock: cfg.Clock, Logger: cfg.Logger})}
	if cfg.Events != nil {
		b.counters = map[string]prometheus.Counter{}
		for _, n := range countedEvents {
			b.counters[n] = cfg.Events.WithLabelValues(n)
		}
	}
	return b
}

// Subscription is one subscriber's queue: read events from C until Done
// is closed; Evicted tells a feed client it fell behind.
type Subscription = fanout.Sub[Event]

// Consume subscribes an internal consumer: a queue of size (ConsumerQueue
// when 0) that drops events when full, counting them under name. With
// names, only events of those names are delivered (and can be dropped).
func (b *Bus) Consume(name string, size int, names ...string) *Subscription {
	if size <= 0 {
		size = ConsumerQueue
	}
	var filter func(Event) bool
	if len(names) > 0 {
		// A consumer names one to four events: comparing them costs less
		// than hashing the name, once per event and consumer.
		only := slices.Clone(names)
		filter = func(ev Event) bool { return slices.Contains(only, ev.Name) }
	}
	var drops prometheus.Counter
	if b.dropped != nil {
		drops = b.dropped.WithLabelValues(name)
	}
	return must(b.out.Consume(name, size, drops, filter))
}

// Handler is what a consumer does with one event. ctx is the one given to
// Consumer.Run: the consumer's robot calls and tasks end with it.
type Handler func(ctx context.Context, ev Event)

// Consumer is one consumer on the bus: its queue fills from SubscribeFunc
// on, so nothing published after it is missed, and Run, the bus's read
// loop, hands the events to its handler.
type Consumer struct {
	name  string
	sub   *Subscription
	log   hclog.Logger
	fn    Handler
	clock clockwork.Clock
	every time.Duration
	tick  func(ctx context.Context)
}

// SubscribeFunc subscribes fn as consumer name: a queue of size
// (ConsumerQueue when 0) of the events named triggers (every event when
// none) that drops and counts under name when full, as Consume. log
// receives the panics Run survives.
func (b *Bus) SubscribeFunc(name string, size int, triggers []string, log hclog.Logger, fn Handler) *Consumer {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Consumer{name: name, sub: b.Consume(name, size, triggers...), log: log, fn: fn, clock: b.clock}
}

// Name is the consumer's name (its dotty_perception_dropped_total label).
func (c *Consumer) Name() string { return c.name }

// Every gives the consumer an idle tick: tick runs after d without an
// event, and again every d while none comes (d ≤ 0: never). It returns c.
func (c *Consumer) Every(d time.Duration, tick func(ctx context.Context)) *Consumer {
	c.every, c.tick = d, tick
	return c
}

// Run is every consumer's read loop: until ctx ends, each event goes to
// the handler (and each idle tick to the tick), one at a time and in
// order, a panic being logged with its stack (Safely) and the consumer
// going on; then the subscription closes.
func (c *Consumer) Run(ctx context.Context) {
	idle := fanout.Idle{Every: c.every, Clock: c.clock}
	if c.every > 0 && c.tick != nil {
		idle.Fn = func() { Safely(c.log, c.name, func() { c.tick(ctx) }) }
	} else {
		idle.Every = 0
	}
	c.sub.Run(ctx, func(ev Event) { Safely(c.log, c.name, func() { c.fn(ctx, ev) }) }, idle)
}

// Watch subscribes an external watcher (an SSE client): a queue of size
// (FeedQueue when 0); when it is full the watcher is evicted and Done
// closes.
func (b *Bus) Watch(size int) *Subscription {
	if size <= 0 {
		size = FeedQueue
	}
	return must(b.out.Watch(size))
}

// must unwraps a subscription: the perception bus is never closed (its
// subscribers end with their own Close), so subscribing cannot fail.
func must(s *Subscription, err error) *Subscription {
	if err != nil {
		panic(err)
	}
	return s
}

// Publish counts ev, records it in its device's recent ring and offers it
// to every subscriber without waiting.
func (b *Bus) Publish(ev Event) {
	if c := b.counters[ev.Name]; c != nil {
		c.Inc()
	}
	if ev.DeviceID != "" && ev.DeviceID != "unknown" {
		b.mu.Lock()
		r, _, _ := b.recent.Use(ev.DeviceID, newRing)
		r.add(ev)
		b.mu.Unlock()
	}
	b.out.Publish(ev)
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

// RecentJSON is every device's recent events as one JSON array of feed
// frames (device_id, ts, name, data), newest first: the dashboard's
// history in one request instead of one per device.
func (b *Bus) RecentJSON() []byte {
	b.mu.Lock()
	var all []Event
	for _, r := range b.recent.All() {
		all = append(all, r.newestFirst(0)...)
	}
	b.mu.Unlock()
	slices.SortStableFunc(all, func(x, y Event) int { return cmp.Compare(y.TS, x.TS) })
	var buf bytes.Buffer
	buf.WriteByte('[')
	n := 0
	for _, ev := range all {
		mark := buf.Len()
		if n > 0 {
			buf.WriteByte(',')
		}
		if ev.appendJSON(&buf) != nil {
			buf.Truncate(mark) // not encodable: skipped, as on the feed
			continue
		}
		n++
	}
	buf.WriteByte(']')
	return buf.Bytes()
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

// Pending is the events the consumers have not finished: queued for
// them, or being handled (an idle tick included).
func (b *Bus) Pending() int { return b.out.Pending() }

// Watchers reports how many feed clients are subscribed.
func (b *Bus) Watchers() int { return b.out.Watchers() }

// Subscribers reports how many subscriptions are open.
func (b *Bus) Subscribers() int { return b.out.Subscribers() }

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
