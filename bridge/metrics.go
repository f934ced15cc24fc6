package bridge

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/emoji"
)

// Metrics holds the dotty_* series the server and the voice routes fill,
// and the request-duration histogram every feature times its routes in
// (one family, an endpoint label per route). Each feature package
// registers its own other series with its own NewMetrics; names, types,
// HELP texts, labels and buckets are bridge.py's so existing Grafana
// boards keep working. A labelled series appears on /metrics once it has
// a label value; the values dashboards query are created at zero here.
type Metrics struct {
	// FirstAudioLatency is dotty_first_audio_latency_seconds: seconds from
	// a voice request's arrival to its first audible text.
	FirstAudioLatency prometheus.Histogram
	// RequestDuration is dotty_request_duration_seconds{endpoint}.
	RequestDuration *prometheus.HistogramVec
	// RequestErrors is dotty_request_errors_total{endpoint,kind}.
	RequestErrors *prometheus.CounterVec
	// ContentFilterHits is dotty_content_filter_hits_total{tier}.
	ContentFilterHits *prometheus.CounterVec
	// SmartModeInvocations is dotty_smart_mode_invocations_total. bridge.py
	// never increments it; it is exported at 0 because the board queries it.
	SmartModeInvocations prometheus.Counter
	// LLMTokens is dotty_llm_tokens_total{kind,model}, declared by
	// bridge.py and never filled (so it has no series).
	LLMTokens *prometheus.CounterVec

	// ConnectionsTurnedAway is dotty_http_connections_turned_away_total (Go
	// only): connections the connection limit closed without serving them.
	ConnectionsTurnedAway prometheus.Counter

	// UploadBudgetInUse, UploadBudgetWaiting and UploadsRefused (Go only)
	// are the upload budget's bytes reserved, requests waiting for room
	// and requests refused with a 503 (Config.UploadBudget).
	UploadBudgetInUse, UploadBudgetWaiting prometheus.Gauge
	UploadsRefused                         prometheus.Counter
}

// firstAudioBuckets are bridge.py's buckets for first-audio latency.
var firstAudioBuckets = []float64{0.1, 0.25, 0.5, 1, 2, 5, 10}

// pythonDefaultBuckets are prometheus_client's default histogram buckets,
// which bridge.py's request histogram used; they differ from Go's
// prometheus.DefBuckets (.075, .75 and 7.5 are extra).
var pythonDefaultBuckets = []float64{.005, .01, .025, .05, .075, .1, .25, .5, .75, 1, 2.5, 5, 7.5, 10}

// NewMetrics creates every series, creates the dashboards' label values at
// zero, and registers the series on reg (nil: unregistered). It panics if
// a name is already registered on reg, as prometheus.MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	s := metric.On(reg)
	m := &Metrics{
		FirstAudioLatency: s.Histogram("dotty_first_audio_latency_seconds",
			"Wall-clock seconds from receiving a request to first audible TTS chunk.", firstAudioBuckets),
		RequestDuration: s.HistogramVec("dotty_request_duration_seconds",
			"End-to-end bridge request duration, partitioned by endpoint.", pythonDefaultBuckets, "endpoint"),
		RequestErrors: s.CounterVec("dotty_request_errors_total",
			"Request errors, partitioned by endpoint and error kind.", "endpoint", "kind"),
		ContentFilterHits: s.CounterVec("dotty_content_filter_hits_total",
			"Content-filter blocks partitioned by severity tier (redirect=profanity/slurs, log=sexual/violence, alert=hard drugs).", "tier"),
		SmartModeInvocations: s.Counter("dotty_smart_mode_invocations_total",
			"Smart-Mode invocations (request opted into the larger LLM)."),
		LLMTokens: s.CounterVec("dotty_llm_tokens_total",
			"LLM token counts emitted/consumed, partitioned by direction and model.", "kind", "model"),
		ConnectionsTurnedAway: s.Counter("dotty_http_connections_turned_away_total",
			"Connections closed unserved at the connection limit: parked too long for a slot, or none could be parked."),
		UploadBudgetInUse: s.Gauge("dotty_http_upload_budget_in_use_bytes",
			"Bytes of request bodies reserved from the upload budget (BRIDGE_UPLOAD_BUDGET) by requests in flight."),
		UploadBudgetWaiting: s.Gauge("dotty_http_upload_budget_waiting",
			"Requests waiting for room in the upload budget before their body is read."),
		UploadsRefused: s.Counter("dotty_http_upload_budget_refused_total",
			"Requests answered 503 because the upload budget had no room for their body before its deadline."),
	}
	metric.Zero(m.RequestDuration.WithLabelValues, voiceEndpoints...)
	for _, ep := range voiceEndpoints {
		for _, kind := range errorKinds {
			m.RequestErrors.WithLabelValues(ep, kind)
		}
	}
	metric.Zero(m.ContentFilterHits.WithLabelValues, emoji.Tiers...)
	return m
}
