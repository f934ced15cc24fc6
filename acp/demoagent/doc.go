// Package demoagent is the bridge's built-in demo agent: a real ACP v1 agent
// (Agent Client Protocol, JSON-RPC 2.0 with one JSON object per line) built on
// the agent side of github.com/coder/acp-go-sdk, that needs no model and no
// network.
//
// It exists so that a fresh machine can run the bridge end to end before
// ZeroClaw is installed: the bridge then starts `zeroclaw-bridge demo-agent`,
// which calls [Serve] on stdin and stdout, and talks to it exactly as it talks
// to the real agent. Tests and benchmarks run [Serve] in-process over
// [io.Pipe] pairs.
//
// The agent supports initialize, session/new, session/prompt,
// session/cancel and session/close. Every prompt is answered with [Reply]: one
// of the nine [Emoji] the robot can show, a space, and a quote of the user's
// last line ([UserLine]), streamed as several agent_message_chunk updates
// ([Chunks]) with [Options.ChunkDelay] between them, ending with stopReason
// "end_turn". session/cancel (or session/close) stops a running turn at once
// with stopReason "cancelled". Errors mirror ZeroClaw's: -32000 "Session not
// found: <id>" for an unknown session and -32002 "Session already has an
// active prompt turn: <id>" for a second prompt on a busy session.
//
// [ServeSteerable] is the same agent speaking the steerable sidecar's
// protocol instead (`zeroclaw-bridge demo-agent -protocol steerable`), for a
// bridge configured with AGENT_PROTOCOL=steerable: the same replies, quoting
// the last user message of each agent.chat.stream, streamed as stream.chunk
// notifications and cancelled by agent.chat.cancel.
package demoagent
