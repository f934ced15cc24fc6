package admin

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
)

// Metrics are admin's series.
type Metrics struct {
	// KidModeActive is dotty_kid_mode_active: 1 while kid mode is on.
	KidModeActive prometheus.Gauge
}

// NewMetrics creates the series on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{KidModeActive: metric.On(reg).Gauge("dotty_kid_mode_active",
		"1 if Kid Mode is currently enforcing child-safety guardrails, else 0.")}
}

// kidGauge is the kid-mode gauge, nil without metrics.
func (m *Metrics) kidGauge() prometheus.Gauge {
	if m == nil {
		return nil
	}
	return m.KidModeActive
}
