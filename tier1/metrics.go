package tier1

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are tier1's series.
type Metrics struct {
	// MemoryWritesDropped is dotty_memory_writes_dropped_total: voice
	// memory writes refused with 503 or 507: the writer queue was full, or
	// the journal could not take them.
	MemoryWritesDropped prometheus.Counter
}

// NewMetrics creates the series on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{MemoryWritesDropped: promauto.With(reg).NewCounter(prometheus.CounterOpts{
		Name: "dotty_memory_writes_dropped_total",
		Help: "Voice memory writes refused with 503 or 507: the writer queue was full, or the journal could not take them.",
	})}
}
