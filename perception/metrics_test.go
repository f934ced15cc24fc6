package perception

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestMetricsExposition pins what NewMetrics puts on /metrics, byte for
// byte: names, HELP, types, label names, zero series and buckets.
func TestMetricsExposition(t *testing.T) {
	got := testkit.MetricsText(t, func(reg prometheus.Registerer) { NewMetrics(reg) })
	testkit.Golden(t, "testdata/metrics.txt", got)
}
