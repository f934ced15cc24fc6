package bridgeapp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/common/expfmt"
)

// family is one metric family as bridge.py (or the Go additions) define it.
type family struct {
	typ, help string // help "": a Go-only series, any help text
	labels    []string
}

// dottyFamilies is every dotty_* family bridge.py exported, with its exact
// type, HELP and labels (existing Grafana boards query them), plus the
// Go-only ones; each feature registers its own, so only the built bridge
// has them all.
var dottyFamilies = map[string]family{
	"dotty_first_audio_latency_seconds":        {"histogram", "Wall-clock seconds from receiving a request to first audible TTS chunk.", nil},
	"dotty_request_duration_seconds":           {"histogram", "End-to-end bridge request duration, partitioned by endpoint.", []string{"endpoint"}},
	"dotty_request_errors_total":               {"counter", "Request errors, partitioned by endpoint and error kind.", []string{"endpoint", "kind"}},
	"dotty_active_acp_sessions":                {"gauge", "Number of live agent sessions in the pool (one per conversation, at most ZEROCLAW_MAX_SESSIONS).", nil},
	"dotty_kid_mode_active":                    {"gauge", "1 if Kid Mode is currently enforcing child-safety guardrails, else 0.", nil},
	"dotty_perception_events_total":            {"counter", "Ambient-perception events ingested, partitioned by event type.", []string{"type"}},
	"dotty_calendar_fetch_failures_total":      {"counter", "Total Google Calendar fetch failures (excludes intentional skips).", []string{"kind"}},
	"dotty_content_filter_hits_total":          {"counter", "Content-filter blocks partitioned by severity tier (redirect=profanity/slurs, log=sexual/violence, alert=hard drugs).", []string{"tier"}},
	"dotty_smart_mode_invocations_total":       {"counter", "Smart-Mode invocations (request opted into the larger LLM).", nil},
	"dotty_perception_dropped_total":           {"counter", "", []string{"consumer"}},
	"dotty_sse_evictions_total":                {"counter", "", nil},
	"dotty_perception_devices_evicted_total":   {"counter", "", nil},
	"dotty_memory_writes_dropped_total":        {"counter", "", nil},
	"dotty_memory_writes_pending":              {"gauge", "", nil},
	"dotty_memory_write_failures_total":        {"counter", "", nil},
	"dotty_http_connections_turned_away_total": {"counter", "", nil},
	"dotty_http_upload_budget_in_use_bytes":    {"gauge", "", nil},
	"dotty_http_upload_budget_waiting":         {"gauge", "", nil},
	"dotty_http_upload_budget_refused_total":   {"counter", "", nil},
	"dotty_journal_write_failures_total":       {"counter", "", []string{"file"}},
	"dotty_agent_sessions_restored_total":      {"counter", "", []string{"how"}},
	"dotty_agent_sessions_lost_total":          {"counter", "", []string{"reason"}},
}

// TestBuiltBridgeExportsEveryFamily builds the bridge (nothing starts) and
// reads its registry in the text exposition format /metrics serves: every
// family above is there with its type, HELP and labels, and the label
// values the dashboards query exist at zero before anything happened.
func TestBuiltBridgeExportsEveryFamily(t *testing.T) {
	cfg, err := parseConfig(nil, isolatedEnv(t, "ZEROCLAW_BIN", "/nonexistent/zeroclaw"))
	if err != nil {
		t.Fatal(err)
	}
	app, err := build(cfg, hclog.NewNullLogger(), lookups{})
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := app.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	got := map[string]family{}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&text, mf); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(mf.GetName(), "dotty_") || strings.HasPrefix(mf.GetName(), "dotty_acp_") {
			continue
		}
		f := family{typ: strings.ToLower(mf.GetType().String()), help: mf.GetHelp()}
		if m := mf.GetMetric(); len(m) > 0 {
			for _, lp := range m[0].GetLabel() {
				f.labels = append(f.labels, lp.GetName())
			}
		}
		if want, ok := dottyFamilies[mf.GetName()]; ok && want.help == "" {
			f.help = ""
		}
		if len(f.labels) == 0 && len(dottyFamilies[mf.GetName()].labels) > 0 {
			f.labels = dottyFamilies[mf.GetName()].labels // no series yet: labels unseen
		}
		got[mf.GetName()] = f
	}
	if d := cmp.Diff(got, dottyFamilies, cmp.AllowUnexported(family{})); d != "" {
		t.Errorf("dotty_* families (-got +want):\n%s", d)
	}
	for _, want := range []string{
		`dotty_first_audio_latency_seconds_bucket{le="0.1"} 0`,
		`dotty_request_errors_total{endpoint="message",kind="timeout"} 0`,
		`dotty_request_errors_total{endpoint="message_stream",kind="agent_unavailable"} 0`,
		`dotty_perception_events_total{type="face_identified_rejected"} 0`,
		`dotty_content_filter_hits_total{tier="alert"} 0`,
		`dotty_calendar_fetch_failures_total{kind="orchestrator"} 0`,
		"dotty_smart_mode_invocations_total 0\n",
		"dotty_kid_mode_active 1\n", // DOTTY_KID_MODE defaults to on
		`dotty_perception_dropped_total{consumer="face_greeter"} 0`,
		"dotty_memory_writes_dropped_total 0\n",
		"dotty_memory_writes_pending 0\n",
		"dotty_memory_write_failures_total 0\n",
		`dotty_agent_sessions_restored_total{how="recreated"} 0`,
		`dotty_agent_sessions_lost_total{reason="agent_restart"} 0`,
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the exposition lacks %q", want)
		}
	}
}
