package vision

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/perceptiontest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	s     *Service
	p     *perception.Service
	model *llmtest.Server
	clock *clockwork.FakeClock
	url   string
	kid   atomic.Bool
	house string
	// endRequests ends every request's ctx with a cause, as the bridge's
	// server does when its shutdown grace runs out.
	endRequests context.CancelCauseFunc
}

func newEnv(t *testing.T, edit func(*Config)) *env {
	t.Helper()
	return newEnvWith(t, edit, nil)
}

// newEnvWith is newEnv with the perception service's config edited too;
// perception and the routes share one cache, as in the bridge.
func newEnvWith(t *testing.T, edit func(*Config), editPerception func(*perception.Config)) *env {
	t.Helper()
	e := &env{model: llmtest.New(t, "  A red ball on a wooden floor.  "), clock: clockwork.NewFakeClockAt(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))}
	e.house = filepath.Join(t.TempDir(), "household.yaml")
	cfg := Config{
		Vision:    Model{URL: e.model.URL + "/v1/chat/completions", Model: "vlm-1", APIKey: "sk-vision"},
		Audio:     Model{URL: e.model.URL + "/v1/chat/completions", Model: "ear-1", APIKey: "sk-audio"},
		KidMode:   e.kid.Load,
		MaxUpload: 1 << 20,
		Clock:     e.clock,
		Logger:    hclog.NewNullLogger(),
	}
	if edit != nil {
		edit(&cfg)
	}
	cfg.Cache = NewCache(CacheConfig{MaxDevices: cfg.MaxDevices, Clock: e.clock})
	cons := perception.DefaultConsumers()
	cons.HouseholdPath = e.house
	pcfg := perception.Config{Consumers: cons, Senses: cfg.Cache, Clock: e.clock, Logger: hclog.NewNullLogger()}
	if editPerception != nil {
		editPerception(&pcfg)
	}
	e.p = perception.New(pcfg)
	cfg.Household, cfg.Perception = e.p.Household(), e.p
	e.s = New(cfg)
	ech := echo.New()
	ech.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	e.s.Routes(ech)
	e.p.Routes(ech)
	e.url, e.endRequests = testkit.ServeEndable(t, ech)
	return e
}

// upload posts a multipart body to path.
func (e *env) upload(t *testing.T, path, device, question string, file []byte, ctype string) (int, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if file != nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="clip.bin"`)
		h.Set("Content-Type", ctype)
		part, _ := w.CreatePart(h)
		part.Write(file)
	}
	if question != "" {
		w.WriteField("question", question)
	}
	w.Close()
	req, _ := http.NewRequest(http.MethodPost, e.url+path, &b)
	req.Header.Set("Content-Type", w.FormDataContentType())
	if device != "" {
		req.Header.Set("device-id", device)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(out))
}

var jpeg = []byte("\xff\xd8\xff\xe0fake-jpeg-bytes")

func TestExplain(t *testing.T) {
	e := newEnv(t, nil)
	code, body := e.upload(t, "/api/vision/explain", "dotty-1", "", jpeg, "image/jpeg")
	if code != 200 || body != `{"description":"A red ball on a wooden floor."}` {
		t.Fatalf("%d %s", code, body)
	}
	req := e.model.Request(0).Body
	msgs := req["messages"].([]any)
	user := msgs[1].(map[string]any)["content"].([]any)
	img := user[0].(map[string]any)["image_url"].(map[string]any)["url"]
	if req["model"] != "vlm-1" || req["max_tokens"] != 200.0 || req["temperature"] != 0.3 ||
		msgs[0].(map[string]any)["content"] != adultSystem ||
		img != "data:image/jpeg;base64,"+base64.StdEncoding.EncodeToString(jpeg) ||
		user[1].(map[string]any)["text"] != "What do you see?" {
		t.Errorf("request %v", req)
	}
	if r := e.model.Request(0); r.Path+" "+r.Auth != "/v1/chat/completions Bearer sk-vision" {
		t.Errorf("auth %q", r.Path+" "+r.Auth)
	}
	// Kid mode is read live; the sentinel without a roster becomes the person question.
	e.kid.Store(true)
	e.upload(t, "/api/vision/explain", "dotty-1", RoomViewSentinel, jpeg, "image/jpeg")
	req = e.model.Request(1).Body
	msgs = req["messages"].([]any)
	if msgs[0].(map[string]any)["content"] != kidSystem || msgs[1].(map[string]any)["content"].([]any)[1].(map[string]any)["text"] != roomViewQuestion {
		t.Errorf("kid request %v", req)
	}
	if d, age, ok := e.s.Freshest(); !ok || d != "A red ball on a wooden floor." || age != 0 {
		t.Errorf("Freshest = %q %v %v", d, age, ok)
	}
	if v, _ := e.s.Fresh("dotty-1"); v == "" {
		t.Error("no fresh vision for the prompt")
	}
	e.clock.Advance(61 * time.Second)
	if v, _ := e.s.Fresh("dotty-1"); v != "" {
		t.Error("a 61 s old description is still fresh")
	}
}

func TestExplainFailures(t *testing.T) {
	off := newEnv(t, func(c *Config) { c.Vision.APIKey = "" })
	if code, body := off.upload(t, "/api/vision/explain", "d", "", jpeg, "image/jpeg"); code != 200 || body != `{"description":"`+OfflineText+`"}` {
		t.Errorf("offline: %d %s", code, body)
	}
	if n := off.model.Count(); n != 0 {
		t.Errorf("%d model calls without a key", n)
	}
	e := newEnv(t, nil)
	e.model.Set(llmtest.Reply{Status: 500, Text: "boom"})
	if code, body := e.upload(t, "/api/vision/explain", "d", "", jpeg, "image/jpeg"); code != 200 || body != `{"description":"`+FailedText+`"}` {
		t.Errorf("model error: %d %s", code, body)
	}
	if code, body := e.upload(t, "/api/vision/explain", "d", "what?", nil, ""); code != 422 || !strings.Contains(body, `"loc":["body","file"]`) {
		t.Errorf("no file: %d %s", code, body)
	}
	resp, _ := http.Post(e.url+"/api/vision/explain", "application/json", strings.NewReader(`{}`))
	resp.Body.Close()
	if resp.StatusCode != 422 {
		t.Errorf("not multipart: %d", resp.StatusCode)
	}
	calls := e.model.Count()
	big := bytes.Repeat([]byte{0xff}, 2<<20)
	if code, body := e.upload(t, "/api/vision/explain", "d", "", big, "image/jpeg"); code != 413 || body != `{"detail":"upload over 1048576 bytes"}` {
		t.Errorf("oversized: %d %s", code, body)
	}
	if e.model.Count() != calls {
		t.Error("an oversized upload reached the model")
	}
}

// poll starts a long-poll and returns its result channel.
func (e *env) poll(t *testing.T, device string) <-chan [2]string {
	out := make(chan [2]string, 1)
	go func() {
		resp, err := http.Get(e.url + "/api/vision/latest/" + device)
		if err != nil {
			out <- [2]string{"error", err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- [2]string{fmt.Sprint(resp.StatusCode), strings.TrimSpace(string(b))}
	}()
	return out
}

func waitWaiters(t *testing.T, s *Service, device string, n int) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("%d waiters for %s", n, device), func() bool { return s.Waiters(device) == n })
}

func recv(t *testing.T, ch <-chan [2]string) [2]string {
	t.Helper()
	return testkit.Recv(t, 5*time.Second, ch, "long-poll did not answer")
}

func TestLatestLongPoll(t *testing.T) {
	e := newEnv(t, nil)
	device := "dotty-aa:bb:cc:dd:ee:ff"
	// An earlier result is stale: the poll waits for the next one.
	e.upload(t, "/api/vision/explain", device, "", jpeg, "image/jpeg")
	a := e.poll(t, device)
	b := e.poll(t, "dotty-aa%3Abb%3Acc%3Add%3Aee%3Aff")
	waitWaiters(t, e.s, device, 2)
	e.model.Answer("A cat on the sofa.")
	e.upload(t, "/api/vision/explain", device, "", jpeg, "image/jpeg")
	want := [2]string{"200", `{"description":"A cat on the sofa.","room_match_person_id":null}`}
	if got := recv(t, a); got != want {
		t.Errorf("first waiter %v", got)
	}
	if got := recv(t, b); got != want {
		t.Errorf("second waiter %v", got)
	}
	waitWaiters(t, e.s, device, 0)
	// No result in 15 s: 404.
	c := e.poll(t, "other")
	waitWaiters(t, e.s, "other", 1)
	if err := e.clock.BlockUntilContext(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(15 * time.Second)
	if got := recv(t, c); got != [2]string{"404", `{"error":"no vision result in time"}`} {
		t.Errorf("timeout %v", got)
	}
	waitWaiters(t, e.s, "other", 0)
}

// A long-poll still waiting when the bridge's shutdown grace runs out
// answers the documented miss, not an empty reply.
func TestLatestLongPollEndsAtShutdown(t *testing.T) {
	e := newEnv(t, nil)
	c := e.poll(t, "d1")
	waitWaiters(t, e.s, "d1", 1)
	e.endRequests(httpapi.ErrShuttingDown)
	if got := recv(t, c); got != [2]string{"404", `{"error":"no vision result in time"}`} {
		t.Errorf("long-poll at shutdown answered %v", got)
	}
	waitWaiters(t, e.s, "d1", 0)
}

const roster = `people:
  alex:
    display_name: Alex
    appearance: a boy of about eight with curly red hair and round glasses
  sam:
    display_name: Sam
    appearance: a tall adult with a grey beard who always wears a bright yellow raincoat with many small pockets everywhere
  _household: {}
  pat: {display_name: Pat}
`

func TestRoomView(t *testing.T) {
	e := newEnv(t, nil)
	if err := os.WriteFile(e.house, []byte(roster), 0o600); err != nil {
		t.Fatal(err)
	}
	e.model.Answer("DESC: A boy with curly red hair | NAME: Alex | MOOD: Excited.")
	code, body := e.upload(t, "/api/vision/explain", "d1", RoomViewSentinel, jpeg, "image/jpeg")
	if code != 200 || body != `{"description":"A boy with curly red hair"}` {
		t.Fatalf("%d %s", code, body)
	}
	req := e.model.Request(0).Body
	msgs := req["messages"].([]any)
	text := msgs[1].(map[string]any)["content"].([]any)[1].(map[string]any)["text"].(string)
	if msgs[0].(map[string]any)["content"] != roomViewSystem ||
		!strings.Contains(text, "Family:\n  Alex: a boy of about eight with curly red hair and round glasses\n  Sam: a tall adult with a grey beard who always wears a bright yellow raincoat with...\n\n") ||
		!strings.Contains(text, "NAME: <Alex|Sam|unknown>") {
		t.Errorf("room prompt:\n%s", text)
	}
	// The mood is stored; the match is only broadcast (bridge.py), never
	// written as the device's identity.
	st, _ := e.p.States().Get("d1")
	if st.FaceMood == nil || *st.FaceMood != "excited" || st.LastFaceID != nil || st.LastFaceRecognizedT != nil || st.LastRoomViewCaptureT == nil {
		t.Errorf("state %+v", st)
	}
	recent := e.p.Bus().Recent("d1", 1)
	if len(recent) != 1 || recent[0].Name != "face_recognized" || recent[0].Data.Get("identity") != "alex" || recent[0].Data.Get("source") != "room_view" {
		t.Errorf("recent %+v", recent)
	}
	// Within the cooldown: no model call, "no one in view".
	calls := e.model.Count()
	p := e.poll(t, "d1")
	waitWaiters(t, e.s, "d1", 1)
	if _, body := e.upload(t, "/api/vision/explain", "d1", RoomViewSentinel, jpeg, "image/jpeg"); body != `{"description":"no one in view"}` {
		t.Errorf("cooldown: %s", body)
	}
	if got := recv(t, p); got != [2]string{"200", `{"description":"no one in view","room_match_person_id":null}`} {
		t.Errorf("poll during cooldown %v", got)
	}
	// Dancing also skips; so does a conversation past its kick-off grace.
	e.p.Ingest(perception.Event{DeviceID: "d2", Name: "dance_started", TS: 1})
	e.upload(t, "/api/vision/explain", "d2", RoomViewSentinel, jpeg, "image/jpeg")
	now := float64(e.clock.Now().UnixNano()) / 1e9
	e.p.Ingest(perception.Event{DeviceID: "d3", Name: "state_changed", TS: now - 10, Data: perception.DataOf(map[string]any{"state": "talk"})})
	e.upload(t, "/api/vision/explain", "d3", RoomViewSentinel, jpeg, "image/jpeg")
	if e.model.Count() != calls {
		t.Errorf("gated room views called the model %d times", e.model.Count()-calls)
	}
	// Within the kick-off grace the room view runs; an unknown name is no match.
	e.p.Ingest(perception.Event{DeviceID: "d4", Name: "state_changed", TS: now - 1, Data: perception.DataOf(map[string]any{"state": "talk"})})
	e.model.Answer("DESC: Someone new | NAME: bob | MOOD: sleepy")
	p4 := e.poll(t, "d4")
	waitWaiters(t, e.s, "d4", 1)
	e.upload(t, "/api/vision/explain", "d4", RoomViewSentinel, jpeg, "image/jpeg")
	if got := recv(t, p4); got != [2]string{"200", `{"description":"Someone new","room_match_person_id":null}`} {
		t.Errorf("kick-off %v", got)
	}
	if st, _ := e.p.States().Get("d4"); st.FaceMood != nil {
		t.Error("a mood off the vocabulary was stored")
	}
}

func TestParseRoomView(t *testing.T) {
	for _, tt := range []struct{ in, desc, name, mood string }{
		{"DESC: A girl | NAME: Alex | MOOD: tired", "A girl", "alex", "tired"},
		{"  desc: two kids | name: unknown | mood: Neutral. ", "two kids", "unknown", "neutral"},
		{"DESC: A man | NAME: sam_2", "A man", "sam_2", ""},
		{"DESC: A man\nwith a hat | NAME: sam | MOOD: grumpy!", "A man\nwith a hat", "sam", ""},
		{"No one in view.", "", "", ""},
		{"   ", "", "", ""},
		{"Just a sofa.", "Just a sofa.", "", ""},
		{"DESC: x | NAME: 9lives", "DESC: x | NAME: 9lives", "", ""},
	} {
		d, n, m := ParseRoomView(tt.in)
		if d != tt.desc || n != tt.name || m != tt.mood {
			t.Errorf("ParseRoomView(%q) = %q %q %q", tt.in, d, n, m)
		}
	}
}

func TestAudioExplain(t *testing.T) {
	e := newEnv(t, nil)
	e.p.Ingest(perception.Event{DeviceID: "d1", Name: "face_detected", TS: 1})
	feed := perceptiontest.NewWatcher(t, e.p.Bus())
	e.model.Answer("Birdsong and a distant car.")
	code, body := e.upload(t, "/api/audio/explain", "d1", "", []byte("RIFFwav"), "audio/x-wav")
	if code != 200 || body != `{"description":"Birdsong and a distant car."}` {
		t.Fatalf("%d %s", code, body)
	}
	req := e.model.Request(0).Body
	user := req["messages"].([]any)[1].(map[string]any)["content"].([]any)
	audio := user[0].(map[string]any)["input_audio"].(map[string]any)
	if req["model"] != "ear-1" || audio["format"] != "wav" || audio["data"] != base64.StdEncoding.EncodeToString([]byte("RIFFwav")) ||
		user[1].(map[string]any)["text"] != "Describe what you hear." || req["messages"].([]any)[0].(map[string]any)["content"] != audioSystem {
		t.Errorf("request %v", req)
	}
	if _, a := e.s.Fresh("d1"); a != "Birdsong and a distant car." {
		t.Errorf("audio cache %q", a)
	}
	if ev := feed.Expect(2*time.Second, perceptiontest.Named("audio_captioned"))[0]; ev.Data.Get("preview") != "Birdsong and a distant car." || ev.Data.Get("source") != "audio_explain" {
		t.Errorf("event %+v", ev)
	}
	if st, _ := e.p.States().Get("d1"); st.LastEventName == nil || *st.LastEventName != "face_detected" {
		t.Error("audio_captioned touched the device state")
	}
	e.model.Set(llmtest.Reply{Status: 503})
	if _, body := e.upload(t, "/api/audio/explain", "d1", "", []byte("x"), "audio/ogg"); body != `{"description":"`+AudioFallback+`"}` {
		t.Errorf("fallback %s", body)
	}
}

func TestAudioFormat(t *testing.T) {
	for _, tt := range []struct{ ctype, name, want string }{
		{"audio/wav", "", "wav"}, {"audio/wave", "", "wav"}, {"audio/mpeg", "", "mp3"}, {"audio/MP3", "", "mp3"},
		{"audio/ogg; codecs=opus", "", "opus"}, {"audio/opus", "", "opus"}, {"audio/x-flac", "", "flac"},
		{"application/octet-stream", "a.MP3", "mp3"}, {"", "a.ogg", "opus"}, {"", "clip.flac", "flac"},
		{"", "clip.aac", "wav"}, {"", "", "wav"},
	} {
		if got := AudioFormat(tt.ctype, tt.name); got != tt.want {
			t.Errorf("AudioFormat(%q, %q) = %q, want %q", tt.ctype, tt.name, got, tt.want)
		}
	}
}
