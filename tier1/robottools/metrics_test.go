package robottools

import (
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestMetricsExposition pins what NewMetrics puts on /metrics, byte for
// byte.
func TestMetricsExposition(t *testing.T) { testkit.MetricsGolden(t, NewMetrics) }
