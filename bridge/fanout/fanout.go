// Package fanout is the one publish/subscribe primitive of the bridge: the
// perception event bus, the voice turn bus and the dashboard's turn feed are
// all a fanout.Bus. It owns one lag policy so that no publisher ever waits
// for a subscriber:
//
//   - an internal consumer (Consume: a goroutine of this process, such as a
//     robot behaviour or the dashboard following turns) has a bounded queue;
//     when it is full the new value is dropped for that consumer alone,
//     counted, and logged at most once per WarnEvery with the number missed;
//   - a remote subscriber (Watch: an SSE client on the network) is evicted
//     when its queue is full: its Done channel closes and Evicted reports
//     true, so the handler writes one final frame saying so and ends the
//     stream, and the client reconnects. A slow phone must not cost the
//     robot memory, and silently skipping frames would show it a wrong
//     picture.
//
// Values reach each subscriber in publish order. Logging happens after the
// bus lock is released.
package fanout

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrClosed is returned by Consume and Watch once the bus is closed.
var ErrClosed = errors.New("fanout: bus closed")

// Config configures a Bus.
type Config struct {
	// Name starts the bus's log lines ("perception feed client fell
	// behind").
	Name string
	// Evictions counts remote subscribers evicted for falling behind; nil
	// records nothing.
	Evictions prometheus.Counter
	// WarnEvery is the least time between two "dropping" warnings of one
	// consumer (10 s).
	WarnEvery time.Duration
	// Clock times WarnEvery; nil is the real clock.
	Clock  clockwork.Clock
	Logger hclog.Logger
}

// Bus fans values of type T out to subscribers.
type Bus[T any] struct {
	cfg     Config
	log     hclog.Logger
	dropped atomic.Uint64

	mu     sync.Mutex
	subs   []*Sub[T]
	closed bool
}

// New returns a bus with no subscribers.
func New[T any](cfg Config) *Bus[T] {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.WarnEvery <= 0 {
		cfg.WarnEvery = 10 * time.Second
	}
	if cfg.Name == "" {
		cfg.Name = "fanout"
	}
	return &Bus[T]{cfg: cfg, log: cfg.Logger}
}

// Sub is one subscriber's queue. Receive from C until Done is closed.
type Sub[T any] struct {
	// C delivers values in publish order. It is never closed; select on
	// Done as well.
	C <-chan T

	ch     chan T
	name   string
	filter func(T) bool
	remote bool
	drops  prometheus.Counter
	done   chan struct{}
	bus    *Bus[T]

	// handling is 1 while Run's fn or idle tick runs.
	handling atomic.Int32

	// Under Bus.mu:
	evicted  bool
	lastWarn time.Time
	missed   int
}

// Done is closed when the subscription ends: Close was called, the bus was
// closed, or a remote subscriber was evicted.
func (s *Sub[T]) Done() <-chan struct{} { return s.done }

// Evicted reports whether the bus dropped this remote subscriber for
// falling behind; meaningful once Done is closed.
func (s *Sub[T]) Evicted() bool {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.evicted
}

// Close ends the subscription. It is idempotent.
func (s *Sub[T]) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.bus.removeLocked(s)
}

// Consume subscribes an internal consumer with a queue of size values
// (at least 1). A full queue drops the value for this consumer, counted in
// drops (nil: not counted). With a filter, only values it accepts are
// delivered, or dropped.
func (b *Bus[T]) Consume(name string, size int, drops prometheus.Counter, filter func(T) bool) (*Sub[T], error) {
	return b.subscribe(&Sub[T]{name: name, filter: filter, drops: drops}, size)
}

// Watch subscribes a remote subscriber with a queue of size values (at
// least 1); falling behind evicts it.
func (b *Bus[T]) Watch(size int) (*Sub[T], error) {
	return b.subscribe(&Sub[T]{name: "watcher", remote: true}, size)
}

func (b *Bus[T]) subscribe(s *Sub[T], size int) (*Sub[T], error) {
	s.ch = make(chan T, max(size, 1))
	s.C, s.done, s.bus = s.ch, make(chan struct{}), b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	b.subs = append(b.subs, s)
	return s, nil
}

func (b *Bus[T]) removeLocked(s *Sub[T]) {
	for i, x := range b.subs {
		if x == s {
			b.subs = append(b.subs[:i:i], b.subs[i+1:]...)
			close(s.done)
			return
		}
	}
}

// note is a log line decided under the lock and written after it.
type note struct {
	evicted bool
	name    string
	queue   int
	missed  int
}

// Publish offers v to every subscriber without waiting.
func (b *Bus[T]) Publish(v T) {
	var notes []note
	b.mu.Lock()
	for i := 0; i < len(b.subs); i++ {
		s := b.subs[i]
		if s.filter != nil && !s.filter(v) {
			continue
		}
		select {
		case s.ch <- v:
			continue
		default:
		}
		if s.remote {
			s.evicted = true
			b.removeLocked(s)
			i--
			if b.cfg.Evictions != nil {
				b.cfg.Evictions.Inc()
			}
			notes = append(notes, note{evicted: true, queue: cap(s.ch)})
			continue
		}
		b.dropped.Add(1)
		if s.drops != nil {
			s.drops.Inc()
		}
		s.missed++
		if now := b.cfg.Clock.Now(); s.lastWarn.IsZero() || now.Sub(s.lastWarn) >= b.cfg.WarnEvery {
			notes = append(notes, note{name: s.name, missed: s.missed})
			s.lastWarn, s.missed = now, 0
		}
	}
	b.mu.Unlock()
	for _, n := range notes {
		if n.evicted {
			b.log.Warn(b.cfg.Name+" feed client fell behind; disconnecting it", "queue", n.queue)
		} else {
			b.log.Warn(b.cfg.Name+" consumer fell behind; dropping events", "consumer", n.name, "dropped", n.missed)
		}
	}
}

// Pending is the work the internal consumers have not finished: values
// queued for them plus values and idle ticks being handled by Run.
// Watchers (remote subscribers) are not counted. A program driving a fake
// clock waits for 0 before moving it.
func (b *Bus[T]) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.subs {
		if !s.remote {
			n += len(s.ch) + int(s.handling.Load())
		}
	}
	return n
}

// Close ends every subscription (Evicted stays false) and refuses new ones.
func (b *Bus[T]) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, s := range b.subs {
		close(s.done)
	}
	b.subs = nil
}

// Dropped reports how many deliveries to consumers were dropped in all.
func (b *Bus[T]) Dropped() uint64 { return b.dropped.Load() }

// Subscribers reports how many subscriptions are open.
func (b *Bus[T]) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Watchers reports how many remote subscribers are open.
func (b *Bus[T]) Watchers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.subs {
		if s.remote {
			n++
		}
	}
	return n
}

// Idle is Sub.Run's optional tick: Fn runs after Every without a value,
// and again every Every while none comes; a value starts the wait over.
// Every ≤ 0 means no tick.
type Idle struct {
	Every time.Duration
	Fn    func()
	// Clock times Every; nil is the real clock.
	Clock clockwork.Clock
}

// Run is an internal consumer's read loop, the one every consumer of a
// bus uses: it hands each value to fn, in publish order and one at a
// time, until ctx ends or the subscription does, then closes the
// subscription. A tick that fell due while a value waited is superseded
// by that value.
func (s *Sub[T]) Run(ctx context.Context, fn func(T), idle Idle) {
	defer s.Close()
	var tick <-chan time.Time
	var t clockwork.Timer
	if idle.Every > 0 {
		if idle.Clock == nil {
			idle.Clock = clockwork.NewRealClock()
		}
		t = idle.Clock.NewTimer(idle.Every)
		defer t.Stop()
		tick = t.Chan()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case v := <-s.C:
			if t != nil {
				if !t.Stop() {
					select { // a tick that fired meanwhile is superseded by this value
					case <-t.Chan():
					default:
					}
				}
				t.Reset(idle.Every)
			}
			s.handling.Store(1)
			fn(v)
			s.handling.Store(0)
		case <-tick:
			t.Reset(idle.Every)
			s.handling.Store(1)
			idle.Fn()
			s.handling.Store(0)
		}
	}
}
