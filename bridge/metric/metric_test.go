package metric_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
)

// TestSetRegistersAndZeroes declares one series of each kind on a
// registry: each is registered there once, a second declaration of a name
// panics, Zero creates the series of each value at zero, and a nil
// registry leaves the series usable but unregistered.
func TestSetRegistersAndZeroes(t *testing.T) {
	type tier string
	reg := prometheus.NewRegistry()
	s := metric.On(reg)
	s.Counter("c_total", "c.")
	v := s.CounterVec("cv_total", "cv.", "tier")
	metric.Zero(v.WithLabelValues, tier("a"), tier("b"))
	s.Gauge("g", "g.")
	s.GaugeVec("gv", "gv.", "x").WithLabelValues("1").Set(2)
	s.GaugeFunc("gf", "gf.", func() float64 { return 3 })
	s.Histogram("h_seconds", "h.", []float64{1, 2})
	s.HistogramVec("hv_seconds", "hv.", []float64{1}, "ep").WithLabelValues("m")
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 8 {
		t.Fatalf("gathered %d series (%v), want 8", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`# HELP cv_total cv.
# TYPE cv_total counter
cv_total{tier="a"} 0
cv_total{tier="b"} 0
# HELP gf gf.
# TYPE gf gauge
gf 3
`), "cv_total", "gf"); err != nil {
		t.Error(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("declaring g twice did not panic")
			}
		}()
		s.Gauge("g", "again.")
	}()

	c := metric.On(nil).Counter("c_total", "c.")
	c.Inc()
	if got := testutil.ToFloat64(c); got != 1 {
		t.Errorf("unregistered counter = %v, want 1", got)
	}
}
