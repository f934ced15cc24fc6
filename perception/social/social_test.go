package social

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var brisbane = testkit.Zone("Australia/Brisbane")

// t0 is a Sunday morning in Brisbane.
var t0 = time.Date(2026, 5, 17, 9, 0, 0, 0, brisbane)

const wait = 5 * time.Second

const roster = `people:
  brett:
    display_name: Brett
    age: 40
    personality: curious
    interests: [robots, coffee]
    birthdate: 1986-05-20
  hudson:
    display_name: Hudson
`

// fakeAgent answers greeting prompts with fn (a fixed greeting by default).
type fakeAgent struct {
	mu      sync.Mutex
	keys    []string
	prompts []string
	fn      func(ctx context.Context, prompt string) (string, error)
	called  chan struct{}
}

func newFakeAgent() *fakeAgent { return &fakeAgent{called: make(chan struct{}, 64)} }

func (a *fakeAgent) Prompt(ctx context.Context, key, prompt string) (string, error) {
	a.mu.Lock()
	a.keys = append(a.keys, key)
	a.prompts = append(a.prompts, prompt)
	fn := a.fn
	a.mu.Unlock()
	select {
	case a.called <- struct{}{}:
	default: // a flood nobody waits on: calls() counts them
	}
	if fn != nil {
		return fn(ctx, prompt)
	}
	return "Hello there!", nil
}

func (a *fakeAgent) set(fn func(ctx context.Context, prompt string) (string, error)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fn = fn
}

func (a *fakeAgent) calls() ([]string, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.keys...), append([]string(nil), a.prompts...)
}

// fakeCalendar returns events for everyone and records who was asked for.
type fakeCalendar struct {
	mu     sync.Mutex
	asked  []string
	events []string
	panics bool
}

func (c *fakeCalendar) Today(person string, includeHousehold bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.panics {
		panic("calendar broke")
	}
	h := "-household"
	if includeHousehold {
		h = "+household"
	}
	c.asked = append(c.asked, person+h)
	return c.events
}

type env struct {
	t      *testing.T
	clock  *clockwork.FakeClock
	p      *perception.Service
	xz     *xiaozhitest.Server
	model  *llmtest.Server
	agent  *fakeAgent
	cal    *fakeCalendar
	dir    string // CONVO_LOG_DIR
	state  string // GREETER_STATE_PATH
	logs   *testkit.LogBuffer
	cfg    Config
	s      *Service
	stop   func()
	stopMu sync.Mutex
}

// newEnv builds a started service on a fake clock at t0 with every part
// enabled, a roster, a recording xiaozhi, a fake model and agent.
func newEnv(t *testing.T, edit func(*Config)) *env {
	t.Helper()
	e := &env{t: t, clock: clockwork.NewFakeClockAt(t0), xz: xiaozhitest.New(t), model: llmtest.New(t, "A text."),
		agent: newFakeAgent(), cal: &fakeCalendar{}, dir: t.TempDir(), logs: &testkit.LogBuffer{}}
	e.state = filepath.Join(t.TempDir(), "zeroclaw", "greeter_state.json")
	household := filepath.Join(t.TempDir(), "household.yaml")
	if err := os.WriteFile(household, []byte(roster), 0o600); err != nil {
		t.Fatal(err)
	}
	pc := perception.DefaultConsumers()
	pc.HouseholdPath = household
	e.p = perception.New(perception.Config{Consumers: pc, Location: brisbane, Clock: e.clock, Logger: hclog.NewNullLogger()})
	host, port := e.xz.HostPort()
	log := hclog.New(&hclog.LoggerOptions{Output: io.MultiWriter(e.logs, testWriter{t}), Level: hclog.Debug})
	set := DefaultSettings()
	set.GreeterStatePath = e.state
	e.cfg = Config{
		Perception: e.p,
		Robot:      xiaozhi.New(xiaozhi.Config{Host: host, Port: port}),
		Agent:      e.agent,
		Calendar:   e.cal,
		KidMode:    func() bool { return true },
		Narrator: llm.NewNarrative(llm.NarrativeConfig{URL: e.model.URL + "/api/v1/chat/completions", APIKey: "k",
			Logger: log.Named("narrative")}),
		ConvoLog:   convolog.New(convolog.Config{Dir: e.dir, Location: brisbane, Logger: log}),
		JournalDir: e.dir,
		Location:   brisbane,
		Clock:      e.clock,
		Logger:     log,
		Settings:   set,
	}
	if edit != nil {
		edit(&e.cfg)
	}
	e.start()
	return e
}

// testWriter sends log lines to t.Log while the test runs.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// start builds a new Service from the env's config and runs it; the test
// (or a restart) stops it.
func (e *env) start() {
	e.t.Helper()
	e.s = New(e.cfg)
	run := testkit.Run(e.t, e.s, wait)
	e.stopMu.Lock()
	e.stop = func() {
		if err := run(); err != nil {
			e.t.Errorf("Run: %v", err)
		}
	}
	stop := e.stop
	e.stopMu.Unlock()
	e.t.Cleanup(stop)
}

// restart stops the service and starts a new one on the same files.
func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

func (e *env) ingest(device, name string, data map[string]any) {
	e.p.Ingest(perception.Event{DeviceID: device, TS: epochSeconds(e.clock.Now()), Name: name, Data: perception.DataOf(data)})
}

// idle waits until no task is in flight: no greeting reserved and no
// dance slot taken (dreams are waited for through their files).
func (e *env) idle() {
	e.t.Helper()
	testkit.WaitFor(e.t, wait, "the tasks to finish", func() bool {
		g := e.s.greeter
		g.mu.Lock()
		n := len(g.inFlight)
		g.mu.Unlock()
		return n == 0 && len(e.s.dancesIn) == 0
	})
}

// logged waits until the log holds n lines containing s.
func (e *env) logged(s string, n int) {
	e.t.Helper()
	testkit.WaitFor(e.t, wait, "log line "+s, func() bool { return strings.Count(e.logs.String(), s) >= n })
}

// lines returns the lines of a journal file ("" when absent).
func (e *env) lines(name string) []string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	out := strings.SplitAfter(string(b), "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// waitLines waits until a journal file has n lines.
func (e *env) waitLines(name string, n int) []string {
	e.t.Helper()
	testkit.WaitFor(e.t, wait, name+" lines", func() bool { return len(e.lines(name)) >= n })
	return e.lines(name)
}

func (e *env) says() []string {
	var out []string
	for _, c := range e.xz.CallsTo("/xiaozhi/admin/say") {
		out = append(out, c.Body["device_id"].(string)+": "+c.Body["text"].(string))
	}
	return out
}

func (e *env) waitSays(n int) []string {
	e.t.Helper()
	testkit.WaitFor(e.t, wait, "say calls", func() bool { return len(e.says()) >= n })
	e.idle()
	return e.says()
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Settings)
		ok   bool
	}{
		{"defaults", func(*Settings) {}, true},
		{"no dreams", func(s *Settings) { s.DreamCount = 0 }, true},
		{"negative window", func(s *Settings) { s.DreamWindow = -time.Second }, false},
		{"negative count", func(s *Settings) { s.DreamCount = -1 }, false},
		{"too many dreams", func(s *Settings) { s.DreamCount = maxDreamCount + 1 }, false},
		{"negative cooldown", func(s *Settings) { s.GreetCooldown = -time.Hour }, false},
		{"negative cap", func(s *Settings) { s.GreetPerDayMax = -1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultSettings()
			tc.edit(&s)
			if err := (Config{Settings: s}).Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}

func TestEachPartSwitchable(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Settings.DreamerEnabled, c.Settings.DanceReflectorEnabled, c.Settings.GreeterEnabled = false, false, false
	})
	if len(e.s.consumers) != 0 {
		t.Fatal("disabled parts subscribed")
	}
	e.ingest("d1", "state_changed", map[string]any{"state": "sleep"})
	e.ingest("d1", "dance_ended", map[string]any{"dance": "x"})
	e.ingest("d1", "face_recognized", map[string]any{"identity": "brett"})
	e.clock.Advance(8 * time.Hour)
	e.stop()
	if e.model.Count() != 0 || len(e.says()) != 0 || len(e.s.Pending()) != 0 {
		t.Errorf("disabled parts acted: %d model calls, says %v", e.model.Count(), e.says())
	}
	if _, err := os.Stat(e.state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("disabled greeter touched its state file: %v", err)
	}
}

// panicky wraps the perception service; its device table panics once when
// armed, inside the dreamer's handler.
type panicky struct {
	*perception.Service
	mu    sync.Mutex
	armed bool
}

func (p *panicky) States() *perception.States {
	p.mu.Lock()
	armed := p.armed
	p.armed = false
	p.mu.Unlock()
	if armed {
		panic("device table broke")
	}
	return p.Service.States()
}

type panicNarrator struct{}

func (panicNarrator) Complete(context.Context, string, string, int, float64) (string, error) {
	panic("model client broke")
}

func TestPanicsSurvived(t *testing.T) {
	var pp *panicky
	e := newEnv(t, func(c *Config) {
		pp = &panicky{Service: c.Perception.(*perception.Service)}
		c.Perception = pp
	})
	// A panic in a handler: logged, and the next event is handled.
	pp.mu.Lock()
	pp.armed = true
	pp.mu.Unlock()
	e.ingest("d1", "state_changed", map[string]any{"state": "sleep"})
	e.logged("consumer panicked", 1)
	e.ingest("d2", "state_changed", map[string]any{"state": "sleep"})
	testkit.WaitFor(t, wait, "d2's dreams", func() bool { return e.s.Pending()["d2"] == 3 })

	// A panic in a greeting task: logged, its device freed, the next greeting spoken.
	e.agent.set(func(context.Context, string) (string, error) { panic("agent broke") })
	e.ingest("d3", "face_recognized", map[string]any{"identity": "brett"})
	e.logged("consumer panicked", 2)
	e.idle()
	e.agent.set(nil)
	e.ingest("d3", "face_recognized", map[string]any{"identity": "hudson"})
	if got := e.waitSays(1); got[0] != "d3: Hello there!" {
		t.Errorf("says %v", got)
	}

	// A panicking calendar or kid-mode switch costs the greeting nothing.
	e.cal.mu.Lock()
	e.cal.panics = true
	e.cal.mu.Unlock()
	e.cfg.KidMode = func() bool { panic("mode file broke") }
	e.restart()
	e.agent.set(func(context.Context, string) (string, error) { return "😊 Hi Brett!", nil })
	e.clock.Advance(24 * time.Hour)
	e.ingest("d3", "face_recognized", map[string]any{"identity": "brett"})
	if got := e.waitSays(2); got[1] != "d3: Hi Brett!" {
		t.Errorf("says %v (a failing kid-mode switch counts as on)", got)
	}

	// A panic in a dream task.
	e.cfg.Narrator = panicNarrator{}
	e.restart()
	e.ingest("d4", "dance_ended", nil)
	e.logged("consumer panicked", 3)
	e.idle()
}

func TestRunStopsWithCallsInFlight(t *testing.T) {
	e := newEnv(t, nil)
	e.model.Set(llmtest.Reply{Block: true})
	release := make(chan struct{})
	e.agent.set(func(ctx context.Context, _ string) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-release:
			return "late", nil
		}
	})
	defer close(release)
	e.ingest("d1", "state_changed", map[string]any{"state": "sleep"})
	testkit.WaitFor(t, wait, "dreams scheduled", func() bool { return e.s.Pending()["d1"] == 3 })
	e.clock.Advance(2 * time.Hour)
	e.ingest("d2", "dance_ended", nil)
	e.ingest("d3", "face_recognized", map[string]any{"identity": "brett"})
	testkit.WaitFor(t, wait, "the model calls", func() bool { return e.model.Count() == 2 })
	testkit.Recv(t, wait, e.agent.called, "agent not called")
	// The model and agent calls are held until the test ends: stop
	// returning at all (it fails after wait) shows Run did not wait for
	// them; how soon is printed.
	start := time.Now()
	e.stop()
	t.Logf("Run returned %s after its ctx ended", time.Since(start).Round(time.Millisecond))
	if len(e.says()) != 0 || len(e.lines("convo-2026-05-17.ndjson")) != 0 || len(e.lines("dreams-2026-05-17.ndjson")) != 0 {
		t.Errorf("a cancelled call was recorded: says %v", e.says())
	}
	if len(e.s.Pending()) != 0 {
		t.Errorf("timers left: %v", e.s.Pending())
	}
	// Timers stopped at shutdown never fire.
	e.clock.Advance(8 * time.Hour)
	if e.model.Count() != 2 {
		t.Errorf("%d model calls after shutdown", e.model.Count())
	}
}
