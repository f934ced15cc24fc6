package turnbus

import (
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
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

// A 16 KiB turn reaches subscribers (which keep it) clipped on a rune
// boundary, whoever published it.
func TestPublishClipsLongTurns(t *testing.T) {
	b := New()
	ch, stop := b.Subscribe(1)
	defer stop()
	long := strings.Repeat("é", 8<<10) // 16 KiB
	b.Publish(Turn{Channel: long, SessionID: long, RequestText: long, ResponseText: "😊 " + long})
	got := <-ch
	for name, s := range map[string]string{"channel": got.Channel, "session": got.SessionID, "request": got.RequestText, "response": got.ResponseText} {
		if len(s) > convolog.MaxText || !strings.HasSuffix(s, "é…") {
			t.Errorf("%s text kept %d bytes ending %q, want at most %d ending in é…", name, len(s), s[max(len(s)-8, 0):], convolog.MaxText)
		}
	}
	b.Publish(Turn{RequestText: "short"})
	if got := <-ch; got.RequestText != "short" {
		t.Errorf("short text changed to %q", got.RequestText)
	}
}
