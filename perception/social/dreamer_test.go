package social

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

func TestPromptsExact(t *testing.T) {
	for name, c := range map[string]struct{ got, want string }{
		"dream system": {DreamSystemPrompt, "You are Dotty, a small family robot, asleep. You are dreaming. Write rich, multi-paragraph robot dreams " +
			"in first person, present tense \u2014 perception is strange, time bends, identity is fluid. Draw on the seed's atmosphere " +
			"without retelling it. End with a half-thought, not a wrap. After the dream, on a new line starting with 'SUMMARY:', " +
			"give a 1\u20132 sentence summary suitable for memory."},
		"dream user": {DreamUserPrompt("Dune"), "Tonight's seed: Dune\n\nWrite a dream of 4\u20137 paragraphs as Dotty would dream it.\n"},
		"dance system": {DanceSystemPrompt, "You are Dotty, a small family robot, reflecting privately on a dance you just finished. " +
			"Write 2\u20133 sentences in first person, present tense, internal monologue (not spoken). Capture the joy, the rhythm, " +
			"the silliness. Keep it under 300 characters."},
		"dance user": {DanceUserPrompt("the macarena"), "You just finished dancing to the macarena. How did it feel?"},
	} {
		if c.got != c.want {
			t.Errorf("%s prompt:\n%q\nwant\n%q", name, c.got, c.want)
		}
	}
}

func TestSplitDream(t *testing.T) {
	for _, tc := range []struct{ in, full, summary string }{
		{"Para one.\n\nPara two.\nSUMMARY: A short one.", "Para one.\n\nPara two.", "A short one."},
		{"Para.\n  summary:   lower case.  \n\n", "Para.", "lower case."},
		{"Para.\nSummary: first\nMore.\nSUMMARY: last\ntrailing", "Para.\nSummary: first\nMore.", "last"},
		{"Para.\r\nSUMMARY: crlf", "Para.", "crlf"},
		{"No summary here.\n", "No summary here.", ""},
		{"Para.\nSUMMARY:", "Para.", ""},
		{"SUMMARY: only", "", "only"},
		{"Para.\nSummary line: not one", "Para.\nSummary line: not one", ""},
	} {
		full, summary := SplitDream(tc.in)
		if full != tc.full || summary != tc.summary {
			t.Errorf("SplitDream(%q) = %q, %q; want %q, %q", tc.in, full, summary, tc.full, tc.summary)
		}
	}
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestDreamerNight(t *testing.T) {
	e := newEnv(t, nil)
	e.model.Answer("Para one.\n\nPara \"two\".\nsummary:  A short one. ")
	e.ingest("d1", "state_changed", map[string]any{"state": " Sleep "})
	testkit.WaitFor(t, wait, "dreams scheduled", func() bool { return e.s.Pending()["d1"] == 3 })

	file := "dreams-2026-05-17.ndjson"
	e.clock.Advance(2*time.Hour - time.Second)
	if e.model.Count() != 0 {
		t.Fatal("dreamt early")
	}
	for i := 1; i <= 3; i++ {
		if i == 1 {
			e.clock.Advance(time.Second)
		} else {
			e.clock.Advance(2 * time.Hour)
		}
		lines := e.waitLines(file, i)
		var rec DreamRecord
		if err := json.Unmarshal([]byte(lines[i-1]), &rec); err != nil {
			t.Fatal(err)
		}
		if !hex32.MatchString(rec.DreamID) || !slices.Contains(DreamSeeds[:], rec.Seed) {
			t.Errorf("dream %d: id %q seed %q", i, rec.DreamID, rec.Seed)
		}
		want := fmt.Sprintf(`{"ts":"2026-05-17T%02d:00:00+10:00","type":"dream","dream_id":"%s","seed":%s,"summary":"A short one.","full_text":"Para one.\n\nPara \"two\"."}`+"\n",
			9+2*i, rec.DreamID, quote(rec.Seed))
		if lines[i-1] != want {
			t.Errorf("line %d:\n%s\nwant\n%s", i, lines[i-1], want)
		}
		req := e.model.Request(i - 1).Body
		wantReq := map[string]any{"model": "anthropic/claude-sonnet-4-6", "max_tokens": 1200.0, "temperature": 0.9,
			"messages": []any{map[string]any{"role": "system", "content": DreamSystemPrompt},
				map[string]any{"role": "user", "content": DreamUserPrompt(rec.Seed)}}}
		if d := cmp.Diff(req, wantReq); d != "" {
			t.Errorf("request %d (-got +want):\n%s", i, d)
		}
	}
	if auth := e.model.Request(0).Auth; auth != "Bearer k" {
		t.Errorf("authorization %q", auth)
	}
	if len(e.s.Pending()) != 0 {
		t.Errorf("pending after the night: %v", e.s.Pending())
	}
	e.clock.Advance(8 * time.Hour)
	if e.model.Count() != 3 {
		t.Errorf("%d dreams, want 3", e.model.Count())
	}
	if d := e.s.Today().Dreams; len(d) != 3 || d[0].TS != "2026-05-17T15:00:00+10:00" {
		t.Errorf("journal dreams %+v", d)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestDreamerCancelAndReplace(t *testing.T) {
	e := newEnv(t, nil)
	e.ingest("d1", "state_changed", map[string]any{"state": "sleep"})
	testkit.WaitFor(t, wait, "dreams scheduled", func() bool { return e.s.Pending()["d1"] == 3 })
	e.ingest("d1", "state_changed", map[string]any{"state": "idle"}) // woken
	testkit.WaitFor(t, wait, "dreams cancelled", func() bool { return len(e.s.Pending()) == 0 })
	e.clock.Advance(8 * time.Hour)
	e.logged("dreams cancelled", 1)
	if e.model.Count() != 0 {
		t.Errorf("%d dreams after waking", e.model.Count())
	}

	// A second sleep replaces the pending dreams: the night starts again.
	e.ingest("d1", "state_changed", map[string]any{"state": "sleep"})
	testkit.WaitFor(t, wait, "dreams scheduled", func() bool { return e.s.Pending()["d1"] == 3 })
	e.clock.Advance(time.Hour)
	e.ingest("d1", "state_changed", map[string]any{"state": "SLEEP"})
	e.logged("dreams scheduled", 3)
	e.clock.Advance(time.Hour) // the first night's first dream would be now
	if e.model.Count() != 0 {
		t.Fatal("a replaced dream fired")
	}
	e.clock.Advance(time.Hour)
	testkit.WaitFor(t, wait, "the new night's first dream", func() bool { return e.model.Count() == 1 })
	testkit.WaitFor(t, wait, "two left", func() bool { return e.s.Pending()["d1"] == 2 })

	// Other devices and devices with no real id.
	e.ingest("unknown", "state_changed", map[string]any{"state": "sleep"})
	e.ingest("d2", "state_changed", map[string]any{"state": 5}) // not a string: not sleep
	e.ingest("d3", "state_changed", map[string]any{"state": "sleep"})
	testkit.WaitFor(t, wait, "d3's dreams", func() bool { return e.s.Pending()["d3"] == 3 })
	if d := cmp.Diff(e.s.Pending(), map[string]int{"d1": 2, "d3": 3}); d != "" {
		t.Errorf("pending (-got +want):\n%s", d)
	}
}

func TestDreamerNothingWrittenWithoutText(t *testing.T) {
	for name, setup := range map[string]func(e *env){
		"model fails": func(e *env) { e.model.Set(llmtest.Reply{Status: 502}) },
		"empty text":  func(e *env) { e.model.Answer("  \n ") },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			setup(e)
			e.ingest("d1", "state_changed", map[string]any{"state": "sleep"})
			testkit.WaitFor(t, wait, "dreams scheduled", func() bool { return e.s.Pending()["d1"] == 3 })
			e.clock.Advance(2 * time.Hour)
			e.logged("dream skipped", 1)
			if l := e.lines("dreams-2026-05-17.ndjson"); l != nil {
				t.Errorf("written: %v", l)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		e := newEnv(t, nil)
		e.cfg.Narrator = llm.NewNarrative(llm.NarrativeConfig{URL: e.model.URL + "/v1/chat/completions", Logger: e.cfg.Logger})
		e.restart()
		e.ingest("d1", "state_changed", map[string]any{"state": "sleep"})
		testkit.WaitFor(t, wait, "dreams scheduled", func() bool { return e.s.Pending()["d1"] == 3 })
		e.clock.Advance(2 * time.Hour)
		e.logged("dream skipped", 1)
		if e.model.Count() != 0 || e.lines("dreams-2026-05-17.ndjson") != nil {
			t.Error("no key should ask nothing and write nothing")
		}
	})
}

func TestDreamerForgetsEvictedDevices(t *testing.T) {
	small := func(c *Config) {
		// A device table of two: a third device evicts the least recently seen.
		pc := perception.DefaultConsumers()
		pc.HouseholdPath = ""
		c.Perception = perception.New(perception.Config{Consumers: pc, MaxDevices: 2, Location: brisbane,
			Clock: c.Clock, Logger: hclog.NewNullLogger()})
	}
	t.Run("on fire", func(t *testing.T) {
		e := newEnv(t, small)
		p := e.cfg.Perception.(*perception.Service)
		ingest := func(dev, name string, data map[string]any) {
			p.Ingest(perception.Event{DeviceID: dev, TS: epochSeconds(e.clock.Now()), Name: name, Data: perception.DataOf(data)})
		}
		ingest("d1", "state_changed", map[string]any{"state": "sleep"})
		testkit.WaitFor(t, wait, "dreams scheduled", func() bool { return e.s.Pending()["d1"] == 3 })
		ingest("d2", "face_lost", nil)
		ingest("d3", "face_lost", nil) // d1 is forgotten
		if _, ok := p.States().Get("d1"); ok {
			t.Fatal("d1 not evicted")
		}
		e.clock.Advance(2 * time.Hour)
		e.logged("the device was forgotten", 1)
		testkit.WaitFor(t, wait, "d1's dreams dropped", func() bool { return len(e.s.Pending()) == 0 })
		e.clock.Advance(8 * time.Hour)
		if e.model.Count() != 0 {
			t.Errorf("%d dreams for a forgotten device", e.model.Count())
		}
	})
	t.Run("on schedule", func(t *testing.T) {
		e := newEnv(t, small)
		p := e.cfg.Perception.(*perception.Service)
		ingest := func(dev string) {
			p.Ingest(perception.Event{DeviceID: dev, TS: epochSeconds(e.clock.Now()), Name: "state_changed", Data: perception.DataOf(map[string]any{"state": "sleep"})})
		}
		// Many devices fall asleep in turn: the table never holds more than
		// the device table does, plus the one being scheduled.
		for i := range 10 {
			ingest(fmt.Sprintf("d%d", i))
			testkit.WaitFor(t, wait, "dreams scheduled", func() bool { return e.s.Pending()[fmt.Sprintf("d%d", i)] == 3 })
			if n := len(e.s.Pending()); n > 2 {
				t.Fatalf("%d devices with pending dreams: %v", n, e.s.Pending())
			}
		}
		if d := cmp.Diff(e.s.Pending(), map[string]int{"d8": 3, "d9": 3}); d != "" {
			t.Errorf("pending (-got +want):\n%s", d)
		}
	})
}

func TestDanceReflector(t *testing.T) {
	e := newEnv(t, nil)
	e.model.Answer("  I wiggle, I spin — pure joy.\n")
	e.ingest("d1", "dance_ended", map[string]any{"dance": "  the macarena "})
	file := "dances-2026-05-17.ndjson"
	lines := e.waitLines(file, 1)
	want := `{"ts":"2026-05-17T09:00:00+10:00","type":"dance","device":"d1","dance":"the macarena","reflection":"I wiggle, I spin — pure joy."}` + "\n"
	if d := cmp.Diff(lines, []string{want}); d != "" {
		t.Errorf("lines (-got +want):\n%s", d)
	}
	wantReq := map[string]any{"model": "anthropic/claude-sonnet-4-6", "max_tokens": 200.0, "temperature": 0.85,
		"messages": []any{map[string]any{"role": "system", "content": DanceSystemPrompt},
			map[string]any{"role": "user", "content": "You just finished dancing to the macarena. How did it feel?"}}}
	if d := cmp.Diff(e.model.Request(0).Body, wantReq); d != "" {
		t.Errorf("request (-got +want):\n%s", d)
	}

	// No name (or a blank or odd one) is "the dance"; no real device, nothing.
	e.clock.Advance(time.Minute)
	e.ingest("unknown", "dance_ended", nil)
	e.ingest("", "dance_ended", nil)
	e.ingest("d2", "dance_ended", map[string]any{"dance": "   "})
	lines = e.waitLines(file, 2)
	if !strings.Contains(lines[1], `"device":"d2","dance":"the dance"`) {
		t.Errorf("line 2: %s", lines[1])
	}
	e.ingest("d2", "dance_ended", map[string]any{"dance": 7})
	lines = e.waitLines(file, 3)
	if !strings.Contains(lines[2], `"dance":"the dance"`) || e.model.Count() != 3 {
		t.Errorf("line 3: %s (%d requests)", lines[2], e.model.Count())
	}
	if d := e.s.Today().Dances; len(d) != 3 || d[2].Dance != "the macarena" {
		t.Errorf("journal %+v", d)
	}

	// A failing model writes nothing.
	e.model.Set(llmtest.Reply{Status: 500})
	e.ingest("d1", "dance_ended", nil)
	e.logged("dance reflection skipped", 1)
	e.idle()
	if n := len(e.lines(file)); n != 3 {
		t.Errorf("%d lines after a failure", n)
	}
}

func TestDanceReflectorBounded(t *testing.T) {
	e := newEnv(t, nil)
	e.model.Set(llmtest.Reply{Block: true})
	for i := range maxReflections + 2 {
		e.ingest(fmt.Sprintf("d%d", i), "dance_ended", nil)
	}
	e.logged("too many dance reflections in flight", 2)
	testkit.WaitFor(t, wait, "the calls in flight", func() bool { return e.model.Count() == maxReflections })
	e.stop() // cancels the stalled calls
	if e.lines("dances-2026-05-17.ndjson") != nil {
		t.Error("a cancelled reflection was written")
	}
}
