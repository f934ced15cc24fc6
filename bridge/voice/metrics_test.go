package voice

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// newTestMetrics registers the server's series and the voice series on
// reg, as the bridge does.
func newTestMetrics(reg prometheus.Registerer) *Metrics {
	return NewMetrics(reg, bridge.NewMetrics(reg))
}

// TestMetricsExposition pins what NewMetrics puts on /metrics, byte for
// byte: the voice series and, in the server's request series, the voice
// routes' label values created at zero.
func TestMetricsExposition(t *testing.T) {
	testkit.MetricsGolden(t, func(reg prometheus.Registerer) *Metrics {
		server := bridge.NewMetrics(nil)
		reg.MustRegister(server.RequestDuration, server.RequestErrors)
		return NewMetrics(reg, server)
	})
}

// The server's /metrics serves the voice series as bridge.py did: HELP
// and type, the label values the dashboards query at zero, bridge.py's
// bucket label text in both formats, and no dotty_llm_tokens_total until
// something fills it.
func TestServerMetricsCarryVoiceSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	newTestMetrics(reg)
	acp.NewMetrics(reg)
	ts := httptest.NewServer(bridge.New(bridge.Config{Gatherer: reg}).Echo())
	defer ts.Close()

	body, _ := testkit.Scrape(t, ts.URL+"/metrics", "")
	for _, want := range []string{
		"# HELP dotty_first_audio_latency_seconds Wall-clock seconds from receiving a request to first audible TTS chunk.\n" +
			"# TYPE dotty_first_audio_latency_seconds histogram\n",
		"# HELP dotty_request_duration_seconds End-to-end bridge request duration, partitioned by endpoint.\n" +
			"# TYPE dotty_request_duration_seconds histogram\n",
		"# HELP dotty_request_errors_total Request errors, partitioned by endpoint and error kind.\n" +
			"# TYPE dotty_request_errors_total counter\n",
		"# HELP dotty_content_filter_hits_total Content-filter blocks partitioned by severity tier (redirect=profanity/slurs, log=sexual/violence, alert=hard drugs).\n" +
			"# TYPE dotty_content_filter_hits_total counter\n",
		"# HELP dotty_smart_mode_invocations_total Smart-Mode invocations (request opted into the larger LLM).\n" +
			"# TYPE dotty_smart_mode_invocations_total counter\n",
		`dotty_first_audio_latency_seconds_bucket{le="0.1"} 0`,
		`dotty_first_audio_latency_seconds_bucket{le="10.0"} 0`, // bridge.py's label text
		`dotty_first_audio_latency_seconds_bucket{le="1.0"} 0`,
		`dotty_request_duration_seconds_bucket{endpoint="message",le="0.075"} 0`,
		`dotty_request_duration_seconds_bucket{endpoint="message",le="1.0"} 0`,
		`dotty_request_duration_seconds_bucket{endpoint="message",le="+Inf"} 0`,
		`dotty_request_errors_total{endpoint="message",kind="timeout"} 0`,
		`dotty_request_errors_total{endpoint="message_stream",kind="binary_missing"} 0`,
		`dotty_request_errors_total{endpoint="message_stream",kind="exception"} 0`,
		`dotty_content_filter_hits_total{tier="alert"} 0`,
		"dotty_smart_mode_invocations_total 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "dotty_llm_tokens_total") {
		t.Error("dotty_llm_tokens_total has a series before anything filled it")
	}

	om, _ := testkit.Scrape(t, ts.URL+"/metrics", testkit.OpenMetrics)
	if want := `dotty_first_audio_latency_seconds_bucket{le="10.0"} 0`; !strings.Contains(om, want) {
		t.Errorf("OpenMetrics lacks %q", want)
	}
}
