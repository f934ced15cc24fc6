package sidecar

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
)

// Metrics are the sidecar's series.
type Metrics struct {
	// Failures is dotty_sidecar_failures_total{stage}: firmware requests
	// that failed, by the stage of their failure (audio, system, stt, llm).
	Failures *prometheus.CounterVec
}

// NewMetrics creates the series on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{Failures: metric.On(reg).CounterVec("dotty_sidecar_failures_total",
		"Firmware sidecar requests that failed, partitioned by stage (audio, system, stt, llm).", "stage")}
}
