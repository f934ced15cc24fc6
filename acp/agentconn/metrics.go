package agentconn

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the series a protocol's connection fills. acp.Metrics holds
// them beside the supervisor's and the pool's, and registers them all.
type Metrics struct {
	// DroppedUpdates counts agent updates that were not delivered, by reason.
	DroppedUpdates *prometheus.CounterVec
	// PermissionUnidentified counts permission requests whose tool could
	// not be identified, by the decision taken.
	PermissionUnidentified *prometheus.CounterVec
}

// Dropped counts one update dropped for reason; m may be nil.
func (m *Metrics) Dropped(reason string) {
	if m != nil {
		m.DroppedUpdates.WithLabelValues(reason).Inc()
	}
}
