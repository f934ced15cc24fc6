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
// Verified against the sidecar's source, pathlyapp/steerable-framework
// v0.2.3 (commit 192a937, May 2026; its newest), read and run by hand:
// what each method reads is in acp/internal/sidecarwire, which the demo
// agent and the tests' fake follow.
//
//   - Ready: whichever comes first of the `__SIDECAR_READY__:{…}` marker
//     on stderr and the lifecycle.ready notification (a --quiet-ready
//     sidecar sends only the latter), within acp.Config.InitTimeout.
//     Nothing is sent before it.
//   - Sessions: one agent.session.create {"chatId"} per pool session; the
//     sidecar requires chatId (without it: -32603 "'chatId'"), and the
//     bridge names each pool key's conversation with ChatID(key), stable
//     across restarts. The answer is an AgentSession whose key is
//     sessionId (no id). There is no method to close a session, so
//     retiring one only drops the bridge's history. After a sidecar
//     restart a session is reopened with agent.session.resume
//     {"sessionId"}; the stock sidecar keeps sessions in memory and answers
//     -32004 "session not found", so it is created again for the same
//     chat, carrying the history over. Either way the conversation goes
//     on, even when the sidecar died in the middle of a turn (the pool
//     keeps such a session: Traits.Resume).
//   - History: the bridge keeps each session's conversation and sends it
//     with every agent.chat.stream as messages (user prompts and the
//     assistant replies as delivered), bounded by the pool's rotation
//     rules and Config.HistoryChars. A reply cut short by a barge-in is
//     kept as far as it was delivered, ending in "…"; a turn that failed
//     is not kept.
//   - Chat: agent.chat.stream carries provider, model (the sidecar
//     refuses a chat without one: -32602 "failed to construct LLM
//     provider: model is required"), baseUrl, apiKey, temperature and
//     messages; the sidecar reads no session. Its {"streamId"} answer binds
//     the stream before the next frame is read; stream.chunk deltas go to the turn in order (through the
//     same bounded mailbox as ACP chunks), stream.done ends the turn
//     (cancelled:true after a barge-in), stream.error fails it. Chunks
//     that overtake the answer are held (at most 256) while an answer is
//     awaited; notifications for streams nobody runs are dropped and
//     counted in dotty_acp_dropped_updates_total{reason="unknown_stream"}.
//   - Barge-in: agent.chat.cancel {"streamId"} is sent at once (as soon as
//     the id is known), and the pool settles the turn in the background.
//   - Errors: the sidecar's own failure classes become *agentconn.AgentError
//     kinds: an error answer's kind or code (budget_exhausted -32021,
//     policy_denied -32020, tool_failed -32030, storage -32011), or the
//     exception class stream.error names (BudgetExhaustedError …; the HTTP
//     client's ConnectError, ReadTimeout, HTTPStatusError … are transport).
//     Other errors are *agentconn.RPCError. The -32001…-32005 of the sidecar's
//     published catalogue are never raised by it.
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
