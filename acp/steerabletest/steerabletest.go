// Package steerabletest is the fake steerable sidecar of the tests: the
// test binary re-executes itself as a sidecar speaking the steerable
// protocol (JSON-RPC 2.0, one JSON object per line on stdin/stdout, logs
// and the __SIDECAR_READY__ marker on stderr), with fault modes. It is
// written from the real sidecar's source (pathlyapp/steerable-framework
// v0.2.3, commit 192a937): it requires what that one requires and refuses
// what it refuses, with its codes, kinds and messages (the rules live in
// acp/internal/sidecarwire, which the demo agent follows too). Its TestMain
// calls MaybeRunHelper first, and Command returns how to start it in a
// mode. It imports nothing of this module but the demo agent (mode "demo"),
// the rules, the JSON-RPC connection and the re-exec plumbing in
// acp/internal.
//
// # Common behaviour ("sidecar")
//
// At start it writes `__SIDECAR_READY__:{…}` (its health snapshot) to
// stderr, then a lifecycle.ready notification to stdout. Requests (frames
// with an id member) are answered; notifications are ignored. Errors carry
// the sidecar's kind beside code and message; a null result is sent as no
// result member, as the sidecar's server does.
//
//   - system.ping: {status ok, version "0.1.0-test", protocolVersion
//     "0.1.0", uptimeMs, pid, pythonVersion, platform, loadedTools 0,
//     activeTraces 0}.
//   - agent.session.create: params must be an object (-32602 "params must
//     be an object") with a chatId (-32603 "'chatId'" without one) that is
//     a string, as sessionId, userId, currentStage and scenario must be when
//     given (-32603 "… validation error for AgentSession …"). Answers the
//     AgentSession: sessionId ("sess_<hex>" unless given), userId
//     ("local"), chatId, currentStage ("plan"), scenario ("agent-entry"),
//     isActive, createdAt, updatedAt; no id.
//   - agent.session.resume: sessionId required (-32602 "sessionId
//     required"); a session the process does not hold is -32004 "session
//     not found: <id>".
//   - agent.chat.stream: model required and provider one of the default
//     factory's (-32602 "failed to construct LLM provider: model is
//     required" / "… unknown provider: '<p>'"); messages, when given, a list
//     of objects with role system, user, assistant or tool (-32602); a
//     numeric temperature (-32603). It reads no sessionId. Answers
//     {"streamId"} (the caller's streamId if it gave one, else "str_<n>")
//     at once, then streams the reply to the last user message as
//     stream.chunk deltas ZCB_STEERTEST_DELAY (5ms) apart and a stream.done
//     {ok:true}; the reply is Echo(text) in three chunks, or for a text
//     containing "slow", "tick " every 20ms for up to 10 s.
//   - agent.chat.cancel: streamId required (-32602 "streamId required");
//     ends the stream at once with stream.done {ok:false, cancelled:true}
//     and answers null (an unknown stream too); it is reported on stderr as
//     "steertest: cancel <streamId>".
//   - system.shutdown: answers null, sends lifecycle.shutdown
//     {reason:"normal"} and exits 0, its streams ending unannounced;
//     system.shutdown_now likewise. At stdin EOF it sends
//     lifecycle.shutdown {reason:"eof"} and exits 0; SIGTERM makes it write
//     "steertest: SIGTERM <pid>" to stderr, send lifecycle.shutdown
//     {reason:"normal"} and exit 0. Unknown methods answer -32601 "unknown
//     method '<m>'".
//
// It does not reproduce v0.2.3's provider factory bug (it builds no
// provider at all: every chat fails with -32602 "failed to construct LLM
// provider: OpenAICompatProvider.__init__() missing 1 required positional
// argument: 'name'"); it answers as a sidecar whose factory works.
//
// Sessions are forgotten when the process exits, as the stock sidecar's
// in-memory storage forgets them, unless ZCB_STEERTEST_STATE_DIR is set:
// they are then kept in a file there, so a restarted sidecar resumes them
// (a sidecar given a database by its embedder).
//
// # Modes
//
//	sidecar           the common behaviour
//	quiet-ready       no stderr marker: lifecycle.ready only (--quiet-ready)
//	marker-only       the stderr marker only, no lifecycle.ready
//	never-ready       neither; reads stdin until EOF
//	slow-ready        sleeps ZCB_STEERTEST_DELAY (default 1s) before the common behaviour
//	hang              never answers requests of method ZCB_STEERTEST_HANG ("*", the default: any)
//	stall-stream      agent.chat.stream answers its stream id, then nothing; cancel is
//	                  answered but ignored
//	crash-mid-stream  sends one chunk of a stream, then exits 4 (with a state dir: only the
//	                  first ZCB_STEERTEST_CRASHES streams, counted across restarts)
//	flood             a stream sends ZCB_STEERTEST_FLOOD (5000) chunks of
//	                  ZCB_STEERTEST_FLOOD_BYTES (1) "x" back to back, then stream.done
//	error             agent.chat.stream (once its params pass) answers the error
//	                  ZCB_STEERTEST_CODE (-32021) with the kind the sidecar gives that code
//	                  (-32021 budget_exhausted, -32020 policy_denied, -32030 tool_failed,
//	                  -32011 internal …)
//	stream-error      a stream sends one chunk, then stream.error with kind
//	                  ZCB_STEERTEST_KIND (the exception's class; default ConnectError, an
//	                  unreachable model)
//	ignore-shutdown   system.shutdown is answered null, but nothing else happens, and
//	                  stdin EOF is ignored: only a signal ends it
//	ignore-sigterm    as ignore-shutdown, and ignores SIGTERM and SIGINT: only SIGKILL
//	                  ends it
//	unknown-streams   before each chunk, a stream.chunk and a stream.done for "s_ghost";
//	                  after each stream.done, one more chunk for the ended stream
//	early-chunk       a stream's first chunk is written before the agent.chat.stream answer
//	demo              the built-in demo agent's steerable mode (demoagent.ServeSteerable)
//
// With ZCB_STEERTEST_NOISE set, a log line that is not JSON is written to
// stdout before lifecycle.ready.
//
// With ZCB_STEERTEST_RECORD set to a file, every frame the sidecar reads is
// appended to it as one line; Requests reads them back.
package steerabletest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/reexec"
)

// ModeEnv selects the fake sidecar's mode in the re-executed test binary.
const ModeEnv = "ZCB_STEERTEST_MODE"

// MaybeRunHelper runs the fake sidecar and exits when ModeEnv is set;
// otherwise it returns at once.
func MaybeRunHelper() { reexec.MaybeRun(ModeEnv, run) }

// Command returns how to start the current test binary as a fake sidecar
// in mode: path is the test binary, args is empty (not nil, so acp's
// default arguments do not apply) and env holds ModeEnv=mode followed by
// extraEnv ("K=V"). Under the race detector env also sets GORACE's
// atexit_sleep_ms=0, so that exiting children need not sleep a second.
func Command(mode string, extraEnv ...string) (path string, args []string, env []string) {
	path, env = reexec.Command(ModeEnv, mode, extraEnv...)
	return path, []string{}, env
}

// Echo is the sidecar's reply to a user message.
func Echo(text string) string { return "😊 echo: " + text }

// Request is one frame the fake sidecar read.
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// Message is one of agent.chat.stream's messages.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatParams are agent.chat.stream's params.
type ChatParams struct {
	Provider    string    `json:"provider"`
	Model       string    `json:"model"`
	BaseURL     string    `json:"baseUrl"`
	APIKey      string    `json:"apiKey"`
	Temperature *float64  `json:"temperature"`
	Messages    []Message `json:"messages"`
}

// Chat decodes r's params as agent.chat.stream's.
func (r Request) Chat() ChatParams {
	var p ChatParams
	_ = json.Unmarshal(r.Params, &p)
	return p
}

// Fields decodes r's params as an object, nil when they are not one.
func (r Request) Fields() map[string]json.RawMessage {
	var p map[string]json.RawMessage
	_ = json.Unmarshal(r.Params, &p)
	return p
}

// Requests reads the frames recorded in path (ZCB_STEERTEST_RECORD), in
// the order the sidecars read them; methods, when given, keeps only those.
func Requests(path string, methods ...string) ([]Request, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Request
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		m, _, err := jsonrpc.Decode(line)
		if err != nil {
			return nil, fmt.Errorf("recorded frame %q: %w", line[:min(len(line), 120)], err)
		}
		if len(methods) == 0 || contains(methods, m.Method) {
			out = append(out, Request{ID: m.ID, Method: m.Method, Params: m.Params})
		}
	}
	return out, sc.Err()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
