package acp

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
)

// Metrics holds the acp package's Prometheus series. Build it once with
// NewMetrics and share it between the Supervisor and the Pool.
type Metrics struct {
	// ActiveSessions is dotty_active_acp_sessions (bridge.py's name), read
	// from the pool at scrape time.
	ActiveSessions prometheus.GaugeFunc
	// ChildUp is 1 while an initialised agent child is ready.
	ChildUp prometheus.Gauge
	// Restarts counts child restarts by the reason the previous child ended.
	Restarts *prometheus.CounterVec
	// Backoff is the delay before the next start attempt, 0 when none is pending.
	Backoff prometheus.Gauge
	// Dialect is an info gauge: 1 for the running child's dialect.
	Dialect *prometheus.GaugeVec
	// Metrics are the series the agent's protocol fills
	// (DroppedUpdates, PermissionUnidentified).
	agentconn.Metrics
	// SessionWaits counts turns that queued for a session slot because
	// every session was in a turn.
	SessionWaits prometheus.Counter
	// SessionYields counts sessions closed for a turn queued for a slot
	// because their key kept them busy turn after turn.
	SessionYields prometheus.Counter
	// KeysForgotten counts session keys dropped to keep the key table bounded.
	KeysForgotten prometheus.Counter

	// SessionsRestored counts sessions reopened after their agent process
	// restarted, by how (RestoreHows); SessionsLost counts those that
	// could not be, so their conversation starts again, by reason
	// (LossReasons). Sessions that would have been rotated anyway are in
	// neither.
	SessionsRestored *prometheus.CounterVec
	SessionsLost     *prometheus.CounterVec

	sessions atomic.Pointer[func() int]
}

// NewMetrics creates the series and registers them on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	s := metric.On(reg)
	m := &Metrics{
		Metrics: agentconn.Metrics{
			DroppedUpdates: s.CounterVec("dotty_acp_dropped_updates_total",
				"Agent updates not delivered to a turn, partitioned by reason.", "reason"),
			PermissionUnidentified: s.CounterVec("dotty_acp_permission_unnamed_total",
				"Agent permission requests whose tool could not be identified, by decision (deny while kid mode is on).", "decision"),
		},
		ChildUp: s.Gauge("dotty_acp_child_up",
			"1 while the supervised ACP agent child is initialised and ready, else 0."),
		Restarts: s.CounterVec("dotty_acp_child_restarts_total",
			"ACP agent child restarts, partitioned by the reason the previous child ended.", "reason"),
		Backoff: s.Gauge("dotty_acp_backoff_seconds",
			"Delay before the next ACP agent start attempt; 0 when none is pending."),
		Dialect: s.GaugeVec("dotty_acp_dialect",
			"Info gauge: 1 for the ACP dialect spoken by the running agent child.", "dialect"),
		SessionWaits: s.Counter("dotty_acp_session_waits_total",
			"Voice turns that waited for an agent session slot because every session was in a turn."),
		SessionYields: s.Counter("dotty_acp_session_yields_total",
			"Agent sessions handed to a turn waiting for a slot because their key kept them busy turn after turn."),
		KeysForgotten: s.Counter("dotty_acp_session_keys_forgotten_total",
			"Caller session keys without an agent session dropped to keep the key table bounded."),
		SessionsRestored: s.CounterVec("dotty_agent_sessions_restored_total",
			"Agent sessions reopened after their agent process restarted: resumed by the agent, or recreated with the conversation the bridge kept.", "how"),
		SessionsLost: s.CounterVec("dotty_agent_sessions_lost_total",
			"Agent sessions whose conversation was lost when their agent process restarted, partitioned by reason.", "reason"),
	}
	m.ActiveSessions = s.GaugeFunc("dotty_active_acp_sessions",
		"Number of live agent sessions in the pool (one per conversation, at most ZEROCLAW_MAX_SESSIONS).", m.sessionCount)
	metric.Zero(m.Restarts.WithLabelValues, RestartReasons...)
	metric.Zero(m.PermissionUnidentified.WithLabelValues, agentconn.Allow.String(), agentconn.Deny.String())
	metric.Zero(m.SessionsRestored.WithLabelValues, RestoreHows...)
	metric.Zero(m.SessionsLost.WithLabelValues, LossReasons...)
	return m
}

// RestartReasons are the reason labels of dotty_acp_child_restarts_total.
var RestartReasons = []string{"exit", "connection_closed", "recycled", "init_failed", "unsupported", "spawn_failed", "binary_missing"}

// How a session was reopened after its agent restarted (the how label of
// dotty_agent_sessions_restored_total).
const (
	// RestoreResumed: the agent still had the session and reopened it.
	RestoreResumed = "resumed"
	// RestoreRecreated: the agent had forgotten it; a new session carries
	// the conversation the bridge kept (the steerable sidecar).
	RestoreRecreated = "recreated"
)

// RestoreHows are the how labels of dotty_agent_sessions_restored_total.
var RestoreHows = []string{RestoreResumed, RestoreRecreated}

// Why a conversation was lost when its agent restarted (the reason label
// of dotty_agent_sessions_lost_total).
const (
	// LossAgentRestart: the agent's sessions do not outlive its process.
	LossAgentRestart = "agent_restart"
	// LossResumeFailed: reopening the session on the new process failed.
	LossResumeFailed = "resume_failed"
)

// LossReasons are the reason labels of dotty_agent_sessions_lost_total.
var LossReasons = []string{LossAgentRestart, LossResumeFailed}

func (m *Metrics) sessionCount() float64 {
	if f := m.sessions.Load(); f != nil {
		return float64((*f)())
	}
	return 0
}
