package sidecar

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the sidecar's series.
type Metrics struct {
	// Failures is dotty_sidecar_failures_total{stage}.
	Failures *prometheus.CounterVec
}

// NewMetrics creates the series and registers them on reg (nil:
// unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dotty_sidecar_failures_total",
		Help: "Firmware sidecar requests that failed, partitioned by stage (audio, system, stt, llm).",
	}, []string{"stage"})}
	if reg != nil {
		reg.MustRegister(m.Failures)
	}
	return m
}
