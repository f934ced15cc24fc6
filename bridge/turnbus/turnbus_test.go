package turnbus

import (
	"testing"
	"time"
)

func TestPublishSubscribe(t *testing.T) {
	b := New()
	fast, stopFast := b.Subscribe(4)
	slow, stopSlow := b.Subscribe(1)
	for i := range 3 {
		b.Publish(Turn{Channel: "dotty", Latency: time.Duration(i)})
	}
	for i := range 3 {
		if got := <-fast; got.Latency != time.Duration(i) {
			t.Fatalf("fast subscriber got %v, want turn %d", got.Latency, i)
		}
	}
	if got := <-slow; got.Latency != 0 {
		t.Fatalf("slow subscriber got %v first", got.Latency)
	}
	if b.Dropped() != 2 {
		t.Errorf("Dropped = %d, want 2 (the slow subscriber's buffer held one)", b.Dropped())
	}
	stopFast()
	stopFast() // idempotent
	if _, ok := <-fast; ok {
		t.Error("channel open after unsubscribe")
	}
	b.Publish(Turn{}) // no panic on the closed, removed subscriber
	stopSlow()
}
