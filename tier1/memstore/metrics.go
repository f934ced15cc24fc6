package memstore

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
)

// Metrics are the memory writer's series.
type Metrics struct {
	// Pending is dotty_memory_writes_pending: accepted writes in the
	// journal, not yet in brain.db.
	Pending prometheus.Gauge
	// WriteFailures is dotty_memory_write_failures_total: attempts to
	// write a row to brain.db that failed for another reason than a lock.
	WriteFailures prometheus.Counter
}

// NewMetrics creates the series on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	s := metric.On(reg)
	return &Metrics{
		Pending: s.Gauge("dotty_memory_writes_pending",
			"Accepted voice memory writes in the journal, not yet in brain.db."),
		WriteFailures: s.Counter("dotty_memory_write_failures_total",
			"Attempts to write a voice memory row to brain.db that failed for another reason than a lock; the row stays in the journal and is retried."),
	}
}
