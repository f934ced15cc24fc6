package steerable_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/sidecarwire/wiretest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerable"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerabletest"
)

// rawSidecar is the fake sidecar driven frame by frame, as the real one
// was by hand: what it answers to what.
type rawSidecar struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	frames chan map[string]any
	exited chan error
	id     int
}

func startRaw(t *testing.T, mode string) *rawSidecar {
	t.Helper()
	path, args, env := steerabletest.Command(mode)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawSidecar{t: t, cmd: cmd, in: in, frames: make(chan map[string]any, 1000), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var f map[string]any
			if json.Unmarshal(sc.Bytes(), &f) != nil {
				f = map[string]any{"noise": sc.Text()}
			}
			s.frames <- f
		}
		close(s.frames)
		s.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = in.Close()
		select {
		case err := <-s.exited:
			s.exited <- err
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("the fake sidecar did not exit at stdin EOF")
			<-s.exited
		}
	})
	return s
}

func (s *rawSidecar) next() map[string]any {
	s.t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			s.t.Fatal("the sidecar's stdout ended")
		}
		return f
	case <-time.After(10 * time.Second):
		s.t.Fatal("no frame from the sidecar")
		return nil
	}
}

func (s *rawSidecar) write(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// call sends a request (params left out when nil) and returns its answer,
// and the notifications read before it.
func (s *rawSidecar) call(method string, params any) (map[string]any, []map[string]any) {
	s.t.Helper()
	s.id++
	req := map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, _ := json.Marshal(req)
	s.write(string(b))
	var notes []map[string]any
	for {
		f := s.next()
		if id, ok := f["id"].(float64); ok && int(id) == s.id {
			return f, notes
		}
		notes = append(notes, f)
	}
}

// until reads frames until the stream's stream.done.
func (s *rawSidecar) until(stream string) map[string]any {
	s.t.Helper()
	for {
		f := s.next()
		if p, _ := f["params"].(map[string]any); f["method"] == "stream.done" && p["streamId"] == stream {
			return p
		}
	}
}

// The fake sidecar requires what the real one (steerable-framework
// v0.2.3) requires and refuses what it refuses, with its codes, kinds and
// messages, as the real one answered them by hand: above all, a session
// needs a chatId.
func TestFakeRefusesWhatTheSidecarRefuses(t *testing.T) {
	s := startRaw(t, "sidecar")
	if f := s.next(); f["method"] != "lifecycle.ready" {
		t.Fatalf("first frame %v", f)
	}
	chat := wiretest.Chat
	wiretest.Check(t, slices.Concat(wiretest.Refusals, wiretest.ProviderRefusals), func(method string, params any) map[string]any {
		r, _ := s.call(method, params)
		return r
	})

	// What it accepts, and how it answers: the AgentSession carries
	// sessionId and no id.
	r, _ := s.call("agent.session.create", map[string]any{"chatId": steerable.ChatID("k")})
	sess, _ := r["result"].(map[string]any)
	if sid, _ := sess["sessionId"].(string); !strings.HasPrefix(sid, "sess_") || sess["chatId"] != steerable.ChatID("k") ||
		sess["userId"] != "local" || sess["currentStage"] != "plan" || sess["scenario"] != "agent-entry" || sess["isActive"] != true ||
		sess["createdAt"] == nil || sess["id"] != nil {
		t.Errorf("create answered %v", r)
	}
	if r, _ := s.call("agent.session.create", map[string]any{"chatId": "", "sessionId": "mine"}); r["result"].(map[string]any)["sessionId"] != "mine" {
		t.Errorf("create with a session id answered %v", r)
	}
	if r, _ := s.call("agent.session.resume", map[string]any{"sessionId": "mine"}); r["result"].(map[string]any)["sessionId"] != "mine" {
		t.Errorf("resume answered %v", r)
	}
	// Fields it does not read are ignored; no messages is no error.
	for _, extra := range []map[string]any{{"sessionId": "mine", "chatId": "c"}, {"messages": []any{}}, {"streamId": "mine-1"}} {
		r, _ := s.call("agent.chat.stream", chat(extra))
		stream, _ := r["result"].(map[string]any)["streamId"].(string)
		if stream == "" {
			t.Fatalf("chat %v answered %v", extra, r)
		}
		if extra["streamId"] != nil && stream != extra["streamId"] {
			t.Errorf("chat with streamId %v answered stream %s", extra["streamId"], stream)
		}
		if done := s.until(stream); done["ok"] != true {
			t.Errorf("stream.done %v", done)
		}
	}
	// A null result is no result member.
	if r, _ := s.call("agent.chat.cancel", map[string]any{"streamId": "gone"}); r["error"] != nil || r["result"] != nil || len(r) != 2 {
		t.Errorf("cancel of an unknown stream answered %v", r)
	}
	// An unreadable frame is answered without an id; a notification is
	// not answered at all.
	s.write("{not json")
	if f := s.next(); f["id"] != nil || f["error"].(map[string]any)["code"] != -32700.0 || f["error"].(map[string]any)["kind"] != "parse" {
		t.Errorf("answer to an unreadable frame %v", f)
	}
	s.write(`{"jsonrpc":"2.0","method":"agent.session.create","params":{}}`)
	if r, notes := s.call("system.ping", nil); len(notes) != 0 || r["result"].(map[string]any)["status"] != "ok" {
		t.Errorf("after a notification: %v, then %v", notes, r)
	}
	bye, _ := s.call("system.shutdown", nil)
	if _, ok := bye["result"]; ok || bye["error"] != nil {
		t.Errorf("shutdown answered %v", bye)
	}
	if f := s.next(); f["method"] != "lifecycle.shutdown" || f["params"].(map[string]any)["reason"] != "normal" {
		t.Errorf("after shutdown %v", f)
	}
	select {
	case err := <-s.exited:
		s.exited <- err
		if err != nil {
			t.Errorf("exit after shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("no exit after system.shutdown")
	}
}

// The bridge sends what the sidecar requires: a session is created for
// its key's chat, and a barge-in's cancel names the stream.
func TestBridgeSendsWhatTheSidecarRequires(t *testing.T) {
	h := start(t, setup{mode: "sidecar"})
	h.MustTurn("robot-1", "hi")
	if _, err := h.BargeIn("robot-1", "tell me a slow story"); !errors.Is(err, context.Canceled) {
		t.Fatalf("barge-in: %v", err)
	}
	creates := h.requests("agent.session.create")
	if len(creates) != 1 || string(creates[0].Params) != `{"chatId":"`+steerable.ChatID("robot-1")+`"}` {
		t.Errorf("agent.session.create sent %+v", creates)
	}
	h.waitCancel()
	var stream string
	if err := json.Unmarshal(h.requests("agent.chat.cancel")[0].Fields()["streamId"], &stream); err != nil || !strings.HasPrefix(stream, "str_") {
		t.Errorf("agent.chat.cancel sent %+v", h.requests("agent.chat.cancel"))
	}
}

// Without a model the sidecar refuses every chat, as the real one does:
// the turn fails with its answer.
func TestChatWithoutModelRefused(t *testing.T) {
	h := start(t, setup{mode: "sidecar", noModel: true})
	_, _, err := h.Turn("k", "hi")
	var re *acp.RPCError
	if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(re.Message, "model is required") {
		t.Fatalf("turn without a model: %v", err)
	}
}
