// Package acptest provides fake ACP agents for the acp package's tests. A
// test binary re-executes itself as the agent child: its TestMain calls
// MaybeRunHelper first, and Command returns how to start it in a mode.
//
// # Modes
//
// v1 modes run on acp-go-sdk's agent side. Their common behaviour ("echo"):
// the reply to a prompt is "😊 echo: " + the prompt's text blocks joined by
// "\n", streamed as three agent_message_chunk updates, then end_turn;
// session/cancel ends the turn with stopReason "cancelled"; an unknown
// session answers -32000 "Session not found: <id>"; a prompt containing
// "FAIL" answers -32603 "Agent turn failed: requested"; session/close
// forgets the session. session/close and session/stop are reported on
// stderr as "acptest: <method> <session>".
//
//	echo              the common behaviour; exits 0 at stdin EOF
//	slow-chunks       ZCB_ACPTEST_CHUNKS (20) chunks "c<i> " every ZCB_ACPTEST_DELAY (50ms)
//	crash-after-init  answers initialize, exits 3 when session/new arrives
//	crash-mid-turn    sends one chunk of a prompt, then exits 4
//	hang              prompts never end and ignore session/cancel
//	hang-init         never answers initialize; exits at stdin EOF
//	ignore-sigterm    echo, ignoring SIGTERM/SIGINT and stdin EOF (only SIGKILL ends it)
//	spam-stderr       writes ZCB_ACPTEST_LINES (5000) "spam line <i>" and a Rust panic line to stderr, then echo
//	flood             a prompt sends ZCB_ACPTEST_FLOOD (3000) chunks "x" back to back
//	bigline           a prompt sends a 12 MiB chunk, then "😊 small"
//	bigresult         a prompt is answered by a response line over 12 MiB (raw JSON)
//	lost-session      the process's first prompt answers -32000 and forgets the session
//	busy              the process's first prompt answers -32002
//	perm              a prompt "tool:<name>" sends a pending tool_call and a permission request with
//	                  ZeroClaw's four options; "ask:<question>" sends a question (ask-user-1, choice-0/1,
//	                  reject); the reply is the chunk "😊 outcome=<optionId>" or "😊 outcome=cancelled"
//	perm-hold         perm, but the permission wait ignores session/cancel like ZeroClaw's approval gate
//	exit-1            writes "error: config file missing" to stderr and exits 1
//
// With ZCB_ACPTEST_STATE_DIR set, crash-after-init crashes only the first
// ZCB_ACPTEST_CRASHES runs and crash-mid-turn only the first
// ZCB_ACPTEST_CRASHES prompts (counted in files in that directory across
// restarts); later ones behave as echo.
//
// Raw-JSON modes (no SDK) script ZeroClaw's own dialects:
//
//	zeroclaw-v1   ZeroClaw 0.8.4: _meta.zeroclaw in initialize, concurrent prompts, chunks
//	              "😊 ec", "ho: ", <text> and result.content "😊 echo: <text>" (or "😊 from content"
//	              with ZCB_ACPTEST_CONTENT=override); a prompt containing "slow" ticks "tick " every
//	              50ms for up to 10 s; session/cancel emits the turn-cancelled marker and a
//	              cancelled result; session/stop and session/close; -32002 for a second
//	              concurrent prompt; a _zeroclaw/history_trimmed notification before every 3rd
//	              prompt; with ZCB_ACPTEST_REQUIRE_ALIAS=<a>, session/new without agentAlias <a>
//	              answers -32602.
//	legacy-l0     ZeroClaw 0.6.3: snake_case, session/event streaming, string prompts only
//	legacy-l1     ZeroClaw 0.6.5–0.7.3: camelCase, otherwise as L0
//	legacy-l2     ZeroClaw 0.7.4: session/update streaming, string or array prompts, stopReason
//
// Legacy modes are strictly sequential: nothing sent during a turn is read
// before it ends. Their reply is "😊 echo: <text>" in three chunks 20ms
// apart (ZCB_ACPTEST_DELAY, default 1s, for prompts containing "slow"); L0 and L1 print log lines on stdout
// between frames; a prompt containing "FAIL" answers -32603 and deletes the
// session.
package acptest

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// ModeEnv selects the fake agent's mode in the re-executed test binary.
const ModeEnv = "ZCB_ACPTEST_MODE"

// MaybeRunHelper runs the fake agent and exits when ModeEnv is set;
// otherwise it returns at once.
func MaybeRunHelper() {
	mode := os.Getenv(ModeEnv)
	if mode == "" {
		return
	}
	os.Exit(run(mode))
}

// Command returns how to start the current test binary as a fake agent in
// mode, with extraEnv ("K=V") added to its environment.
func Command(mode string, extraEnv ...string) (path string, args []string, env []string) {
	path, err := os.Executable()
	if err != nil {
		path = os.Args[0]
	}
	// A race-enabled binary sleeps a second at exit by default; children need not.
	return path, nil, append([]string{ModeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}, extraEnv...)
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
	case "zeroclaw-v1", "bigresult":
		return runZeroClaw(mode)
	case "legacy-l0", "legacy-l1", "legacy-l2":
		return runLegacy(mode)
	}
	return runSDK(mode)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

// bumpCounter increments the named counter file in ZCB_ACPTEST_STATE_DIR
// and reports whether its old value was below ZCB_ACPTEST_CRASHES (always
// true without a state dir).
func bumpCounter(name string) bool {
	dir := os.Getenv("ZCB_ACPTEST_STATE_DIR")
	if dir == "" {
		return true
	}
	p := dir + string(os.PathSeparator) + name
	b, _ := os.ReadFile(p)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	_ = os.WriteFile(p, []byte(strconv.Itoa(n+1)), 0o600)
	return n < envInt("ZCB_ACPTEST_CRASHES", 1<<30)
}

func echoReply(text string) string { return "😊 echo: " + text }

// thirds splits s into three nearly equal rune slices.
func thirds(s string) []string {
	r := []rune(s)
	return []string{string(r[:len(r)/3]), string(r[len(r)/3 : 2*len(r)/3]), string(r[2*len(r)/3:])}
}
