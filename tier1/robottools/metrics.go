package robottools

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
)

// Outcomes of a tool call, the outcome label of dotty_mcp_tool_calls_total.
const (
	outcomeOK          = "ok"
	outcomeError       = "error"
	outcomeRefused     = "refused"
	outcomeRateLimited = "rate_limited"
)

// Metrics are the robot tools' series.
type Metrics struct {
	// ToolCalls is dotty_mcp_tool_calls_total{tool,outcome}: every call of
	// a known tool, outcome ok, error (a tool error), refused (the
	// permission policy, kid mode, an ended token) or rate_limited.
	ToolCalls *prometheus.CounterVec
}

// NewMetrics creates the series on reg (nil: unregistered), each tool's
// ok series at zero.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{ToolCalls: metric.On(reg).CounterVec("dotty_mcp_tool_calls_total",
		"Robot tool calls over MCP, by tool and outcome (ok, error, refused, rate_limited).", "tool", "outcome")}
	for _, name := range toolNames {
		m.ToolCalls.WithLabelValues(name, outcomeOK)
	}
	return m
}
