package memstore

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
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
	f := promauto.With(reg)
	return &Metrics{
		Pending: f.NewGauge(prometheus.GaugeOpts{
			Name: "dotty_memory_writes_pending",
			Help: "Accepted voice memory writes in the journal, not yet in brain.db.",
		}),
		WriteFailures: f.NewCounter(prometheus.CounterOpts{
			Name: "dotty_memory_write_failures_total",
			Help: "Attempts to write a voice memory row to brain.db that failed for another reason than a lock; the row stays in the journal and is retried.",
		}),
	}
}
