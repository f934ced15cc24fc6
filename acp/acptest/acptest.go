// Package acptest provides the fake ACP agents of every test. It imports
// nothing of this module but the demo agent's Unsupported stubs and
// acp/internal's JSON-RPC connection and re-exec plumbing, so acp's own
// in-package tests can use it as well as any other package.
//
// Agent is the one scriptable in-process agent: Script answers prompts
// declaratively (chunks, delays, hangs, errors, and tool calls with their
// permission requests in the wire shape of a real agent: ZeroClaw 0.8.4 or
// of May 2026, codex-acp, claude-agent-acp, gemini-cli — see Shape),
// OnPrompt by hand, and it records prompts, cancels, closes, concurrency
// and the answers to its permission requests (Asked). agenttest connects it
// to a real acp.Pool over pipes.
//
// For tests that need a real child process, a test binary re-executes
// itself as the agent: its TestMain calls MaybeRunHelper first, and
// Command returns how to start it in a mode. That fake agent speaks on the
// child's stdin/stdout and logs to stderr.
//
// # v1 modes (acp-go-sdk agent side)
//
// Their common behaviour ("echo"): initialize answers protocolVersion 1 with
// loadSession false, sessionCapabilities.close and no auth methods;
// session/new returns a random id; a prompt's reply is "😊 echo: " + its text
// blocks joined by "\n", streamed as three agent_message_chunk updates, then
// stopReason end_turn; session/cancel ends a running turn with stopReason
// cancelled; an unknown session answers -32000 "Session not found: <id>"; a
// prompt containing "FAIL" answers -32603 "Agent turn failed: requested";
// session/close forgets the session and is reported on stderr as
// "acptest: session/close <id>".
//
//	echo              the common behaviour; exits 0 at stdin EOF
//	slow-chunks       ZCB_ACPTEST_CHUNKS (20) chunks "c<i> ", ZCB_ACPTEST_DELAY (50ms) apart; cancellable;
//	                  with ZCB_ACPTEST_GATE set, a turn sends its first chunk, then waits
//	                  (cancellable) until that file exists before the rest; each
//	                  session/cancel is reported on stderr as "acptest: session/cancel <id>"
//	crash-after-init  answers initialize, exits 3 when the next request (session/new) arrives
//	crash-mid-turn    sends one chunk of a prompt, then exits 4
//	hang              prompts never end and ignore session/cancel
//	hang-init         never answers anything; exits 0 at stdin EOF
//	ignore-sigterm    echo, ignoring SIGTERM, SIGINT and stdin EOF (only SIGKILL ends it)
//	spam-stderr       writes ZCB_ACPTEST_LINES (5000) lines "spam line <i>" and a Rust panic
//	                  line to stderr at start, then echo
//	flood             a prompt sends ZCB_ACPTEST_FLOOD (3000) chunks "x" back to back, then end_turn
//	bigline           a prompt sends one 12 MiB chunk of "a", then "😊 small", then end_turn
//	lost-session      the process's first prompt answers -32000 and forgets its session
//	busy              the process's first prompt answers -32002 "Session already has an
//	                  active prompt turn: <id>" (once per process, so a retry on a new
//	                  session succeeds)
//	perm              a prompt "tool:<name>" (default shell) sends, in ZeroClaw 0.8.0's order, a pending tool_call
//	                  call-1 and a session/request_permission with ZeroClaw's four options
//	                  (allow-once, allow-always, reject-with-edit, reject-once) for
//	                  approval-1; "ask:<question>" asks ask-user-1 with choice-0, choice-1
//	                  (allow_once) and reject (reject_once); "cmd:<command>" asks cmd-1
//	                  with the command as its title and no tool name (allow-once,
//	                  reject-once); the reply is one chunk
//	                  "😊 outcome=<optionId>" or "😊 outcome=cancelled", or stopReason
//	                  cancelled without a chunk if the turn was cancelled meanwhile;
//	                  "tools:<shape>[/<locale>]:<tool>[|<title>],…" (shape zeroclaw,
//	                  zeroclaw-may, codex, claude or gemini; locale en, es, fr, ja,
//	                  zh-CN) calls the tools the way that agent does (see Shape)
//	                  and replies "😊 <tool>=<optionId or cancelled> …"
//	slow-new          echo, but session/new takes ZCB_ACPTEST_DELAY (300ms), or waits
//	                  for the file ZCB_ACPTEST_GATE when set, ignores the client
//	                  abandoning it, and is reported on stderr as
//	                  "acptest: session/new <id>"
//	ansi-stderr       echo, after one stderr line with ANSI colour codes, a tab, a bell
//	                  and a carriage return
//	grandchild        echo, after starting an ignore-sigterm copy of itself in its
//	                  process group (only a SIGKILL to the group ends it), reported on
//	                  stderr as "acptest: grandchild <pid>"
//	term-grandchild   echo, ignoring stdin EOF, after starting a term-logger copy of itself
//	                  in its process group (reported as in grandchild); on SIGTERM it
//	                  waits for that copy to exit, then exits
//	close-stdout      echo until session/new, which closes stdout and leaves the process
//	                  running, ignoring SIGTERM, SIGINT and stdin EOF (only SIGKILL ends it)
//	perm-hold         perm, but the permission wait ignores session/cancel like
//	                  ZeroClaw's approval gate: the turn ends only once it is answered
//	mcp-tools         an Agent advertising mcpCapabilities.http that connects to the HTTP
//	                  MCP server its session was offered, with the headers given; a
//	                  prompt saying "look left" calls its look tool (yaw -45, pitch 0)
//	                  and answers with the tool's text, one saying "feel sad" calls
//	                  set_mood (sad) and answers "😊 " and the tool's text, any other
//	                  is echoed; each
//	                  prompt appends its session's offer to ZCB_ACPTEST_MCP_LOG (MCPOffer)
//
// With ZCB_ACPTEST_STATE_DIR set, crash-after-init crashes only the first
// ZCB_ACPTEST_CRASHES runs and crash-mid-turn only the first
// ZCB_ACPTEST_CRASHES prompts (default: all), counted in files in that
// directory across restarts; later ones behave as echo.
//
// # Other modes (raw JSON lines, no SDK)
//
//	exit-1        writes "error: config file missing" to stderr and exits 1
//	term-logger   writes "acptest: term-logger ready <pid>" to stderr, then on SIGTERM
//	              "acptest: SIGTERM <pid>", and exits 0
//	bigresult     generic v1; a prompt is answered by a response line over 12 MiB
//	zeroclaw-v1   ZeroClaw 0.8.4: agentInfo zeroclaw-acp and _meta.zeroclaw in
//	              initialize; concurrent prompts (string or blocks joined "\n\n")
//	              stream "😊 ec", "ho: ", <text> and end with result.content
//	              "😊 echo: <text>" ("😊 from content" with ZCB_ACPTEST_CONTENT=override);
//	              a prompt containing "slow" streams "tick " every 50ms for up to 10 s;
//	              session/cancel emits the turn-cancelled marker and a cancelled result
//	              with content "<partial>\n\n[turn cancelled via client]"; a second
//	              concurrent prompt on a session answers -32002; session/stop and
//	              session/close; a _zeroclaw/history_trimmed notification precedes
//	              every 3rd prompt's chunks; with ZCB_ACPTEST_REQUIRE_ALIAS=<a>,
//	              session/new without agentAlias <a> answers -32602; a prompt
//	              containing "tool" streams "😊 let me look. ", sends a tool_call
//	              (shell) and runs it until the file ZCB_ACPTEST_GATE exists (30 s
//	              at most), racing it against session/cancel, then its
//	              tool_call_update and the echo; with ZCB_ACPTEST_ZEROCLAW=0.8.0-beta-1
//	              it is ZeroClaw of May 2026: agentInfo.version 0.8.0-beta-1, a tool
//	              runs to its end whatever the cancel (the turn then ends cancelled),
//	              and a cancelled result has no marker and ends "[interrupted by
//	              user]"; with ZCB_ACPTEST_OTP set it first prints ZeroClaw's OTP
//	              enrollment lines (OTPSecret) on stdout and an api_key=APIKey error
//	              on stderr; exits at stdin EOF.
//	              Its session store (see below) is ZeroClaw's: sessions and
//	              the messages of every turn that ended well (not a cancelled
//	              one) are kept; initialize advertises loadSession and
//	              sessionCapabilities resume and close only while the store
//	              is open; session/resume reopens a stored session, replaying
//	              nothing, session/load replays its conversation first
//	              (user_message_chunk, agent_message_chunk, tool_call and
//	              tool_call_update, status completed), both answering {},
//	              -32000 "Session not found: <id>" for a session the store
//	              lacks, -32602 for a live one, -32001 at 10 sessions, and
//	              reported on stderr as "acptest: <method> <id>"; session/close
//	              and session/stop forget the live session but keep it stored.
//	              A prompt containing "recall" answers Recall: how many turns
//	              the session's conversation held before it, and the last
//	              user text
//	legacy-l0     ZeroClaw 0.6.3: snake_case keys, session/event streaming, string prompts
//	legacy-l1     ZeroClaw 0.6.5–0.7.3: camelCase (snake fallback), otherwise as L0
//	legacy-l2     ZeroClaw 0.7.4: session/update streaming, string or array prompts, stopReason
//
// Legacy modes are strictly sequential: nothing sent during a turn is read
// before it ends. Their reply is "😊 echo: <text>" in three chunks 20ms
// apart (ZCB_ACPTEST_DELAY apart, default 1s, for prompts containing
// "slow"); L0 and L1 also send thinking, tool_call and tool_result events and print tracing log lines (one with ANSI colour) on
// stdout between frames; a prompt containing "FAIL" answers -32603 and
// deletes the session; session/stop is reported on stderr as
// "acptest: session/stop <id>".
//
// # Tunables (extra environment of the child)
//
//	ZCB_ACPTEST_CHUNKS         slow-chunks: number of chunks (20)
//	ZCB_ACPTEST_DELAY          slow-new (300ms), slow-chunks (50ms) and legacy "slow" prompts (1s): delay between chunks, a Go duration
//	ZCB_ACPTEST_GATE           slow-new: session/new answers once this file exists; slow-chunks: a turn's chunks after
//	                           the first wait for it; zeroclaw-v1: a tool runs until it exists
//	ZCB_ACPTEST_INIT_GATE      v1 SDK modes: initialize answers once this file exists
//	ZCB_ACPTEST_PROMPT_LOG     v1 SDK modes: every prompt's text is appended to this file as a
//	                           JSON string on a line of its own, as the agent received it
//	ZCB_ACPTEST_ZEROCLAW       zeroclaw-v1: "0.8.0-beta-1" plays ZeroClaw of May 2026
//	ZCB_ACPTEST_OTP            zeroclaw-v1: print ZeroClaw's OTP enrollment URI and a key at start
//	ZCB_ACPTEST_FLOOD          flood: number of notifications (3000)
//	ZCB_ACPTEST_LINES          spam-stderr: number of spam lines (5000)
//	ZCB_ACPTEST_STATE_DIR      crash-after-init, crash-mid-turn: directory of the crash counters
//	ZCB_ACPTEST_CRASHES        crash-after-init, crash-mid-turn: crashes before behaving as echo
//	ZCB_ACPTEST_CONTENT        zeroclaw-v1: "override" makes result.content "😊 from content"
//	ZCB_ACPTEST_REQUIRE_ALIAS  zeroclaw-v1: the agentAlias session/new requires
//	ZCB_ACPTEST_STORE          zeroclaw-v1: the session store's directory (as ZeroClaw's data dir:
//	                           <dir>/sessions/acp-sessions.json), so sessions outlive the process;
//	                           unset, a store in memory (a fresh one at each start); "off", no store
//	ZCB_ACPTEST_RESTORE        zeroclaw-v1: "load" leaves sessionCapabilities.resume out (and answers
//	                           session/resume -32601): an agent that can load but not resume
//	ZCB_ACPTEST_HIDE_LIMITS    zeroclaw-v1: leave _meta.zeroclaw (maxSessions …) out of initialize: an
//	                           agent whose session limit the bridge meets only as -32001
//	ZCB_ACPTEST_DIE_ON_REOPEN  zeroclaw-v1: a file; while it exists, session/resume or session/load
//	                           removes it and exits 7 (a process that dies while reopening)
package acptest

import (
	"os"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/reexec"
)

// ModeEnv selects the fake agent's mode in the re-executed test binary.
const ModeEnv = "ZCB_ACPTEST_MODE"

// MaybeRunHelper runs the fake agent and exits when ModeEnv is set;
// otherwise it returns at once.
func MaybeRunHelper() { reexec.MaybeRun(ModeEnv, run) }

// Command returns how to start the current test binary as a fake agent in
// mode: path is the test binary, args is nil and env holds ModeEnv=mode
// followed by extraEnv ("K=V"). Under the race detector env also sets
// GORACE's atexit_sleep_ms=0, so that exiting children need not sleep a
// second.
func Command(mode string, extraEnv ...string) (path string, args []string, env []string) {
	path, env = reexec.Command(ModeEnv, mode, extraEnv...)
	return path, nil, env
}

func run(mode string) int {
	switch mode {
	case "exit-1":
		_, _ = os.Stderr.WriteString("error: config file missing\n")
		return 1
	case "hang-init":
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				return 0
			}
		}
	case "term-logger":
		return runTermLogger()
	case "zeroclaw-v1", "bigresult":
		return runZeroClaw(mode)
	case "legacy-l0", "legacy-l1", "legacy-l2":
		return runLegacy(mode)
	case "mcp-tools":
		return runMCPTools()
	}
	return runSDK(mode)
}

var (
	envInt      = reexec.EnvInt
	envDuration = reexec.EnvDuration
)

// bumpCounter increments the named counter file in ZCB_ACPTEST_STATE_DIR
// and reports whether its old value was below ZCB_ACPTEST_CRASHES (always
// true without a state dir).
func bumpCounter(name string) bool {
	return reexec.Bump("acptest", os.Getenv("ZCB_ACPTEST_STATE_DIR"), name, "ZCB_ACPTEST_CRASHES")
}

// blockForever parks the process until a signal kills it. A sleeping timer
// keeps the runtime from declaring a deadlock.
func blockForever() {
	for {
		time.Sleep(time.Hour)
	}
}
