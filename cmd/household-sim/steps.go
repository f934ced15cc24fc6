package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/vision"
)

// causedWindow is how long after an agent kill or a model change a turn
// may fail because of it: the restart's backoff, init and grace.
const causedWindow = 2 * time.Minute

// run starts s on its own goroutine, counted as busy until it ends.
func (w *world) run(s Step) {
	w.busy.Add(1)
	go func() {
		defer w.busy.Add(-1)
		w.do(s)
	}()
}

// do performs one step through the bridge's routes.
func (w *world) do(s Step) {
	at := w.clock.Now()
	what := string(s.Kind)
	switch s.Kind {
	case KindFace:
		w.expect(what, http.StatusNoContent, http.MethodPost, "/api/perception/event",
			map[string]any{"device_id": s.Device, "name": "face_recognized", "data": map[string]any{"identity": s.Person}})
	case KindFaceSeen:
		w.expect(what, http.StatusNoContent, http.MethodPost, "/api/perception/event",
			map[string]any{"device_id": s.Device, "name": "face_detected", "data": map[string]any{}})
	case KindFaceLost:
		w.expect(what, http.StatusNoContent, http.MethodPost, "/api/perception/event",
			map[string]any{"device_id": s.Device, "name": "face_lost", "data": map[string]any{}})
	case KindRoomView:
		w.roomView(s)
	case KindRoster:
		w.editRoster(s.Text == "appearances")
	case KindLANEvent:
		w.expect(what, http.StatusNoContent, http.MethodPost, "/api/perception/event",
			map[string]any{"device_id": s.Device, "name": "audio_captioned", "data": map[string]any{"caption": s.Text}})
	case KindState:
		w.expect(what, http.StatusOK, http.MethodPost, "/admin/state", map[string]any{"state": s.Text, "device_id": s.Device})
	case KindKidMode:
		w.expect(what, http.StatusOK, http.MethodPost, "/admin/kid-mode", map[string]any{"enabled": s.Text == "on", "device_id": s.Device})
	case KindTurn:
		b, ok := w.expect(what, http.StatusOK, http.MethodPost, "/api/message", turnBody(s))
		var r struct {
			Response string `json:"response"`
		}
		if ok && (json.Unmarshal(b, &r) != nil || slices.Contains(fallbacks, r.Response)) {
			w.fail(at, s.Device)
		}
	case KindStream:
		b, ok := w.expect(what, http.StatusOK, http.MethodPost, "/api/message/stream", turnBody(s))
		if ok && !streamedFinal(b) {
			w.fail(at, s.Device)
		}
	case KindStory:
		w.expect(what, http.StatusOK, http.MethodPost, "/ui/api/story", map[string]any{"text": s.Text})
	case KindDance:
		if _, ok := w.expect(what, http.StatusOK, http.MethodPost, "/ui/api/dance", map[string]any{}); ok {
			for _, name := range []string{"dance_started", "dance_ended"} {
				w.expect(what, http.StatusNoContent, http.MethodPost, "/api/perception/event",
					map[string]any{"device_id": s.Device, "name": name, "data": map[string]any{"dance": s.Text}})
			}
		}
	case KindDanceStart, KindDanceEnd:
		name := map[Kind]string{KindDanceStart: "dance_started", KindDanceEnd: "dance_ended"}[s.Kind]
		w.expect(what, http.StatusNoContent, http.MethodPost, "/api/perception/event",
			map[string]any{"device_id": s.Device, "name": name, "data": map[string]any{"dance": s.Text}})
	case KindRemember:
		if _, ok := w.expect(what, http.StatusNoContent, http.MethodPost, "/api/voice/remember", map[string]any{"fact": s.Text}); ok {
			w.ack(Write{Content: s.Text})
		}
	case KindRememberPerson:
		b, ok := w.expect(what, http.StatusOK, http.MethodPost, "/api/voice/remember_person", map[string]any{"person_id": s.Person, "fact": s.Text})
		var r struct {
			OK      bool `json:"ok"`
			Pending bool `json:"pending_review"`
		}
		switch {
		case !ok:
		case json.Unmarshal(b, &r) != nil || !r.OK || !r.Pending:
			w.problem("remember_person for %s answered %s, want the fact held for review", s.Person, b)
		default:
			w.ack(Write{Key: "person:" + s.Person, Content: s.Text})
		}
	case KindApprove:
		b, ok := w.expect(what, http.StatusOK, http.MethodGet, "/ui/api/memory", nil)
		var list struct {
			Records []struct {
				ID       string `json:"id"`
				PersonID string `json:"person_id"`
				Pending  bool   `json:"pending"`
			} `json:"records"`
		}
		if ok && json.Unmarshal(b, &list) != nil {
			w.problem("the memory review card is not JSON: %s", b)
		}
		for _, r := range list.Records {
			if r.Pending && r.PersonID == s.Person {
				w.expect(what, http.StatusOK, http.MethodPost, "/ui/api/memory/approve", map[string]any{"id": r.ID})
			}
		}
	case KindKillAgent:
		w.cause(at)
		pid := w.app.Load().AgentPID()
		if pid <= 0 {
			w.problem("no agent to kill at %s", stamp(at.In(w.loc)))
			return
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			w.problem("kill the agent %d: %v", pid, err)
			return
		}
		w.awaitAgent(pid)
	case KindModel:
		w.cause(at)
		pid := w.app.Load().AgentPID()
		if _, ok := w.expect(what, http.StatusOK, http.MethodPost, "/admin/model", map[string]any{"daemon": "voice", "model": s.Text}); ok {
			w.awaitAgent(pid)
		}
	}
}

// agentWait bounds, in real time, the wait for a restarted agent.
const agentWait = 30 * time.Second

// awaitAgent waits until an agent other than old is ready, so the clock
// creeps (the step is busy) rather than jumps while it restarts: its
// spawn and handshake are real work the clock cannot see.
func (w *world) awaitAgent(old int) {
	deadline := time.Now().Add(agentWait)
	for time.Now().Before(deadline) {
		if pid := w.app.Load().AgentPID(); pid > 0 && pid != old && w.agentReady() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.problem("the agent was not back within %v real time after pid %d at %s", agentWait, old, stamp(w.clock.Now().In(w.loc)))
}

// agentReady reports whether /health says the agent is ready.
func (w *world) agentReady() bool {
	code, b, err := w.call(http.MethodGet, "/health", nil)
	var h struct {
		Agent struct {
			State string `json:"state"`
		} `json:"agent"`
	}
	return err == nil && code == http.StatusOK && json.Unmarshal(b, &h) == nil && h.Agent.State == "ready"
}

// rosterReread is longer than the bridge's real-time throttle on
// re-reading household.yaml (one second).
const rosterReread = 1100 * time.Millisecond

// editRoster rewrites household.yaml, with or without appearances, as a
// parent would, and waits (busy: the clock creeps) until the bridge will
// read it again.
func (w *world) editRoster(looks bool) {
	b := householdYAML
	if looks {
		var err error
		if b, err = withAppearances(b); err != nil {
			w.problem("roster: %v", err)
			return
		}
	}
	path := filepath.Join(w.dir, "household.yaml")
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		w.problem("roster: %v", err)
		return
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		w.problem("roster: %v", err)
		return
	}
	time.Sleep(rosterReread)
}

// roomView uploads a room view photo as the robot does on its own and
// checks the gates: a view within the cooldown of the last is "no one in
// view" without asking the model (Text "gated"); another is the model's.
func (w *world) roomView(s Step) {
	before := w.roomAsked.Load()
	url := "http://" + w.app.Load().Addr() + "/api/vision/explain"
	req, err := xiaozhitest.UploadRequest(url, s.Device, "photo.jpg", "image/jpeg", photo(), vision.RoomViewSentinel)
	if err != nil {
		w.problem("room view: %v", err)
		return
	}
	code, b, err := w.send(req)
	var r struct {
		Description string `json:"description"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(b, &r) != nil {
		w.problem("room view on %s at %s: %d %s (%v)", s.Device, stamp(w.clock.Now().In(w.loc)), code, b, err)
		return
	}
	asked := w.roomAsked.Load() > before
	gated := r.Description == vision.NoOneInView && !asked
	if asked {
		w.mu.Lock()
		w.roomViews[w.clock.Now().In(w.loc).Format(time.DateOnly)]++
		w.mu.Unlock()
	}
	if want := s.Text == "gated"; gated != want {
		w.problem("room view on %s at %s answered %q (model asked: %v), want it gated: %v", s.Device, stamp(w.clock.Now().In(w.loc)), r.Description, asked, want)
	}
}

// turnBody is a turn as xiaozhi's provider sends it for a robot.
func turnBody(s Step) map[string]any {
	return map[string]any{"content": s.Text, "channel": "dotty", "session_id": "sim-" + s.Device,
		"metadata": map[string]any{"provider": "zeroclaw", "device_id": s.Device}}
}

// streamedFinal reports whether a stream ended with its final line.
func streamedFinal(b []byte) bool {
	var last struct {
		Type string `json:"type"`
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			last.Type = ""
			_ = json.Unmarshal(line, &last)
		}
	}
	return last.Type == "final"
}

func (w *world) fail(at time.Time, device string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failed = append(w.failed, Event{At: at, Device: device})
}

func (w *world) cause(at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.caused = append(w.caused, Span{From: at, To: at.Add(causedWindow)})
}

func (w *world) ack(wr Write) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acked = append(w.acked, wr)
	w.ackDays[w.clock.Now().In(w.loc).Format(time.DateOnly)]++
}
