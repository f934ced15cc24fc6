package bridge

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
)

// Metrics holds the server's dotty_* series and the request series every
// feature records its routes in (one family each, an endpoint label per
// route). Each feature package registers its own other series with its
// own NewMetrics and creates its endpoints' label values at zero; names,
// types, HELP texts, labels and buckets are bridge.py's so existing
// Grafana boards keep working. A labelled series appears on /metrics once
// it has a label value.
type Metrics struct {
	// RequestDuration is dotty_request_duration_seconds{endpoint}.
	RequestDuration *prometheus.HistogramVec
	// RequestErrors is dotty_request_errors_total{endpoint,kind}.
	RequestErrors *prometheus.CounterVec

	// ConnectionsTurnedAway is dotty_http_connections_turned_away_total (Go
	// only): connections the connection limit closed without serving them.
	ConnectionsTurnedAway prometheus.Counter

	// UploadBudgetInUse, UploadBudgetWaiting and UploadsRefused (Go only)
	// are the upload budget's bytes reserved, requests waiting for room
	// and requests refused with a 503 (Config.UploadBudget).
	UploadBudgetInUse, UploadBudgetWaiting prometheus.Gauge
	UploadsRefused                         prometheus.Counter
}

// pythonDefaultBuckets are prometheus_client's default histogram buckets,
// which bridge.py's request histogram used; they differ from Go's
// prometheus.DefBuckets (.075, .75 and 7.5 are extra).
var pythonDefaultBuckets = []float64{.005, .01, .025, .05, .075, .1, .25, .5, .75, 1, 2.5, 5, 7.5, 10}

// NewMetrics creates the series and registers them on reg (nil:
// unregistered). It panics if a name is already registered on reg, as
// prometheus.MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	s := metric.On(reg)
	return &Metrics{
		RequestDuration: s.HistogramVec("dotty_request_duration_seconds",
			"End-to-end bridge request duration, partitioned by endpoint.", pythonDefaultBuckets, "endpoint"),
		RequestErrors: s.CounterVec("dotty_request_errors_total",
			"Request errors, partitioned by endpoint and error kind.", "endpoint", "kind"),
		ConnectionsTurnedAway: s.Counter("dotty_http_connections_turned_away_total",
			"Connections closed unserved at the connection limit: parked too long for a slot, or none could be parked."),
		UploadBudgetInUse: s.Gauge("dotty_http_upload_budget_in_use_bytes",
			"Bytes of request bodies reserved from the upload budget (BRIDGE_UPLOAD_BUDGET) by requests in flight."),
		UploadBudgetWaiting: s.Gauge("dotty_http_upload_budget_waiting",
			"Requests waiting for room in the upload budget before their body is read."),
		UploadsRefused: s.Counter("dotty_http_upload_budget_refused_total",
			"Requests answered 503 because the upload budget had no room for their body before its deadline."),
	}
}
