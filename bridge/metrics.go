package bridge

import "github.com/prometheus/client_golang/prometheus"

// Metrics holds every dotty_* series of bridge.py (names, types, labels,
// HELP texts and buckets kept so existing Grafana boards work) except
// dotty_active_acp_sessions, which package acp registers, plus the Go-only
// perception and memory counters. Feature packages receive the fields they
// fill from cmd.
type Metrics struct {
	FirstAudioLatency     prometheus.Histogram
	RequestDuration       *prometheus.HistogramVec
	RequestErrors         *prometheus.CounterVec
	KidModeActive         prometheus.Gauge
	PerceptionEvents      *prometheus.CounterVec
	CalendarFetchFailures *prometheus.CounterVec
	ContentFilterHits     *prometheus.CounterVec
	SmartModeInvocations  prometheus.Counter
	LLMTokens             *prometheus.CounterVec
	PerceptionDropped     *prometheus.CounterVec
	SSEEvictions          prometheus.Counter
	MemoryWritesDropped   prometheus.Counter
}

// PythonDefaultBuckets are prometheus_client's default histogram buckets,
// which bridge.py's request histogram used (not Go's DefBuckets).
var PythonDefaultBuckets = []float64{.005, .01, .025, .05, .075, .1, .25, .5, .75, 1, 2.5, 5, 7.5, 10}

// Label values that dashboards query, created at zero on start.
var (
	VoiceEndpoints       = []string{"message", "message_stream"}
	TimedEndpoints       = []string{"message", "message_stream", "calendar_today", "perception_event", "vision_explain", "audio_explain"}
	ErrorKinds           = []string{"timeout", "binary_missing", "exception"}
	PerceptionEventTypes = []string{"face_detected", "face_lost", "sound_event", "state_changed", "face_identified_applied", "face_identified_rejected"}
	FilterTiers          = []string{"redirect", "log", "alert"}
	CalendarFailureKinds = []string{"timeout", "parse", "other", "orchestrator"}
)

// NewMetrics creates the series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		FirstAudioLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dotty_first_audio_latency_seconds",
			Help:    "Wall-clock seconds from receiving a request to first audible TTS chunk.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10},
		}),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dotty_request_duration_seconds",
			Help:    "End-to-end bridge request duration, partitioned by endpoint.",
			Buckets: PythonDefaultBuckets,
		}, []string{"endpoint"}),
		RequestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dotty_request_errors_total",
			Help: "Request errors, partitioned by endpoint and error kind.",
		}, []string{"endpoint", "kind"}),
		KidModeActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dotty_kid_mode_active",
			Help: "1 if Kid Mode is currently enforcing child-safety guardrails, else 0.",
		}),
		PerceptionEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dotty_perception_events_total",
			Help: "Ambient-perception events ingested, partitioned by event type.",
		}, []string{"type"}),
		CalendarFetchFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dotty_calendar_fetch_failures_total",
			Help: "Total Google Calendar fetch failures (excludes intentional skips).",
		}, []string{"kind"}),
		ContentFilterHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dotty_content_filter_hits_total",
			Help: "Content-filter blocks partitioned by severity tier (redirect=profanity/slurs, log=sexual/violence, alert=hard drugs).",
		}, []string{"tier"}),
		SmartModeInvocations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dotty_smart_mode_invocations_total",
			Help: "Smart-Mode invocations (request opted into the larger LLM).",
		}),
		LLMTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dotty_llm_tokens_total",
			Help: "LLM token counts emitted/consumed, partitioned by direction and model.",
		}, []string{"kind", "model"}),
		PerceptionDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dotty_perception_dropped_total",
			Help: "Perception events dropped because a consumer's queue was full, partitioned by consumer.",
		}, []string{"consumer"}),
		SSEEvictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dotty_sse_evictions_total",
			Help: "Perception feed subscribers disconnected for falling behind.",
		}),
		MemoryWritesDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dotty_memory_writes_dropped_total",
			Help: "Memory writes refused with 503 because the writer queue was full.",
		}),
	}
	for _, ep := range TimedEndpoints {
		m.RequestDuration.WithLabelValues(ep)
	}
	for _, ep := range VoiceEndpoints {
		for _, k := range ErrorKinds {
			m.RequestErrors.WithLabelValues(ep, k)
		}
	}
	for _, v := range PerceptionEventTypes {
		m.PerceptionEvents.WithLabelValues(v)
	}
	for _, v := range FilterTiers {
		m.ContentFilterHits.WithLabelValues(v)
	}
	for _, v := range CalendarFailureKinds {
		m.CalendarFetchFailures.WithLabelValues(v)
	}
	reg.MustRegister(m.FirstAudioLatency, m.RequestDuration, m.RequestErrors, m.KidModeActive,
		m.PerceptionEvents, m.CalendarFetchFailures, m.ContentFilterHits, m.SmartModeInvocations,
		m.LLMTokens, m.PerceptionDropped, m.SSEEvictions, m.MemoryWritesDropped)
	return m
}
