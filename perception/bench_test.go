package perception

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// BenchmarkIngest is the in-process cost of one event: state update and
// broadcast to the five default subscriptions, drained by running consumers.
func BenchmarkIngest(b *testing.B) {
	s := New(Config{Logger: hclog.NewNullLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	data := map[string]any{"direction": "left", "energy": 0.4, "firmware_ts_ms": 123456.0}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Ingest(Event{DeviceID: "dotty-aa", TS: float64(i), Name: "sound_event", Data: data})
	}
	b.StopTimer()
	cancel()
	<-done
}

