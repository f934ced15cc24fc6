package bridge

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
)

type agentStub struct{ h acp.AgentHealth }

func (a agentStub) Health() acp.AgentHealth { return a.h }

type poolStub struct{ h acp.PoolHealth }

func (p poolStub) Health() acp.PoolHealth { return p.h }

func newTestServer(t *testing.T, a acp.AgentHealth, p acp.PoolHealth) (*Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	acp.NewMetrics(reg)
	return New(Config{Host: "127.0.0.1", Gatherer: reg, Agent: agentStub{a}, Sessions: poolStub{p}, Logger: hclog.NewNullLogger()}), reg
}

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestHealthKeysAndOrder(t *testing.T) {
	tests := []struct {
		name  string
		agent acp.AgentHealth
		pool  acp.PoolHealth
		want  string
	}{
		{
			name:  "child alive with a cached session of seven turns",
			agent: acp.AgentHealth{Command: "zeroclaw acp", PID: 42, Dialect: "v1", State: "ready", Running: true, Restarts: 1, UptimeSeconds: 3.5},
			pool:  acp.PoolHealth{Sessions: 2, CachedSession: true, SessionTurns: 7},
			want: `{"status":"ok","service":"zeroclaw-bridge","acp_running":true,"cached_session":true,"session_turns":7,` +
				`"agent":{"command":"zeroclaw acp","pid":42,"dialect":"v1","state":"ready","running":true,"restarts":1,"uptime_s":3.5},"sessions":2}`,
		},
		{
			name:  "binary missing",
			agent: acp.AgentHealth{Command: "/opt/zeroclaw acp", State: "backoff", LastError: "agent binary missing: /opt/zeroclaw", BinaryMissing: true},
			want: `{"status":"ok","service":"zeroclaw-bridge","acp_running":false,"cached_session":false,"session_turns":0,` +
				`"agent":{"command":"/opt/zeroclaw acp","pid":0,"dialect":"","state":"backoff","running":false,"restarts":0,"uptime_s":0,"last_error":"agent binary missing: /opt/zeroclaw","binary_missing":true},"sessions":0}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newTestServer(t, tt.agent, tt.pool)
			rec := get(t, s.Echo(), "/health")
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != tt.want {
				t.Errorf("got %d %s\n%s\nwant\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), tt.want)
			}
		})
	}
}

func TestMetricsServeEverySeries(t *testing.T) {
	s, _ := newTestServer(t, acp.AgentHealth{}, acp.PoolHealth{})
	a, b := get(t, s.Echo(), "/metrics"), get(t, s.Echo(), "/metrics/")
	if a.Code != 200 || b.Code != 200 || a.Body.String() != b.Body.String() {
		t.Fatalf("/metrics %d and /metrics/ %d differ", a.Code, b.Code)
	}
	body := a.Body.String()
	for _, want := range []string{
		"# TYPE dotty_first_audio_latency_seconds histogram",
		"# TYPE dotty_request_duration_seconds histogram",
		"# TYPE dotty_request_errors_total counter",
		"# TYPE dotty_active_acp_sessions gauge",
		"# TYPE dotty_kid_mode_active gauge",
		"# TYPE dotty_perception_events_total counter",
		"# TYPE dotty_calendar_fetch_failures_total counter",
		"# TYPE dotty_content_filter_hits_total counter",
		"# TYPE dotty_smart_mode_invocations_total counter",
		"# TYPE dotty_sse_evictions_total counter",
		"# TYPE dotty_memory_writes_dropped_total counter",
		"# TYPE dotty_acp_child_up gauge",
		"# TYPE dotty_acp_child_restarts_total counter",
		"# TYPE dotty_acp_backoff_seconds gauge",
		`dotty_first_audio_latency_seconds_bucket{le="0.25"} 0`,
		`dotty_request_errors_total{endpoint="message_stream",kind="binary_missing"} 0`,
		`dotty_perception_events_total{type="face_identified_rejected"} 0`,
		`dotty_content_filter_hits_total{tier="alert"} 0`,
		`dotty_calendar_fetch_failures_total{kind="orchestrator"} 0`,
		"dotty_smart_mode_invocations_total 0",
		"# HELP dotty_request_duration_seconds End-to-end bridge request duration, partitioned by endpoint.",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestRequestDurationUsesPythonBuckets(t *testing.T) {
	s, _ := newTestServer(t, acp.AgentHealth{}, acp.PoolHealth{})
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.RequestDuration.WithLabelValues("message").Observe(0.07)
	s.cfg.Gatherer = reg
	body := get(t, New(s.cfg).Echo(), "/metrics").Body.String()
	for _, le := range []string{"0.005", "0.075", "0.75", "7.5", "10", "+Inf"} {
		if !strings.Contains(body, `dotty_request_duration_seconds_bucket{endpoint="message",le="`+le+`"}`) {
			t.Errorf("missing bucket le=%s", le)
		}
	}
}

func TestErrorsUseFastAPIShapes(t *testing.T) {
	s, _ := newTestServer(t, acp.AgentHealth{}, acp.PoolHealth{})
	s.Echo().GET("/panics", func(echo.Context) error { panic("boom") })
	if rec := get(t, s.Echo(), "/nowhere"); rec.Code != 404 || rec.Body.String() != `{"detail":"Not Found"}` {
		t.Errorf("404: %d %s", rec.Code, rec.Body.String())
	}
	rec := httptest.NewRecorder()
	s.Echo().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/health", nil))
	if rec.Code != 405 || rec.Body.String() != `{"detail":"Method Not Allowed"}` {
		t.Errorf("405: %d %s", rec.Code, rec.Body.String())
	}
	if rec := get(t, s.Echo(), "/panics"); rec.Code != 500 || rec.Body.String() != "Internal Server Error" {
		t.Errorf("panic: %d %s", rec.Code, rec.Body.String())
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Agent: agentStub{}, Sessions: poolStub{}}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"valid", ok, ""},
		{"port too big", Config{Port: 70000, Agent: agentStub{}, Sessions: poolStub{}}, "port 70000"},
		{"negative port", Config{Port: -1, Agent: agentStub{}, Sessions: poolStub{}}, "port -1"},
		{"no health sources", Config{}, "required for /health"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRunServesAndStops(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, _ := newTestServer(t, acp.AgentHealth{Running: true}, acp.PoolHealth{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Addr() == "" {
		if time.Now().After(deadline) {
			t.Fatal("server never listened")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + s.Addr() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(body), `"acp_running":true`) {
		t.Errorf("health over TCP: %s", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	select {
	case <-s.Stopping():
	default:
		t.Error("stopping channel not closed")
	}
}

func TestRunReportsListenFailure(t *testing.T) {
	s, _ := newTestServer(t, acp.AgentHealth{}, acp.PoolHealth{})
	s.cfg.Host = "256.0.0.1"
	if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("Run = %v", err)
	}
}
