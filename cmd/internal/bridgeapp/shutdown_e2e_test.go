package bridgeapp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/voice"
)

// Shutdown with voice turns in flight, on the real binary and the
// slow-chunks fake agent (this test binary as ZEROCLAW_BIN): turns that
// cannot finish within BRIDGE_SHUTDOWN_GRACE end with their error frame
// or fallback reply and a terminated body; turns that can, finish; new
// turns get 503 meanwhile; the process exits 0 with no agent left.

// sentTurn is a voice turn sent to the bridge, read on its own goroutine.
type sentTurn struct {
	session string
	stream  bool
	first   chan string     // a stream's first frame, once it arrived
	done    chan turnResult // once the body has been read to its end
}

type turnResult struct {
	status  int
	chunked bool
	body    string
	err     error // sending, or reading the body to its end
}

// sendTurn posts a turn and reads its answer in the background; every read
// is bounded by turnClient's timeout.
func sendTurn(p *bridgeProc, stream bool, session, content string) *sentTurn {
	st := &sentTurn{session: session, stream: stream, first: make(chan string, 1), done: make(chan turnResult, 1)}
	path := "/api/message"
	if stream {
		path = "/api/message/stream"
	}
	go func() {
		resp, err := turnClient.Post("http://"+p.addr+path, "application/json", strings.NewReader(turnBody(session, content)))
		if err != nil {
			st.done <- turnResult{err: err}
			return
		}
		defer resp.Body.Close()
		r := turnResult{status: resp.StatusCode, chunked: slices.Equal(resp.TransferEncoding, []string{"chunked"})}
		br := bufio.NewReader(resp.Body)
		var body strings.Builder
		if stream {
			for {
				line, err := br.ReadString('\n')
				body.WriteString(line)
				if err != nil || strings.TrimSpace(line) != "" { // heartbeats are blank lines
					st.first <- line
					break
				}
			}
		}
		rest, err := io.ReadAll(br)
		body.Write(rest)
		r.body, r.err = body.String(), err
		st.done <- r
	}()
	return st
}

// awaitFirst waits (≤ 30 s) for a stream's first frame: its turn is then
// mid-reply.
func (st *sentTurn) awaitFirst(t *testing.T) {
	t.Helper()
	select {
	case line := <-st.first:
		if !strings.Contains(line, `"type":"chunk"`) {
			t.Fatalf("stream %s: first frame %q, want a chunk", st.session, line)
		}
	case r := <-st.done:
		t.Fatalf("stream %s ended before its first frame: %d %q %v", st.session, r.status, r.body, r.err)
	case <-time.After(30 * time.Second):
		t.Fatalf("stream %s: no frame within 30 s", st.session)
	}
}

// result waits (≤ 30 s) for the turn's whole answer.
func (st *sentTurn) result(t *testing.T) turnResult {
	t.Helper()
	select {
	case r := <-st.done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("turn %s: no complete answer within 30 s", st.session)
		return turnResult{}
	}
}

// streamFrames checks a stream's answer: 200, chunked, read to its end
// without error (a terminated chunked body), every line a JSON object,
// exactly one terminal frame and it is last. It returns the frames.
func streamFrames(t *testing.T, st *sentTurn, r turnResult) []map[string]any {
	t.Helper()
	if r.err != nil {
		t.Errorf("stream %s: body not read to its end: %v (a cut chunked body); it ended %q", st.session, r.err, tail(r.body))
	}
	if r.status != http.StatusOK || !r.chunked {
		t.Errorf("stream %s: status %d, chunked %v", st.session, r.status, r.chunked)
	}
	var frames []map[string]any
	terminal := 0
	for _, line := range strings.Split(r.body, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Errorf("stream %s: line %q is not a JSON object", st.session, line)
			continue
		}
		if f["type"] == "final" || f["type"] == "error" {
			terminal++
		}
		frames = append(frames, f)
	}
	if len(frames) == 0 || terminal != 1 || (frames[len(frames)-1]["type"] != "final" && frames[len(frames)-1]["type"] != "error") {
		t.Errorf("stream %s: want exactly one terminal frame, last; %d frames, %d terminal, ending %q", st.session, len(frames), terminal, tail(r.body))
		return nil
	}
	return frames
}

// bufferedReply checks a buffered turn's answer: 200, read to its end, a
// JSON object. It returns the object (nil, the failure said, else).
func bufferedReply(t *testing.T, st *sentTurn, r turnResult) map[string]any {
	t.Helper()
	var out map[string]any
	if r.err != nil || r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &out) != nil {
		t.Errorf("buffered %s: %d %q %v, want 200 with a JSON reply", st.session, r.status, tail(r.body), r.err)
		return nil
	}
	return out
}

// tail is the end of a long body, for a failure message.
func tail(s string) string {
	if len(s) > 200 {
		return "…" + s[len(s)-200:]
	}
	return s
}

// awaitExit waits (≤ d) for the bridge to exit after a signal and returns
// Wait's error and how long the exit took from sent.
func (p *bridgeProc) awaitExit(sent time.Time, d time.Duration) (time.Duration, error) {
	p.t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err
		return time.Since(sent), err
	case <-time.After(d):
		p.t.Fatalf("bridge did not exit within %s of the signal", d)
		return 0, nil
	}
}

// agentPID reads the agent child's pid from /health once it is ready.
func agentPID(p *bridgeProc) int {
	p.t.Helper()
	_, h := p.health("the agent ready", func(h map[string]any) bool {
		pid, _ := agentOf(h)["pid"].(float64)
		return agentOf(h)["state"] == "ready" && pid > 0
	})
	return int(agentOf(h)["pid"].(float64))
}

var cancelLine = regexp.MustCompile(`acptest: session/cancel (\S+)`)

// TestSIGTERMEndsTurnsLeftWithTheirFailureReply: 20 streams and 2
// buffered turns of a slow agent (a million chunks 50 ms apart), all
// mid-reply, then SIGTERM with BRIDGE_SHUTDOWN_GRACE=1. When the grace is
// over every stream ends with the offline error frame after its chunks in
// a terminated chunked body, the buffered turns answer the offline
// fallback, the agent is told session/cancel for each turn, every turn is
// logged with the error kind "shutdown", and the bridge exits 0 leaving no
// agent behind.
func TestSIGTERMEndsTurnsLeftWithTheirFailureReply(t *testing.T) {
	const streams, buffered, grace = 20, 2, time.Second
	bin, _, env := acptest.Command("slow-chunks", "ZCB_ACPTEST_CHUNKS=1000000", "ZCB_ACPTEST_DELAY=50ms")
	p := startBridge(t, append([]string{"ZEROCLAW_BIN=" + bin, "BRIDGE_SHUTDOWN_GRACE=1", "ZEROCLAW_MAX_SESSIONS=32"}, env...)...)
	pid := agentPID(p)

	var turns []*sentTurn
	for i := range streams {
		turns = append(turns, sendTurn(p, true, fmt.Sprintf("stream-%02d", i), "tell me a very long story"))
	}
	for i := range buffered {
		turns = append(turns, sendTurn(p, false, fmt.Sprintf("buffered-%d", i), "and a long answer"))
	}
	for _, st := range turns[:streams] {
		st.awaitFirst(t)
	}
	// Every turn holds an agent session: the buffered ones are in flight too.
	p.health("every turn in flight", func(h map[string]any) bool { return h["sessions"] == float64(streams+buffered) })

	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, st := range turns {
		r := st.result(t)
		if !st.stream {
			if out := bufferedReply(t, st, r); out != nil && (out["response"] != voice.FallbackOffline || out["session_id"] != st.session) {
				t.Errorf("buffered %s: %v, want the offline fallback", st.session, out)
			}
			continue
		}
		frames := streamFrames(t, st, r)
		if frames == nil {
			continue
		}
		last := frames[len(frames)-1]
		if len(frames) < 2 || last["type"] != "error" || last["message"] != voice.FallbackOffline || last["session_id"] != st.session {
			t.Errorf("stream %s: %d frames ending %v, want chunks then the offline error frame", st.session, len(frames), last)
		}
	}
	took, err := p.awaitExit(sent, grace+30*time.Second)
	if err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", err)
	}
	t.Logf("SIGTERM to exit with %d turns cut at the %s grace: %s", streams+buffered, grace, took.Round(time.Millisecond))
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("agent pid %d to be gone", pid), func() bool { return testkit.ProcessGone(pid) })

	log := p.log()
	for _, want := range []string{"shutdown grace over", "http server stopped", "stopped: shutdown="} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	// The agent was told: one agent session per turn, each cancelled.
	cancelled := map[string]bool{}
	for _, m := range cancelLine.FindAllStringSubmatch(log, -1) {
		cancelled[m[1]] = true
	}
	if len(cancelled) != streams+buffered {
		t.Errorf("the agent saw session/cancel for %d sessions, want %d", len(cancelled), streams+buffered)
	}
	// Each turn is in the conversation log as a failed one.
	files, _ := filepath.Glob(filepath.Join(p.stateDir, "logs", "convo-*.ndjson"))
	var recs int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs += strings.Count(string(b), `"error":"shutdown"`)
	}
	if recs != streams+buffered {
		t.Errorf("%d conversation records with error shutdown, want %d", recs, streams+buffered)
	}
}

// TestSIGTERMLetsTurnsFinishWithinTheGrace: 3 streams and 1 buffered turn
// held by the agent mid-reply (until a gate file exists), then SIGTERM (or
// SIGINT) with a grace far longer than the test. While they run /health
// says "stopping" and new turns on both routes get 503 in the documented
// error shape; opened, the turns finish normally, and the bridge exits 0 as
// soon as they have, without waiting out the grace.
func TestSIGTERMLetsTurnsFinishWithinTheGrace(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) { turnsFinishWithinTheGrace(t, sig) })
	}
}

func turnsFinishWithinTheGrace(t *testing.T, sig syscall.Signal) {
	gate := filepath.Join(t.TempDir(), "gate")
	bin, _, env := acptest.Command("slow-chunks", "ZCB_ACPTEST_CHUNKS=3", "ZCB_ACPTEST_DELAY=1ms", "ZCB_ACPTEST_GATE="+gate)
	p := startBridge(t, append([]string{"ZEROCLAW_BIN=" + bin, "BRIDGE_SHUTDOWN_GRACE=600"}, env...)...)
	pid := agentPID(p)

	turns := []*sentTurn{sendTurn(p, true, "s0", "hello"), sendTurn(p, true, "s1", "hello"), sendTurn(p, true, "s2", "hello"),
		sendTurn(p, false, "b0", "hello")}
	for _, st := range turns[:3] {
		st.awaitFirst(t)
	}
	p.health("every turn in flight", func(h map[string]any) bool { return h["sessions"] == float64(len(turns)) })

	sent := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	p.health("stopping", func(h map[string]any) bool { return h["status"] == bridge.StatusStopping })
	for _, path := range []string{"/api/message/stream", "/api/message"} {
		code, body := p.post(path, turnBody("new", "a new turn"))
		if want := `{"detail":"` + httpapi.ShuttingDownDetail + `"}`; code != http.StatusServiceUnavailable || body != want {
			t.Errorf("new turn on %s while stopping: %d %s, want 503 %s", path, code, body, want)
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, st := range turns {
		r := st.result(t)
		if !st.stream {
			if out := bufferedReply(t, st, r); out != nil && !strings.Contains(fmt.Sprint(out["response"]), "c0 c1 c2") {
				t.Errorf("buffered %s: %v, want the whole reply", st.session, out)
			}
			continue
		}
		if frames := streamFrames(t, st, r); frames != nil {
			last := frames[len(frames)-1]
			if last["type"] != "final" || !strings.Contains(fmt.Sprint(last["content"]), "c0 c1 c2") || last["session_id"] != st.session {
				t.Errorf("stream %s ended with %v, want its final frame", st.session, last)
			}
		}
	}
	took, err := p.awaitExit(sent, 60*time.Second)
	if err != nil {
		t.Errorf("exit after %s: %v, want status 0", sig, err)
	}
	t.Logf("%s to exit with %d turns finishing in the grace: %s", sig, len(turns), took.Round(time.Millisecond))
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("agent pid %d to be gone", pid), func() bool { return testkit.ProcessGone(pid) })
	log := p.log()
	if !strings.Contains(log, "the requests in flight finished within the shutdown grace") {
		t.Error("stderr does not say the turns finished within the grace")
	}
	if strings.Contains(log, "shutdown grace over") || strings.Contains(log, "kind=shutdown") {
		t.Error("a turn was cut although the grace had not run out")
	}
}
