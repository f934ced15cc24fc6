package memstore

import (
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestMetricsExposition pins what NewMetrics puts on /metrics, byte for
// byte: names, HELP, types, label names, zero series and buckets.
func TestMetricsExposition(t *testing.T) { testkit.MetricsGolden(t, NewMetrics) }
