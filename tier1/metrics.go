package tier1

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
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
	return &Metrics{MemoryWritesDropped: metric.On(reg).Counter("dotty_memory_writes_dropped_total",
		"Voice memory writes refused with 503 or 507: the writer queue was full, or the journal could not take them.")}
}
