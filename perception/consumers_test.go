package perception

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestPurrPlayer(t *testing.T) {
	e := newEnv(t, nil)
	e.fire(PurrPlayer, ev("d1", "head_pet_started", at(0), nil))
	e.fire(PurrPlayer, ev("d1", "head_pet_started", at(3), nil)) // within 5 s
	e.fire(PurrPlayer, ev("d1", "head_pet_started", at(6), nil))
	e.fire(PurrPlayer, ev("d2", "head_pet_started", at(3), nil)) // own cooldown
	e.fire(PurrPlayer, ev("", "head_pet_started", at(20), nil))
	e.fire(PurrPlayer, ev("unknown", "head_pet_started", at(20), nil))
	e.fire(PurrPlayer, ev("d1", "face_detected", at(30), nil)) // not its trigger
	wantCalls(t, e,
		`play-asset {"asset":"bridge/assets/purr.opus","device_id":"d1"}`,
		`play-asset {"asset":"bridge/assets/purr.opus","device_id":"d1"}`,
		`play-asset {"asset":"bridge/assets/purr.opus","device_id":"d2"}`)
	st, _ := e.s.states.Get("d1")
	if *st.LastPurrT != at(6) || *st.LastChatT != at(8) {
		t.Errorf("last_purr_t %v last_chat_t %v", *st.LastPurrT, *st.LastChatT)
	}

	z := newEnv(t, func(c *Config) { c.Consumers.PurrCooldown = 0 })
	z.fire(PurrPlayer, ev("d", "head_pet_started", at(0), nil))
	z.fire(PurrPlayer, ev("d", "head_pet_started", at(0.1), nil))
	if n := len(z.xz.CallsTo("/xiaozhi/admin/play-asset")); n != 2 {
		t.Errorf("zero cooldown: %d purrs, want 2", n)
	}

	// A failing xiaozhi costs nothing but a log line; state stays written.
	f := newEnv(t, nil)
	f.xz.Set("/xiaozhi/admin/play-asset", xiaozhitest.Reply{Status: 404, Body: "asset not found: bridge/assets/purr.opus"})
	f.fire(PurrPlayer, ev("d", "head_pet_started", at(0), nil))
	f.fire(PurrPlayer, ev("d", "head_pet_started", at(10), nil))
	if st, _ := f.s.states.Get("d"); len(f.xz.Calls()) != 2 || *st.LastPurrT != at(10) {
		t.Errorf("after 404s: %d calls, last_purr_t %v", len(f.xz.Calls()), *st.LastPurrT)
	}
}

func TestFaceGreeter(t *testing.T) {
	e := newEnv(t, nil)
	e.fire(FaceGreeter, ev("d", "face_detected", at(0), nil))
	e.fire(FaceGreeter, ev("d", "face_detected", at(29), nil)) // cooldown 30
	e.fire(FaceGreeter, ev("d", "face_detected", at(30), nil))
	e.fire(FaceGreeter, ev("unknown", "face_detected", at(100), nil))
	wantCalls(t, e, `inject-text {"device_id":"d","text":"Hi!"}`, `inject-text {"device_id":"d","text":"Hi!"}`)
	if st, _ := e.s.states.Get("d"); *st.LastFaceGreetT != at(30) {
		t.Errorf("last_face_greet_t %v", *st.LastFaceGreetT)
	}

	// Outside the hours (wall clock, not the event's ts): nothing, not even the timestamp.
	night := newEnv(t, func(c *Config) { c.Clock = clockwork.NewFakeClockAt(time.Date(2026, 11, 22, 21, 0, 0, 0, brisbane)) })
	night.fire(FaceGreeter, ev("d", "face_detected", at(0), nil))
	if st, _ := night.s.states.Get("d"); len(night.xz.Calls()) != 0 || st.LastFaceGreetT != nil {
		t.Errorf("greeted at 21:00: %v", night.calls())
	}
	always := newEnv(t, func(c *Config) {
		c.Clock = clockwork.NewFakeClockAt(time.Date(2026, 11, 22, 3, 0, 0, 0, brisbane))
		c.Consumers.GreetHourStart, c.Consumers.GreetHourEnd = 0, 24
	})
	always.fire(FaceGreeter, ev("d", "face_detected", at(0), nil))
	if len(always.xz.Calls()) != 1 {
		t.Error("0–24 should greet at 03:00")
	}

	// Mic-only greeting: the timestamp moves, no request.
	mic := newEnv(t, func(c *Config) { c.Consumers.GreetText = "" })
	mic.fire(FaceGreeter, ev("d", "face_detected", at(0), nil))
	if st, _ := mic.s.states.Get("d"); len(mic.xz.Calls()) != 0 || st.LastFaceGreetT == nil {
		t.Error("mic-only greeting sent a request or kept no timestamp")
	}

	// Dancing suppresses the greeting but still counts it.
	dance := newEnv(t, nil)
	dance.s.Ingest(ev("d", "dance_started", at(-1), nil))
	dance.fire(FaceGreeter, ev("d", "face_detected", at(0), nil))
	if st, _ := dance.s.states.Get("d"); len(dance.xz.Calls()) != 0 || st.LastFaceGreetT == nil {
		t.Error("greeted while dancing")
	}

	// A roster with an appearance owns greetings.
	roster := newEnv(t, nil)
	writeFile(t, roster.c.cfg.HouseholdPath, "people:\n  alex:\n    display_name: Alex\n    appearance: curly red hair\n")
	roster.fire(FaceGreeter, ev("d", "face_detected", at(0), nil))
	if len(roster.xz.Calls()) != 0 {
		t.Error("bare greeting despite a roster with appearances")
	}

	// No host: no request, no crash (A4).
	off := newEnv(t, func(c *Config) { c.Robot = xiaozhi.New(xiaozhi.Config{}) })
	off.fire(FaceGreeter, ev("d", "face_detected", at(0), nil))
	if len(off.xz.Calls()) != 0 {
		t.Error("request without a host")
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNamedAcknowledger(t *testing.T) {
	e := newEnv(t, nil)
	e.c.house.recheck = 0
	rec := func(ts float64, id string) {
		e.fire(FaceGreeter, ev("d", "face_recognized", at(ts), map[string]any{"identity": id}))
	}
	rec(0, "Alex") // no roster yet
	writeFile(t, e.c.cfg.HouseholdPath, "people:\n  Alex:\n    display_name: Alex the Great\n  _household:\n    display_name: everyone\n  sam: {}\n")
	rec(1, "alex")
	rec(10, " ALEX ") // same person however spelled, within 30 s
	rec(11, "sam")
	rec(12, "nobody")
	rec(13, "")
	rec(31, "alex")
	wantCalls(t, e,
		`say {"device_id":"d","text":"Oh, it's Alex the Great!"}`, `set-face-identified {"device_id":"d"}`,
		`say {"device_id":"d","text":"Oh, it's sam!"}`, `set-face-identified {"device_id":"d"}`,
		`say {"device_id":"d","text":"Oh, it's Alex the Great!"}`, `set-face-identified {"device_id":"d"}`)

	// Quiet after a chat (a purr counts as chat), and dancing keeps the pip only.
	q := newEnv(t, nil)
	writeFile(t, q.c.cfg.HouseholdPath, "people:\n  alex:\n    display_name: Alex\n")
	q.fire(PurrPlayer, ev("d", "head_pet_started", at(0), nil)) // last_chat_t = 2
	q.fire(FaceGreeter, ev("d", "face_recognized", at(11), map[string]any{"identity": "alex"}))
	q.s.Ingest(ev("d", "state_changed", at(12), map[string]any{"state": "dance"}))
	q.fire(FaceGreeter, ev("d", "face_recognized", at(12.5), map[string]any{"identity": "alex"}))
	wantCalls(t, q, `play-asset {"asset":"bridge/assets/purr.opus","device_id":"d"}`, `set-face-identified {"device_id":"d"}`)

	// The roster is re-read when the file changes.
	writeFile(t, q.c.cfg.HouseholdPath, "people:\n  alex:\n    display_name: Alexandra\n    notes: changed size\n")
	q.c.house.recheck = 0
	if p, ok := q.c.house.Lookup("ALEX"); !ok || p.DisplayName != "Alexandra" {
		t.Errorf("re-read roster: %+v %v", p, ok)
	}
	writeFile(t, q.c.cfg.HouseholdPath, "people: [not, a, map")
	if q.c.house.Exists() {
		t.Error("malformed roster counted as a roster")
	}
}

func TestWakeWordTurner(t *testing.T) {
	e := newEnv(t, nil)
	feed := e.s.bus.Watch(16)
	defer feed.Close()
	wake := func(ts float64, data map[string]any) {
		e.fire(WakeWordTurner, ev("d", "wake_word_detected", at(ts), data))
	}
	wake(0, map[string]any{"direction": "left", "phrase": "hey dotty"})
	wake(0.5, map[string]any{"direction": "right"}) // no cooldown
	wake(1, map[string]any{"direction": "centre"})
	e.s.Ingest(ev("d", "face_detected", at(2), nil))
	wake(3, map[string]any{"direction": "left"})
	wantCalls(t, e,
		`set-head-angles {"device_id":"d","pitch":0,"speed":200,"yaw":-45}`,
		`set-head-angles {"device_id":"d","pitch":0,"speed":200,"yaw":45}`)
	var turns []Event
	for len(feed.C) > 0 {
		if x := <-feed.C; x.Name == "head_turn" {
			turns = append(turns, x)
		}
	}
	if len(turns) != 2 || turns[0].TS != at(0) || turns[0].Data.Get("yaw") != -45 || turns[0].Data.Get("phrase") != "hey dotty" ||
		turns[0].Data.Get("reason") != "wake_word" || turns[1].Data.Get("phrase") != "" || turns[1].Data.Get("direction") != "right" {
		t.Errorf("head_turn events %+v", turns)
	}
	st, _ := e.s.states.Get("d")
	if *st.LastSoundTurnT != at(0.5) {
		t.Errorf("last_sound_turn_t %v", *st.LastSoundTurnT)
	}
}

func TestSoundTurner(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Consumers.SoundTurnerEnabled = true })
	snd := func(ts float64, dir any) {
		e.fire(SoundTurner, ev("d", "sound_event", at(ts), map[string]any{"direction": dir, "energy": 0.7}))
	}
	snd(100, "left")
	snd(102, "right") // cooldown 3
	snd(103, "center")
	snd(106, "centre")
	snd(110, "up")
	snd(111, nil)
	wantCalls(t, e,
		`set-head-angles {"device_id":"d","pitch":0,"speed":250,"yaw":-45}`,
		`set-head-angles {"device_id":"d","pitch":0,"speed":250,"yaw":0}`,
		`set-head-angles {"device_id":"d","pitch":0,"speed":250,"yaw":0}`)
	var turns []Event
	for _, x := range e.s.bus.Recent("d", 0) {
		if x.Name == "head_turn" {
			turns = append(turns, x)
		}
	}
	if len(turns) != 3 || turns[2].Data.Get("reason") != "sound_localizer" || turns[2].Data.Get("energy") != 0.7 || turns[2].Data.Get("direction") != "left" {
		t.Errorf("head_turn events %+v", turns)
	}
	// Quiet for 30 s after a chat.
	q := newEnv(t, func(c *Config) { c.Consumers.SoundTurnerEnabled = true })
	q.fire(PurrPlayer, ev("d", "head_pet_started", at(0), nil))
	q.fire(SoundTurner, ev("d", "sound_event", at(31), map[string]any{"direction": "left"}))
	q.fire(SoundTurner, ev("d", "sound_event", at(32.5), map[string]any{"direction": "left"}))
	if n := len(q.xz.CallsTo("/xiaozhi/admin/set-head-angles")); n != 1 {
		t.Errorf("%d turns, want 1 (the first within 30 s of the purr's chat end)", n)
	}
	// Off by default: not even subscribed.
	if newEnv(t, nil).c.subscribed(SoundTurner) {
		t.Error("sound turner subscribed while disabled")
	}
}

func TestFaceLostAborter(t *testing.T) {
	e := newEnv(t, nil)
	e.fire(FaceGreeter, ev("d", "face_detected", at(0), nil))
	e.fire(FaceLostAborter, ev("d", "face_lost", at(5), nil))
	e.clock.Advance(3 * time.Second)
	e.fire(FaceLostAborter, ev("d", "face_detected", at(8), nil)) // back: cancelled
	e.clock.Advance(5 * time.Second)
	e.fire(FaceLostAborter, ev("d", "face_lost", at(10), nil))
	e.fire(FaceLostAborter, ev("d", "face_lost", at(11), nil)) // re-armed
	e.clock.Advance(3 * time.Second)
	e.fire(FaceLostAborter, ev("d", "face_lost", at(30), nil)) // beyond the 12 s window: ignored
	e.clock.Advance(1 * time.Second)
	testkit.WaitFor(t, 5*time.Second, "the abort", func() bool { return len(e.xz.CallsTo("/xiaozhi/admin/abort")) == 1 })
	e.clock.Advance(10 * time.Second)
	e.c.inflight.Wait()
	wantCalls(t, e, `inject-text {"device_id":"d","text":"Hi!"}`, `abort {"device_id":"d"}`)
}

func TestIdentityRefresher(t *testing.T) {
	e := newEnv(t, nil)
	now := epochSeconds(e.clock.Now())
	e.s.Ingest(ev("d", "face_recognized", now-10, map[string]any{"identity": "alex"}))
	e.s.Ingest(ev("gone", "face_recognized", now-10, map[string]any{"identity": "sam"}))
	e.s.Ingest(ev("gone", "face_lost", now-3, nil))
	e.s.Ingest(ev("stale", "face_recognized", now-31, map[string]any{"identity": "sam"}))
	e.s.Ingest(ev("nobody", "face_recognized", now-1, map[string]any{"identity": "unknown"}))
	e.s.Ingest(ev("unknown", "face_recognized", now-1, map[string]any{"identity": "alex"}))
	e.c.refreshOnce(context.Background())
	e.c.inflight.Wait()
	wantCalls(t, e, `set-face-identified {"device_id":"d"}`)
}

// TestConsumersRun drives the running consumers through the HTTP route and
// checks a failing xiaozhi stops nothing.
func TestConsumersRun(t *testing.T) {
	e := newEnv(t, nil)
	e.xz.Set("/xiaozhi/admin/inject-text", xiaozhitest.Reply{Status: 503, Body: "no device connected"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.s.Run(ctx) }()
	if err := e.clock.BlockUntilContext(ctx, 1); err != nil { // the refresher's ticker
		t.Fatal(err)
	}
	e.post(t, `{"device_id":"d","name":"face_detected","ts":`+formatSeconds(at(0))+`}`)
	e.post(t, `{"device_id":"d","name":"head_pet_started","ts":`+formatSeconds(at(1))+`}`)
	e.post(t, `{"device_id":"d","name":"face_lost","ts":`+formatSeconds(at(1.5))+`}`)
	e.post(t, `{"device_id":"d","name":"wake_word_detected","ts":`+formatSeconds(at(2))+`,"data":{"direction":"left"}}`)
	testkit.WaitFor(t, 5*time.Second, "three robot calls", func() bool { return len(e.xz.Calls()) == 3 })
	e.post(t, `{"device_id":"d","name":"face_detected","ts":`+formatSeconds(at(3))+`}`)
	e.post(t, `{"device_id":"d","name":"face_recognized","ts":`+formatSeconds(at(3))+`,"data":{"identity":"alex"}}`)
	// The refresher ticks on the fake clock once the events are applied.
	testkit.WaitFor(t, 5*time.Second, "the recognition applied", func() bool {
		st, _ := e.s.states.Get("d")
		return st.LastFaceID != nil
	})
	e.clock.Advance(3 * time.Second)
	testkit.WaitFor(t, 5*time.Second, "the refresher's call", func() bool { return len(e.xz.CallsTo("/xiaozhi/admin/set-face-identified")) > 0 })
	cancel()
	if err := testkit.Recv(t, 5*time.Second, done, "Run did not return"); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, c := range e.xz.Calls() {
		paths[strings.TrimPrefix(c.Path, "/xiaozhi/admin/")] = true
	}
	for _, p := range []string{"inject-text", "play-asset", "set-head-angles", "set-face-identified"} {
		if !paths[p] {
			t.Errorf("no %s call: %v", p, e.calls())
		}
	}
}

func TestPerceptionLines(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Senses = sensesStub{vision: " a red ball ", audio: "birdsong"} })
	now := epochSeconds(e.clock.Now())
	if got := e.s.PerceptionLines("nobody"); strings.Join(got, "|") != "You see: a red ball|You hear: birdsong" {
		t.Errorf("unknown device: %q", got)
	}
	e.s.Ingest(ev("d", "state_changed", now-100, map[string]any{"state": "Story_Time"}))
	e.s.Ingest(ev("d", "face_detected", now-5, nil))
	if got := e.s.PerceptionLines("d"); len(got) != 4 || got[0] != StoryTimeLine || got[1] != "You see an unrecognised face in front of you." {
		t.Errorf("story + unrecognised: %q", got)
	}
	e.s.Ingest(ev("d", "face_recognized", now-30, map[string]any{"identity": "alex"}))
	e.s.states.Update("d", func(d *DeviceState) { d.FaceMood, d.FaceMoodT = ptr(" Happy "), ptr(now-2) })
	if got := e.s.PerceptionLines("d"); got[1] != "You see alex in front of you. They look happy." {
		t.Errorf("identified: %q", got)
	}
	e.s.Ingest(ev("d", "face_recognized", now-31, map[string]any{"identity": "alex"}))
	if got := e.s.PerceptionLines("d"); got[1] != "You see an unrecognised face in front of you." {
		t.Errorf("stale identity: %q", got)
	}
}

type sensesStub struct{ vision, audio string }

func (s sensesStub) Fresh(string) (string, string) { return s.vision, s.audio }
func (sensesStub) Forget(string)                   {}

var _ = filepath.Join

// TestRepeatedProblemsLoggedOncePerMinute: with no xiaozhi host, sixty
// purr-worthy pats make one WARN line, and the next one a minute later says
// how many were skipped in between.
func TestRepeatedProblemsLoggedOncePerMinute(t *testing.T) {
	var logs testkit.LogBuffer
	e := newEnv(t, func(c *Config) {
		c.Robot = xiaozhi.New(xiaozhi.Config{})
		c.Consumers.PurrCooldown = 0
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs})
	})
	for i := range 60 {
		e.fire(PurrPlayer, ev("d", "head_pet_started", at(float64(i)), nil))
	}
	if n := strings.Count(logs.String(), "XIAOZHI_HOST is empty"); n != 1 {
		t.Fatalf("%d warnings for 60 skipped purrs, want 1:\n%s", n, logs.String())
	}
	e.clock.Advance(time.Minute)
	e.fire(PurrPlayer, ev("d", "head_pet_started", at(100), nil))
	if n := strings.Count(logs.String(), "XIAOZHI_HOST is empty"); n != 2 || !strings.Contains(logs.String(), "repeated=59") {
		t.Errorf("after a minute: %d warnings:\n%s", n, logs.String())
	}
}
