package perception

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// countedEvents are the only type labels of dotty_perception_events_total,
// bridge.py's, so a device inventing event names cannot grow the series.
var countedEvents = []string{"face_detected", "face_lost", "sound_event", "state_changed",
	"face_identified_applied", "face_identified_rejected"}

// Metrics are perception's series.
type Metrics struct {
	// Events is dotty_perception_events_total{type}, one series per
	// countedEvents name, created at zero.
	Events *prometheus.CounterVec
	// Dropped is dotty_perception_dropped_total{consumer}: events a
	// consumer's full queue dropped.
	Dropped *prometheus.CounterVec
	// Evictions is dotty_sse_evictions_total: feed clients disconnected for
	// falling behind.
	Evictions prometheus.Counter
	// DevicesEvicted is dotty_perception_devices_evicted_total: devices
	// forgotten (state, recent events, caches) because the table was full.
	DevicesEvicted prometheus.Counter
}

// NewMetrics creates the series on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		Events: f.NewCounterVec(prometheus.CounterOpts{
			Name: "dotty_perception_events_total",
			Help: "Ambient-perception events ingested, partitioned by event type.",
		}, []string{"type"}),
		Dropped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "dotty_perception_dropped_total",
			Help: "Perception events dropped because a consumer's queue was full, partitioned by consumer.",
		}, []string{"consumer"}),
		Evictions: f.NewCounter(prometheus.CounterOpts{
			Name: "dotty_sse_evictions_total",
			Help: "Perception feed subscribers disconnected because they fell behind.",
		}),
		DevicesEvicted: f.NewCounter(prometheus.CounterOpts{
			Name: "dotty_perception_devices_evicted_total",
			Help: "Perception devices forgotten (state, recent events, caches) because the device table was full.",
		}),
	}
	for _, n := range countedEvents {
		m.Events.WithLabelValues(n)
	}
	return m
}
