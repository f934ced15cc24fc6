package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/household-sim/simclock"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/bridgeapp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/social"
)

// The voice fallbacks (spec §4.3): a turn answered one of them failed.
var fallbacks = []string{
	"😐 I'm thinking too slowly right now, try again.",
	"😐 My AI brain is offline.",
	"😐 Something went wrong, please try again.",
}

// roomViews are the fake vision model's descriptions, in turn; a
// description differs enough from the last for the idle photographer to
// keep it. One carries a canary: outside text in a prompt.
var roomViews = []string{
	"A sunny kitchen with a bowl of apples on the table.",
	"The lounge sofa with a folded blue blanket and two cushions.",
	"A bedroom shelf of dinosaur toys beside a drawing pad.",
	canaried("An empty hallway with coats on hooks and a bicycle."),
	"Rain on the window behind a potted fern.",
}

// roomViewMarker is a phrase of the room view's question to the model,
// and roomViewAnswer the fake model's answer: the kid, engaged.
const (
	roomViewMarker = "do THREE things in one reply"
	roomViewAnswer = "DESC: A girl of about eight with a ponytail, drawing at a desk | NAME: mia | MOOD: engaged"
)

// world is the simulated house: its files, fakes, clock and the bridge.
type world struct {
	dir       string
	loc       *time.Location
	clock     *simclock.Clock
	log       hclog.Logger
	xz        *xiaozhitest.Server
	vlm       *llmtest.Server
	promptLog string // the agent's prompts, one JSON string a line
	http      *http.Client
	busy      atomic.Int64 // the sim's requests in flight
	outbound  counted      // the bridge's own HTTP requests in flight
	views     atomic.Int64 // vision answers given
	roomAsked atomic.Int64 // room views the model was asked

	app     atomic.Pointer[bridgeapp.App]
	stopped chan error // the bridge's end

	mu        sync.Mutex
	failed    []Event        // the sim's turns answered a fallback
	caused    []Span         // windows after an agent kill or model change
	acked     []Write        // memory writes the bridge acknowledged
	nameAcks  map[string]int // name acknowledgements per local date
	ackDays   map[string]int // acknowledged memory writes per local date
	roomViews map[string]int // room views the model answered per local date
	kidPhotos map[string]int // photos described with the kid-mode prompt per local date
	kidSpans  []Span         // when the script has kid mode on (read-only)
	problems  []string       // what a step itself found wrong
}

// env is the bridge's whole environment: nothing of the sim's own.
func (w *world) env(self string) map[string]string {
	host, port := w.xz.HostPort()
	return map[string]string{
		"PORT": "0", "BRIDGE_HOST": "127.0.0.1", "LOG_LEVEL": "info",
		"TZ": w.loc.String(), "DOTTY_LOCAL_TZ": w.loc.String(),
		"HOME": w.dir, "XDG_STATE_HOME": filepath.Join(w.dir, "state"),
		"CONVO_LOG_DIR":          filepath.Join(w.dir, "logs"),
		"VOICE_MEMORY_DB":        filepath.Join(w.dir, "memory", "brain.db"),
		"GREETER_STATE_PATH":     filepath.Join(w.dir, "greeter_state.json"),
		"HOUSEHOLD_YAML_PATH":    filepath.Join(w.dir, "household.yaml"),
		"DOTTY_KID_MODE":         "false",
		"DOTTY_KID_MODE_STATE":   filepath.Join(w.dir, "state", "kid-mode"),
		"DOTTY_SMART_MODE_STATE": filepath.Join(w.dir, "state", "smart-mode"),
		"DOTTY_TOOL_ALLOWLIST":   filepath.Join(w.dir, "state", "tool-allowlist"),
		"ZEROCLAW_WORKSPACE":     filepath.Join(w.dir, "workspace"),
		"ZEROCLAW_VOICE_CFG":     filepath.Join(w.dir, "config.toml"),
		"ZEROCLAW_DISCORD_CFG":   filepath.Join(w.dir, "discord.toml"),
		"SIDECAR_PERSONAS_DIR":   filepath.Join(w.dir, "personas"),
		"ZEROCLAW_BIN":           self,
		"XIAOZHI_HOST":           host, "XIAOZHI_OTA_PORT": strconv.Itoa(port),
		"VISION_API_URL":        w.vlm.URL + "/v1/chat/completions",
		"AUDIO_CAPTION_API_URL": w.vlm.URL + "/v1/chat/completions",
		"OPENROUTER_API_KEY":    "sk-or-sim",
		"WEATHER_LOCATION":      "-",
		"DOTTY_MCP_ENABLED":     "false",
		"CALENDAR_ID":           "family@sim", "GWS_BIN": self,
		"CALENDAR_SA_PATH": filepath.Join(w.dir, "calendar-sa.json"),
	}
}

// newWorld makes the house in dir (kid: when the script has kid mode on,
// for the vision prompt's check): the roster, the agent's config, the
// fakes. Close ends the fakes.
func newWorld(dir string, loc *time.Location, start time.Time, kid []Span, log hclog.Logger) (*world, error) {
	w := &world{dir: dir, loc: loc, clock: simclock.New(start), log: log, stopped: make(chan error, 1), kidSpans: kid,
		promptLog: filepath.Join(dir, "agent-prompts.ndjson"), nameAcks: map[string]int{}, ackDays: map[string]int{}, roomViews: map[string]int{}, kidPhotos: map[string]int{},
		http: &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"household.yaml", householdYAML},
		{"config.toml", []byte("[providers.models.\"custom:https://openrouter.ai/api/v1\"]\nmodel = \"sim/model-a\"\n")},
		{"calendar-sa.json", []byte("{}\n")},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			return nil, fmt.Errorf("world: %w", err)
		}
	}
	var err error
	if w.xz, err = xiaozhitest.Start(xiaozhitest.Options{Keep: 64, FirstRobot: robots[0].Device}); err != nil {
		return nil, err
	}
	if w.vlm, err = llmtest.Start(llmtest.Options{Text: "A quiet room.", Keep: 16, KeepLines: 8192}); err != nil {
		w.xz.Close()
		return nil, err
	}
	w.vlm.Set(llmtest.Reply{Answer: func(p llmtest.Prompt) string {
		w.described(w.clock.Now(), strings.Contains(p.Text, kidPromptMarker))
		return roomViews[int(w.views.Add(1)-1)%len(roomViews)]
	}})
	w.vlm.SetAudio(llmtest.Reply{Text: "The hum of the fridge and a clock ticking."})
	w.vlm.SetFor(roomViewMarker, llmtest.Reply{Answer: func(llmtest.Prompt) string {
		w.roomAsked.Add(1)
		return roomViewAnswer
	}})
	w.vlm.SetFor(social.DreamSystemPrompt, llmtest.Reply{Text: "I float over a sea of blocks that hum.\n\nSUMMARY: A dream of humming blocks."})
	w.vlm.SetFor(social.DanceSystemPrompt, llmtest.Reply{Text: "I spin and the room spins with me. What joy!"})
	w.xz.After("/xiaozhi/admin/say", func(c xiaozhitest.Call) {
		if text, _ := c.Body["text"].(string); strings.HasPrefix(text, "Oh, it's ") {
			w.mu.Lock()
			w.nameAcks[w.clock.Now().In(loc).Format(time.DateOnly)]++
			w.mu.Unlock()
		}
	})
	return w, nil
}

// start runs the bridge in process on the world's clock and returns once
// it listens.
func (w *world) start(ctx context.Context, logTo io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("the sim's own path: %w", err)
	}
	bin, _, agentEnv := acptest.Command("echo", "ZCB_ACPTEST_PROMPT_LOG="+w.promptLog)
	if bin != self {
		return fmt.Errorf("acptest runs %s, not the sim", bin)
	}
	env := w.env(self)
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ready := make(chan struct{})
	go func() {
		w.stopped <- bridgeapp.RunWith(ctx, nil, lookup, io.Discard, logTo, bridgeapp.Options{
			Clock: w.clock, AgentEnv: agentEnv, Transport: &w.outbound,
			Ready: func(a *bridgeapp.App) {
				url := "http://" + a.Addr()
				w.xz.TakesPhotos(url, photo())
				w.xz.RecordsAudio(url, clip())
				w.xz.ReportsStates(url, xiaozhitest.AnyRobot)
				w.xz.Talks(url, xiaozhitest.AnyRobot)
				w.app.Store(a)
				close(ready)
			},
		})
	}()
	select {
	case <-ready:
		return nil
	case err := <-w.stopped:
		return fmt.Errorf("the bridge did not start: %w", err)
	case <-time.After(time.Minute):
		return errors.New("the bridge did not listen within a minute")
	}
}

// settled reports that none of the sim's requests, nor the fakes, are busy.
func (w *world) settled() bool {
	if w.busy.Load() != 0 || w.outbound.n.Load() != 0 || w.xz.InFlight() != 0 || w.vlm.InFlight() != 0 {
		return false
	}
	app := w.app.Load()
	return app == nil || app.Busy() == 0
}

// counted is the bridge's outbound transport: it counts the requests in
// flight, from before the connection is dialled until the response is
// read, where the fakes' own counts cannot see them.
type counted struct{ n atomic.Int64 }

func (c *counted) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		c.n.Add(-1)
		return nil, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, c: c}
	return resp, nil
}

// countedBody ends its request's count when the caller closes it.
type countedBody struct {
	io.ReadCloser
	c    *counted
	once sync.Once
}

func (b *countedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.c.n.Add(-1) })
	return err
}

// close ends the fakes.
func (w *world) close() {
	w.xz.Close()
	w.vlm.Close()
	w.http.CloseIdleConnections()
}

// kidPromptMarker is a phrase of the vision model's kid-mode system
// prompt (perception/vision's kidSystem) that its adult prompt lacks.
const kidPromptMarker = "suitable for a young child"

// described checks a photo description's prompt against kid mode as the
// script set it: the kid prompt while on, the adult one while off (a
// photo within kidToggleMargin of a switch may be either).
func (w *world) described(at time.Time, kid bool) {
	on, sure := kidModeAt(w.kidSpans, at, kidToggleMargin)
	if kid {
		w.mu.Lock()
		w.kidPhotos[at.In(w.loc).Format(time.DateOnly)]++
		w.mu.Unlock()
	}
	if sure && on != kid {
		w.problem("a photo described at %s with the %s prompt while kid mode was %s", stamp(at.In(w.loc)),
			map[bool]string{true: "kid-mode", false: "adult"}[kid], map[bool]string{true: "on", false: "off"}[on])
	}
}

// problem notes what a step found wrong.
func (w *world) problem(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

// call makes one request of the bridge as a caller on this machine and
// returns the status and body.
func (w *world) call(method, path string, body any) (int, []byte, error) {
	a := w.app.Load()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+a.Addr()+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return w.send(req)
}

// send makes a request of the bridge as a caller on this machine.
func (w *world) send(req *http.Request) (int, []byte, error) {
	req.Host = "127.0.0.1"
	resp, err := w.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// expect makes a call and notes a problem unless it answers want.
func (w *world) expect(what string, want int, method, path string, body any) ([]byte, bool) {
	code, b, err := w.call(method, path, body)
	if err != nil || code != want {
		w.problem("%s at %s: %s %s answered %d %s (%v), want %d", what, stamp(w.clock.Now().In(w.loc)), method, path, code, bytes.TrimSpace(b), err, want)
		return b, false
	}
	return b, true
}

// photo is a small real JPEG, as a robot's camera sends.
func photo() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for x := range 16 {
		for y := range 16 {
			img.Set(x, y, color.RGBA{uint8(x * 16), uint8(y * 16), 128, 255})
		}
	}
	var b bytes.Buffer
	_ = jpeg.Encode(&b, img, nil) // a buffer takes every write
	return b.Bytes()
}

// clip is a tenth of a second of silence as a 16 kHz mono 16-bit WAV.
func clip() []byte {
	const rate, samples = 16000, 1600
	var b bytes.Buffer
	put := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) } // a buffer takes every write
	b.WriteString("RIFF")
	put(uint32(36 + 2*samples))
	b.WriteString("WAVEfmt ")
	put(uint32(16))
	put(uint16(1))
	put(uint16(1))
	put(uint32(rate))
	put(uint32(2 * rate))
	put(uint16(2))
	put(uint16(16))
	b.WriteString("data")
	put(uint32(2 * samples))
	b.Write(make([]byte, 2*samples))
	return b.Bytes()
}
