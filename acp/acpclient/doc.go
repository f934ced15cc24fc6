// Package acpclient speaks the Agent Client Protocol to an agent child
// (`zeroclaw acp` or any ACP agent) for acp's Supervisor and Pool: New
// returns the agentconn.Protocol to set as acp.Config.Protocol, and each
// child generation gets a Client, its agentconn.ChildConn.
//
// A stdout guard sits in front of the ACP SDK: it drops non-JSON noise,
// keeps frames over 8 MiB away from the SDK (its limit is 10 MiB), answers
// requests the bridge does not serve, and paces notifications so the SDK's
// 1024-slot queue never overflows. One dispatcher receives every inbound
// frame; the dialect is detected from the raw initialize result and one
// adapter per dialect (ACP v1, legacy L0–L2) translates frames. The SDK's
// slog records go to the "rpc" logger.
//
// session/request_permission is decided by the configured
// agentconn.Permissioner (acp's bridge uses agentconn.Policy) for the tool
// the request itself names: its name fields, a tool_call update with the
// same toolCallId earlier in the turn, ZeroClaw's rawInput, or an approval
// title of a known agent; never the session's previous tool. Options are
// chosen by kind, never by display name; a request that identifies no tool
// is counted in dotty_acp_permission_unnamed_total.
//
// Dial connects a Client to an agent in the same process, for tests and
// benchmarks.
package acpclient
