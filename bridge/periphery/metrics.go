package periphery

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
)

// Metrics are the periphery's series.
type Metrics struct {
	// CalendarFailures is dotty_calendar_fetch_failures_total{kind}, one
	// label value per FailureKinds entry.
	CalendarFailures *prometheus.CounterVec
}

// NewMetrics creates the series on reg (nil: unregistered), every failure
// kind at zero so the dashboards see it before the first failure.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{CalendarFailures: metric.On(reg).CounterVec("dotty_calendar_fetch_failures_total",
		"Total Google Calendar fetch failures (excludes intentional skips).", "kind")}
	metric.Zero(m.CalendarFailures.WithLabelValues, FailureKinds...)
	return m
}
