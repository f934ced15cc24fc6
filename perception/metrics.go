package perception

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
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
	s := metric.On(reg)
	m := &Metrics{
		Events: s.CounterVec("dotty_perception_events_total",
			"Ambient-perception events ingested, partitioned by event type.", "type"),
		Dropped: s.CounterVec("dotty_perception_dropped_total",
			"Perception events dropped because a consumer's queue was full, partitioned by consumer.", "consumer"),
		Evictions: s.Counter("dotty_sse_evictions_total",
			"Perception feed subscribers disconnected because they fell behind."),
		DevicesEvicted: s.Counter("dotty_perception_devices_evicted_total",
			"Perception devices forgotten (state, recent events, caches) because the device table was full."),
	}
	metric.Zero(m.Events.WithLabelValues, countedEvents...)
	return m
}
