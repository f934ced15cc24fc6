// Package acp runs the bridge's agent, whatever protocol it speaks: it
// supervises one long-running child — `zeroclaw acp` or any ACP agent, or
// the steerable sidecar — and shares it between callers through a pool of
// agent sessions. The protocol is Config.Protocol (package agentconn's
// contract): acpclient's for ACP agents, steerable's for the sidecar; acp
// imports neither.
//
// # Components
//
//   - Supervisor owns the child process end to end: its own pipes and
//     process group, stderr pumped line by line into the "child" logger
//     (rate-capped, panics raised to Error), death noticed the moment Wait
//     returns or the connection closes, restarts with exponential backoff
//     that never gives up, and a stop ladder on shutdown (the protocol's
//     polite step, close stdin, SIGTERM the group, SIGKILL the group).
//     Children are started from one locked OS thread with a parent-death
//     signal, so a bridge killed outright takes its agent with it. After a
//     failure, Acquire waits at most UnavailableGrace for the restart, then
//     fails fast with ErrAgentUnavailable until the agent is ready again; a
//     restart asked for with Restart is not a failure and is waited for.
//   - Protocol (agentconn) is what the supervisor speaks to its child,
//     through two small interfaces: ChildConn, the supervisor's hooks
//     (handshake, health info, stderr lines, the polite stop), and Conn,
//     what the pool drives (sessions, prompts streaming into a Mailbox,
//     cancel, liveness, Traits). Config.Protocol is required: acpclient.New
//     for ACP (its stdout guard, dialects and permission handling are
//     documented there), steerable.New for the steerable sidecar.
//   - Pool maps callers to agent sessions and runs turns, whatever the
//     protocol.
//   - agentconn.AgentError carries failures an agent reports by class (budget,
//     policy, tool, storage, transport), so the bridge can answer each its
//     own way without knowing which agent runs.
//
// # Usage
//
//	sup := acp.NewSupervisor(acp.Config{Command: "zeroclaw", Args: []string{"acp"},
//		Protocol: acpclient.New(acpclient.Config{Permissions: policy}), Logger: log})
//	// or the steerable sidecar:
//	// acp.Config{Command: "python3", Args: []string{"-m", "steerable_sidecar"},
//	//	Protocol: steerable.New(steerable.Config{Model: model}), Logger: log}
//	pool := acp.NewPool(acp.PoolConfig{Logger: log}, sup)
//	go sup.Run(ctx)
//	go pool.Run(ctx)
//	res, err := pool.Turn(ctx, acp.TurnRequest{
//		Key:     sessionID,
//		Prompt:  func(turn int) string { return buildPrompt(turn) },
//		OnChunk: func(text string) { stream(text) },
//	})
//
// # Concurrency properties
//
//   - Turns on one pool key are serialised: the key's lease is a one-slot
//     semaphore taken in arrival order within the caller's ctx. Turns on
//     different keys run concurrently on a v1 agent and on the steerable
//     sidecar; a legacy agent serves
//     one turn per process, so its turns also share a process lease.
//   - Protocol readers never block on a turn (for ACP: SDK callbacks): a
//     streamed update is decoded, routed by session (or stream) id and
//     appended to the running turn's Mailbox (capped at 1 MiB). Updates
//     with no running turn, such as late output of a cancelled turn or a
//     stream nobody runs, are dropped and counted in
//     dotty_acp_dropped_updates_total.
//   - OnChunk runs on the caller's goroutine, in agent order, and never
//     after the turn's ctx has ended.
//   - Ending a turn's ctx (barge-in, timeout) returns from Turn at once. On
//     an agent that cancels in protocol (ACP v1: session/cancel, pending
//     permission requests answered "cancelled"; steerable:
//     agent.chat.cancel) the pool waits in the background, still holding
//     the key's lease, for the agent's cancelled result; the session
//     survives and the cancelled turn does not count. An ACP agent that has
//     not answered within CancelGrace is finishing what it cannot interrupt
//     (ZeroClaw 0.8.0 runs a tool to its end): the key's next turn waits
//     for the result within its own ctx, and only past SessionIdle is the
//     session retired (Traits.KeepCancelled); a steerable session is
//     retired at CancelGrace. A legacy agent
//     cannot cancel: its turn is detached and runs out while later turns wait
//     up to InitTimeout for the process, after which the child is recycled.
//   - A session the agent says it lost (-32000) is replaced and the prompt
//     rebuilt at turn index 0 and sent once more. Any other failure retires
//     the session, so the next turn starts fresh.
//   - Sessions of an agent that keeps them across restarts (Traits.Resume:
//     an ACP agent advertising session/resume or session/load, such as
//     ZeroClaw ≥ 0.8.0 with its session store; the steerable sidecar) are
//     reopened on the new process before the key's next turn, keeping
//     their turn count and age, unless a rotation rule is due; one left
//     unused is forgotten once idle. One the new process refuses to reopen
//     is counted lost and the turn goes on on a new session. Other ACP
//     sessions end with their process.
//   - Session slots are counted exactly: a slot is reserved under the pool
//     lock before session/new is sent and held until the agent has answered
//     the session's close, so the agent never holds more than the limit.
//     When every session is in a turn, a turn that needs a new one waits in
//     one FIFO queue (bounded by SessionQueue) within its own ctx; an idle
//     session is closed, least recently used first, to make room. A key
//     whose turns arrive back to back never leaves its session idle, so
//     once the queue's head has waited through the end of one of its turns,
//     the key may start one more; after that its session is closed for the
//     head and the key queues like anyone else: no caller holds slots while
//     others wait, beyond one turn per session.
//   - Session creation (and resumption) runs to its end (bounded by
//     InitTimeout) whatever the caller does; if the caller has gone, the
//     session is still recorded for its key, so no session is ever left
//     open unaccounted for. An ACP session the agent creates (or reopens)
//     only after InitTimeout is closed when its answer arrives, and holds
//     its slot until then.
//   - The key table is bounded (MaxKeys): keys without a session or a turn
//     are forgotten, least recently used first. Keys in a turn are kept, so
//     a burst can pass the bound by the turns in flight; the next new key
//     after them brings the table back within it.
//   - Health snapshots never block on a turn or on the agent.
//
// # Lifecycle
//
// Supervisor.Run and Pool.Run block until their ctx ends. Stop the pool
// before the supervisor: the pool's background settlements finish first,
// then the supervisor takes the protocol's polite step (ACP: retire the
// remaining sessions; steerable: system.shutdown) and stops the child.
// Every goroutine either package type, or a protocol's connection, starts
// has ended when its Run returns.
package acp
