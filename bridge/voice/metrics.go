package voice

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/emoji"
)

// Metrics holds the dotty_* series the voice turns fill: the voice
// series, with bridge.py's names, HELP texts, labels and buckets, and the
// server's request series, in which a turn is recorded under its
// endpoint.
type Metrics struct {
	// FirstAudioLatency is dotty_first_audio_latency_seconds: seconds from
	// a voice request's arrival to its first audible text.
	FirstAudioLatency prometheus.Histogram
	// ContentFilterHits is dotty_content_filter_hits_total{tier}.
	ContentFilterHits *prometheus.CounterVec
	// SmartModeInvocations is dotty_smart_mode_invocations_total. bridge.py
	// never increments it; it is exported at 0 because the board queries it.
	SmartModeInvocations prometheus.Counter
	// LLMTokens is dotty_llm_tokens_total{kind,model}, declared by
	// bridge.py and never filled (so it has no series).
	LLMTokens *prometheus.CounterVec

	// RequestDuration and RequestErrors are the server's
	// (bridge.Metrics).
	RequestDuration *prometheus.HistogramVec
	RequestErrors   *prometheus.CounterVec
}

// firstAudioBuckets are bridge.py's buckets for first-audio latency.
var firstAudioBuckets = []float64{0.1, 0.25, 0.5, 1, 2, 5, 10}

// NewMetrics creates the voice series on reg (nil: unregistered) and the
// label values the dashboards query at zero: the content-filter tiers,
// and each voice route with each error kind in the server's request
// series, which server (required) holds. It panics if a name is already registered on reg, as
// prometheus.MustRegister does.
func NewMetrics(reg prometheus.Registerer, server *bridge.Metrics) *Metrics {
	s := metric.On(reg)
	m := &Metrics{
		FirstAudioLatency: s.Histogram("dotty_first_audio_latency_seconds",
			"Wall-clock seconds from receiving a request to first audible TTS chunk.", firstAudioBuckets),
		ContentFilterHits: s.CounterVec("dotty_content_filter_hits_total",
			"Content-filter blocks partitioned by severity tier (redirect=profanity/slurs, log=sexual/violence, alert=hard drugs).", "tier"),
		SmartModeInvocations: s.Counter("dotty_smart_mode_invocations_total",
			"Smart-Mode invocations (request opted into the larger LLM)."),
		LLMTokens: s.CounterVec("dotty_llm_tokens_total",
			"LLM token counts emitted/consumed, partitioned by direction and model.", "kind", "model"),
		RequestDuration: server.RequestDuration,
		RequestErrors:   server.RequestErrors,
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
