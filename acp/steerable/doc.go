// Package steerable speaks the steerable sidecar's protocol (`python3 -m
// steerable_sidecar`: JSON-RPC 2.0, one JSON object per line on the
// child's stdin and stdout, logs on stderr) for an acp.Supervisor, so the
// bridge can run on any OpenAI-compatible model through the sidecar while
// keeping everything else: one supervisor (spawn, stderr pump, backoff
// restarts, the stop ladder) and one acp.Pool (keys, leases, rotation,
// slots, barge-in) serve both protocols.
//
// # Usage
//
//	cmd, args := steerable.SplitCommand(os.Getenv("STEERABLE_CMD"))
//	proto := steerable.New(steerable.Config{Model: model, BaseURL: url, APIKey: steerable.Secret(key)})
//	sup := acp.NewSupervisor(acp.Config{Command: cmd, Args: args, Protocol: proto, Logger: log})
//	pool := acp.NewPool(acp.PoolConfig{Logger: log}, sup)
//
// # How the bridge drives the sidecar
//
//   - Ready: whichever comes first of the `__SIDECAR_READY__:{…}` marker
//     on stderr and the lifecycle.ready notification (a --quiet-ready
//     sidecar sends only the latter), within acp.Config.InitTimeout.
//     Nothing is sent before it.
//   - Sessions: one agent.session.create per pool session. The catalogue
//     gives no shape for AgentSession: its id is read from "id",
//     "sessionId" or "session_id", or a bare string. There is no method to
//     close a session, so retiring one only drops the bridge's history.
//     After a sidecar restart a session is reopened with
//     agent.session.resume {"sessionId"}; if that fails, with
//     agent.session.create, carrying the history over.
//   - History: the bridge keeps each session's conversation and sends it
//     with every agent.chat.stream as messages (user prompts and the
//     assistant replies as delivered), bounded by the pool's rotation
//     rules and Config.HistoryChars. A reply cut short by a barge-in is
//     kept as far as it was delivered, ending in "…"; a turn that failed
//     is not kept.
//   - Chat: agent.chat.stream carries provider, model, baseUrl, apiKey,
//     temperature and messages, and sessionId, which the spec's example
//     does not show: it ties the chat to the session the bridge created.
//     A sidecar answering -32602 about it gets chats without it from then
//     on. Its {"streamId"} answer binds the stream before the next frame
//     is read; stream.chunk deltas go to the turn in order (through the
//     same bounded mailbox as ACP chunks), stream.done ends the turn
//     (cancelled:true after a barge-in), stream.error fails it. Chunks
//     that overtake the answer are held (at most 256) while an answer is
//     awaited; notifications for streams nobody runs are dropped and
//     counted in dotty_acp_dropped_updates_total{reason="unknown_stream"}.
//   - Barge-in: agent.chat.cancel {"streamId"} is sent at once (as soon as
//     the id is known), and the pool settles the turn in the background.
//   - Errors: -32001…-32005, from an error response or named by
//     stream.error's kind, are *acp.AgentError of kinds budget_exhausted,
//     policy_denied, tool_dispatch, storage and transport; other codes are
//     *acp.RPCError.
//   - Health: system.ping every Config.PingInterval fills /health
//     (version, protocolVersion, status, uptime, loadedProviders,
//     loadedTools); Health never waits for it. A sidecar that misses
//     Config.PingMisses pings in a row is restarted.
//   - Stop: system.shutdown, then StopGrace for the exit; then stdin is
//     closed and the group gets SIGTERM; StopGrace later, SIGKILL.
//
// # Concurrency properties
//
// One reader goroutine per sidecar process reads its stdout and never
// blocks on a turn: frames are bounded (Config.MaxLine), notifications go
// into the turn's bounded mailbox, and whatever it must write (an answer to
// a request from the sidecar, a deferred cancel) is written on another
// goroutine. A turn's text is bounded by Config.MaxReply. No lock is held
// across I/O. Every goroutine a connection starts ends with it; the
// supervisor waits for them before it reaps the child.
package steerable
