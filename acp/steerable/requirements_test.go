package steerable_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/sidecarwire/wiretest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerable"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerabletest"
)

// rawSidecar is the fake sidecar driven frame by frame, as the real one
// was by hand: what it answers to what.
type rawSidecar struct {
	*acptest.Child
	t  *testing.T
	id int
}

func startRaw(t *testing.T, mode string) *rawSidecar {
	t.Helper()
	path, args, env := steerabletest.Command(mode)
	return &rawSidecar{Child: acptest.StartChild(t, path, args, env, nil, true), t: t}
}

// next is the sidecar's next frame; a line that is not JSON is a frame
// {"noise": line}.
func (s *rawSidecar) next() map[string]any {
	s.t.Helper()
	l := s.Next(10 * time.Second)
	var f map[string]any
	if json.Unmarshal([]byte(l), &f) != nil {
		f = map[string]any{"noise": l}
	}
	return f
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
	s.Send(string(b))
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
	s.Send("{not json")
	if f := s.next(); f["id"] != nil || f["error"].(map[string]any)["code"] != -32700.0 || f["error"].(map[string]any)["kind"] != "parse" {
		t.Errorf("answer to an unreadable frame %v", f)
	}
	s.Send(`{"jsonrpc":"2.0","method":"agent.session.create","params":{}}`)
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
	if err := s.Wait(10 * time.Second); err != nil {
		t.Errorf("exit after shutdown: %v", err)
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
	var re *agentconn.RPCError
	if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(re.Message, "model is required") {
		t.Fatalf("turn without a model: %v", err)
	}
}
