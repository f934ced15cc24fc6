// Package metric declares Prometheus series for the packages that export
// them: one call a series, each registered on the registry the package is
// handed, and the label values dashboards query created at zero. It
// imports no package of this module, so any package may use it.
package metric

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Set declares series on one registry.
type Set struct{ f promauto.Factory }

// On returns the Set that registers its series on reg; with a nil reg
// they stay unregistered. Declaring a name already registered on reg
// panics, as prometheus.MustRegister does.
func On(reg prometheus.Registerer) Set { return Set{promauto.With(reg)} }

// Counter declares a counter.
func (s Set) Counter(name, help string) prometheus.Counter {
	return s.f.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// CounterVec declares a counter partitioned by labels.
func (s Set) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return s.f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Gauge declares a gauge.
func (s Set) Gauge(name, help string) prometheus.Gauge {
	return s.f.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// GaugeVec declares a gauge partitioned by labels.
func (s Set) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return s.f.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// GaugeFunc declares a gauge whose value value returns at scrape time.
func (s Set) GaugeFunc(name, help string, value func() float64) prometheus.GaugeFunc {
	return s.f.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value)
}

// Histogram declares a histogram with buckets.
func (s Set) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return s.f.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

// HistogramVec declares a histogram with buckets partitioned by labels.
func (s Set) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return s.f.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// Zero creates the series of a one-label family for each of values, at
// zero, so a dashboard sees them before the first event; with is the
// family's WithLabelValues.
func Zero[M any, V ~string](with func(...string) M, values ...V) {
	for _, v := range values {
		with(string(v))
	}
}
