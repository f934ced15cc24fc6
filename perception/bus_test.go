package perception

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// A consumer run by the bus gets only its triggers, in order, with Run's
// ctx; a panic is logged under its name and the next event handled; a
// full queue drops and counts under its name; Run's end closes it.
func TestConsumerRun(t *testing.T) {
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dropped"}, []string{"consumer"})
	b := NewBus(BusConfig{Dropped: dropped})
	var logs testkit.LogBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs})
	got := make(chan string, 8)
	ctx, cancel := context.WithCancel(context.Background())
	c := b.SubscribeFunc("tester", 2, []string{"a", "b"}, log, func(hctx context.Context, ev Event) {
		if hctx != ctx {
			t.Error("the handler was not given Run's ctx")
		}
		if ev.Name == "b" {
			panic("boom")
		}
		got <- ev.Name
	})
	if c.Name() != "tester" {
		t.Errorf("Name %q", c.Name())
	}
	// Before Run: the queue (2) fills; the third trigger is dropped and
	// counted, the other name is not delivered at all.
	b.Publish(Event{Name: "a"})
	b.Publish(Event{Name: "zzz"})
	b.Publish(Event{Name: "b"})
	b.Publish(Event{Name: "a"})
	if n := testutil.ToFloat64(dropped.WithLabelValues("tester")); n != 1 {
		t.Errorf("dropped %v, want 1", n)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	next := func() string {
		return testkit.Recv(t, 5*time.Second, got, "nothing handled within 5s")
	}
	if v := next(); v != "a" {
		t.Fatalf("first handled %q, want a", v)
	}
	b.Publish(Event{Name: "a"}) // after the panic on "b", the consumer goes on
	if v := next(); v != "a" {
		t.Fatalf("after the panic handled %q, want a", v)
	}
	if s := logs.String(); !strings.Contains(s, "consumer panicked") || !strings.Contains(s, "consumer=tester") {
		t.Errorf("the panic was not logged under the consumer's name:\n%s", s)
	}
	cancel()
	testkit.Recv(t, 5*time.Second, done, "Run did not end with its ctx")
	if b.Subscribers() != 0 {
		t.Error("Run's end left the subscription open")
	}
}
