package turnbus

import (
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fanout"
)

func TestPublishSubscribe(t *testing.T) {
	b := New(nil)
	fast := subscribe(t, b, 4)
	slow := subscribe(t, b, 1)
	for i := range 3 {
		b.Publish(Turn{Channel: "dotty", Latency: time.Duration(i)})
	}
	for i := range 3 {
		if got := <-fast.C; got.Latency != time.Duration(i) {
			t.Fatalf("fast subscriber got %v, want turn %d", got.Latency, i)
		}
	}
	if got := <-slow.C; got.Latency != 0 {
		t.Fatalf("slow subscriber got %v first", got.Latency)
	}
	if b.Dropped() != 2 {
		t.Errorf("Dropped = %d, want 2 (the slow subscriber's buffer held one)", b.Dropped())
	}
	fast.Close()
	fast.Close() // idempotent
	select {
	case <-fast.Done():
	default:
		t.Error("subscription not done after Close")
	}
	b.Publish(Turn{}) // no panic on the closed, removed subscriber
	slow.Close()
}

func subscribe(t *testing.T, b *Bus, buf int) *fanout.Sub[Turn] {
	t.Helper()
	s, err := b.Subscribe("test", buf)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A 16 KiB turn reaches subscribers (which keep it) clipped on a rune
// boundary, whoever published it.
func TestPublishClipsLongTurns(t *testing.T) {
	b := New(nil)
	sub := subscribe(t, b, 1)
	defer sub.Close()
	ch := sub.C
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
