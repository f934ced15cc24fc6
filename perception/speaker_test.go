package perception

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

const speakerRoster = `default_person: family
people:
  alex:
    display_name: Alex
    relation: dad
    personality: dry humour
    interests: [cycling, coffee, jazz, chess]
    self_id_phrases: ["it's alex", "alex here"]
    calendar_prefix: "[Alex]"
    usual_times:
      weekdays: [evening, night]
      weekends: [any]
  sam:
    display_name: Sam
    age: 7
    personality: curious
    interests: [dinosaurs, lego]
    self_id_phrases: ["it's sam", "sam here"]
    calendar_prefix: "[Sam]"
    usual_times:
      weekdays: [after-school, early-evening]
      weekends: [morning, afternoon]
  robin:
    display_name: Robin
    relation: aunt
`

// The two descriptions the speaker line carries.
const (
	alexLine = "[Speaking with] Alex — dad; dry humour; loves cycling, coffee, jazz"
	samLine  = "[Speaking with] Sam — 7yo; curious; loves dinosaurs, lego"
)

// tuesday and saturday are local times in Brisbane (no daylight saving).
func tuesday(h, m int) time.Time  { return time.Date(2026, 4, 21, h, m, 0, 0, brisbane) }
func saturday(h, m int) time.Time { return time.Date(2026, 4, 25, h, m, 0, 0, brisbane) }

// fakeCalendar is today's person-tagged events.
type fakeCalendar []calEvent

type calEvent struct {
	person string
	start  time.Time
	allDay bool
}

func (f fakeCalendar) PersonEventsToday(fn func(string, time.Time, bool)) {
	for _, e := range f {
		fn(e.person, e.start, e.allDay)
	}
}

// panickyCalendar breaks the resolver.
type panickyCalendar struct{}

func (panickyCalendar) PersonEventsToday(func(string, time.Time, bool)) { panic("calendar exploded") }

// newSpeakerService is a service on a fake clock at now with roster as its
// household file ("" for none); it runs no consumers.
func newSpeakerService(t *testing.T, now time.Time, roster string, edit func(*Config)) (*Service, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(now)
	cfg := DefaultConfig()
	cfg.Location, cfg.Clock, cfg.Logger = brisbane, clock, hclog.NewNullLogger()
	cfg.Consumers.HouseholdPath = ""
	if roster != "" {
		cfg.Consumers.HouseholdPath = filepath.Join(t.TempDir(), "household.yaml")
		writeFile(t, cfg.Consumers.HouseholdPath, roster)
	}
	if edit != nil {
		edit(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return New(cfg), clock
}

// priorTurn is a request made ago before the case's own.
type priorTurn struct {
	ago    time.Duration
	text   string
	device string
}

// faceSeen is a face_recognized event ago before the case's request.
type faceSeen struct {
	identity string
	ago      time.Duration
	device   string
}

func TestSpeakerBlock(t *testing.T) {
	tests := []struct {
		name    string
		at      time.Time
		prior   []priorTurn
		text    string
		device  string // d1 when empty
		room    string
		cal     fakeCalendar
		faces   []faceSeen
		noisy   int // sound events after the faces
		want    string
		wantAsk bool
	}{
		// Nothing but a greeting at a quiet hour: nobody.
		{name: "no signal", at: tuesday(12, 0), text: "hi there", want: ""},

		// Self-ID.
		{name: "self-ID", at: tuesday(12, 0), text: "It's Alex, what's up?",
			want: alexLine + "  (signals: self_id, conf=0.95)\n"},
		{name: "self-ID after the caller's context", at: tuesday(12, 0),
			text: "[Context] You are Dotty. [User] alex here.\n\n[User] it's sam, hello",
			want: samLine + "  (signals: self_id, conf=0.95)\n"},
		{name: "self-ID mid-sentence is not one", at: tuesday(12, 0), text: "well, it's alex", want: ""},
		{name: "self-ID needs a word boundary", at: tuesday(12, 0), text: "it's samantha", want: ""},
		{name: "self-ID and time of day cap at 1", at: tuesday(21, 0), text: "it's alex",
			want: alexLine + "  (signals: self_id,time_of_day, conf=1.00)\n"},

		// The latch.
		{name: "sticky within the window", at: tuesday(12, 0), prior: []priorTurn{{599 * time.Second, "it's sam", ""}},
			text: "what's for dinner?", want: samLine + "  (signals: sticky, conf=0.70)\n"},
		{name: "sticky at exactly the window", at: tuesday(12, 0), prior: []priorTurn{{600 * time.Second, "it's sam", ""}},
			text: "and now?", want: samLine + "  (signals: sticky, conf=0.70)\n"},
		{name: "sticky after the window", at: tuesday(12, 0), prior: []priorTurn{{601 * time.Second, "it's sam", ""}},
			text: "and now?", want: ""},
		{name: "sticky is per device", at: tuesday(12, 0), prior: []priorTurn{{time.Minute, "it's sam", "d2"}},
			text: "and now?", want: ""},
		{name: "an oversized device id is never latched", at: tuesday(12, 0), device: strings.Repeat("d", MaxDeviceID+1),
			prior: []priorTurn{{time.Minute, "it's sam", ""}}, text: "and now?", want: ""},
		{name: "a self-ID mid-sentence leaves the latch", at: tuesday(12, 0), prior: []priorTurn{{time.Minute, "it's sam", ""}},
			text: "no, it's alex", want: samLine + "  (signals: sticky, conf=0.70)\n"},
		{name: "a new self-ID replaces the latch", at: tuesday(12, 0),
			prior: []priorTurn{{5 * time.Minute, "it's sam", ""}, {time.Minute, "alex here", ""}},
			text:  "so?", want: alexLine + "  (signals: sticky, conf=0.70)\n"},
		{name: "self-ID wins over a latch for another", at: tuesday(12, 0), prior: []priorTurn{{time.Minute, "it's sam", ""}},
			text: "It's Alex now", want: alexLine + "  (signals: self_id, conf=0.95)\n"},

		// The calendar.
		{name: "calendar event now", at: tuesday(12, 0), cal: fakeCalendar{{"Sam", tuesday(12, 0), false}},
			want: samLine + "  (signals: calendar, conf=0.25)\n", wantAsk: true},
		{name: "calendar event in 15 minutes", at: tuesday(12, 0), cal: fakeCalendar{{"sam", tuesday(12, 15), false}},
			want: samLine + "  (signals: calendar, conf=0.19)\n", wantAsk: true},
		{name: "calendar event 15 minutes ago", at: tuesday(12, 0), cal: fakeCalendar{{"[Sam]", tuesday(11, 45), false}},
			want: samLine + "  (signals: calendar, conf=0.19)\n", wantAsk: true},
		{name: "calendar event at the window's edge", at: tuesday(12, 0), cal: fakeCalendar{{"Sam", tuesday(12, 30), false}},
			want: samLine + "  (signals: calendar, conf=0.12)\n", wantAsk: true},
		{name: "calendar event beyond the window", at: tuesday(12, 0), cal: fakeCalendar{{"Sam", tuesday(12, 31), false}}, want: ""},
		{name: "calendar all-day event", at: tuesday(12, 0), cal: fakeCalendar{{"Sam", tuesday(0, 0), true}},
			want: samLine + "  (signals: calendar, conf=0.10)\n", wantAsk: true},
		{name: "calendar event without a time", at: tuesday(12, 0), cal: fakeCalendar{{"Sam", time.Time{}, false}},
			want: samLine + "  (signals: calendar, conf=0.10)\n", wantAsk: true},
		{name: "calendar: a person's best event, one vote", at: tuesday(12, 0),
			cal:  fakeCalendar{{"Sam", tuesday(0, 0), true}, {"Sam", tuesday(12, 5), false}, {"Sam", tuesday(11, 50), false}},
			want: samLine + "  (signals: calendar, conf=0.23)\n", wantAsk: true},
		{name: "calendar tag nobody has", at: tuesday(12, 0), cal: fakeCalendar{{"Robin", tuesday(12, 0), false}, {"_household", tuesday(12, 0), false}}, want: ""},

		// Time of day.
		{name: "weekday after school", at: tuesday(16, 0), want: samLine + "  (signals: time_of_day, conf=0.15)\n", wantAsk: true},
		{name: "weekday evening", at: tuesday(21, 59), want: alexLine + "  (signals: time_of_day, conf=0.15)\n", wantAsk: true},
		{name: "night before midnight", at: tuesday(23, 30), want: alexLine + "  (signals: time_of_day, conf=0.15)\n", wantAsk: true},
		{name: "night after midnight", at: tuesday(5, 59), want: alexLine + "  (signals: time_of_day, conf=0.15)\n", wantAsk: true},
		{name: "morning is nobody's on weekdays", at: tuesday(6, 0), want: ""},
		{name: "weekend any against weekend afternoon: a tie goes to the first voted", at: saturday(14, 0),
			want: alexLine + "  (signals: time_of_day, conf=0.15)\n", wantAsk: true},
		{name: "weekend evening: any only", at: saturday(20, 30), want: alexLine + "  (signals: time_of_day, conf=0.15)\n", wantAsk: true},

		// The room view's roster match.
		{name: "room view matched a roster id", at: tuesday(12, 0), room: " SAM ", want: samLine + "  (signals: vlm_match, conf=0.60)\n"},
		{name: "room view matched an unknown id", at: tuesday(12, 0), room: "zed", want: ""},

		// Perception.
		{name: "face recognised just now", at: tuesday(12, 0), faces: []faceSeen{{"Alex", 10 * time.Second, ""}},
			want: alexLine + "  (signals: perception, conf=0.40)\n", wantAsk: true},
		{name: "face recognised at the window's edge", at: tuesday(12, 0), faces: []faceSeen{{"alex", 30 * time.Second, ""}},
			want: alexLine + "  (signals: perception, conf=0.40)\n", wantAsk: true},
		{name: "face recognised too long ago", at: tuesday(12, 0), faces: []faceSeen{{"alex", 31 * time.Second, ""}}, want: ""},
		{name: "face recognised on another device", at: tuesday(12, 0), faces: []faceSeen{{"alex", time.Second, "d2"}}, want: ""},
		{name: "no device, no perception", at: tuesday(12, 0), device: "-", faces: []faceSeen{{"alex", time.Second, ""}}, want: ""},
		{name: "unknown and strangers", at: tuesday(12, 0), faces: []faceSeen{{"unknown", time.Second, ""}, {"zed", time.Second, ""}}, want: ""},
		{name: "one vote per face", at: tuesday(12, 0), faces: []faceSeen{{"sam", 20 * time.Second, ""}, {"Sam", 2 * time.Second, ""}},
			want: samLine + "  (signals: perception, conf=0.40)\n", wantAsk: true},
		{name: "a face pushed out of the ring still counts", at: tuesday(12, 0), faces: []faceSeen{{"sam", 5 * time.Second, ""}}, noisy: 2 * RecentSize,
			want: samLine + "  (signals: perception, conf=0.40)\n", wantAsk: true},

		// Everything at once: the votes are listed in signal order, and the
		// latch for another loses to them.
		{name: "all signals", at: tuesday(16, 0), prior: []priorTurn{{time.Minute, "it's alex", ""}},
			cal: fakeCalendar{{"Sam", tuesday(16, 10), false}}, faces: []faceSeen{{"sam", time.Second, ""}}, room: "sam",
			want: samLine + "  (signals: calendar,time_of_day,perception,vlm_match, conf=1.00)\n"},
		{name: "calendar and room view outweigh a latch for another", at: tuesday(12, 0), prior: []priorTurn{{time.Minute, "it's sam", ""}},
			room: "alex", cal: fakeCalendar{{"Alex", tuesday(12, 0), false}},
			want: alexLine + "  (signals: calendar,vlm_match, conf=0.85)\n"},
		{name: "a tie between equal sums", at: tuesday(12, 0), cal: fakeCalendar{{"Sam", tuesday(12, 0), false}, {"Alex", tuesday(12, 0), false}},
			want: samLine + "  (signals: calendar, conf=0.25)\n", wantAsk: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			device := tc.device
			switch device {
			case "":
				device = "d1"
			case "-":
				device = ""
			}
			slices.SortStableFunc(tc.prior, func(a, b priorTurn) int { return int(b.ago - a.ago) })
			start := tc.at
			if len(tc.prior) > 0 {
				start = tc.at.Add(-tc.prior[0].ago)
			}
			s, clock := newSpeakerService(t, start, speakerRoster, func(c *Config) {
				if tc.cal != nil {
					c.Calendar = tc.cal
				}
			})
			for _, p := range tc.prior {
				clock.Advance(tc.at.Add(-p.ago).Sub(clock.Now()))
				d := p.device
				if d == "" {
					d = device
				}
				s.SpeakerBlock(p.text, "dotty", d, "")
			}
			clock.Advance(tc.at.Sub(clock.Now()))
			for _, f := range tc.faces {
				d := f.device
				if d == "" {
					d = "d1"
				}
				s.Ingest(Event{DeviceID: d, Name: "face_recognized", TS: epochSeconds(tc.at.Add(-f.ago)), Data: DataOf(map[string]any{"identity": f.identity})})
			}
			for i := range tc.noisy {
				s.Ingest(Event{DeviceID: "d1", Name: "sound_event", TS: epochSeconds(tc.at) - float64(i)/100, Data: DataOf(map[string]any{"direction": 0})})
			}

			block, person := s.SpeakerBlock(tc.text, "dotty", device, tc.room)
			if block != tc.want {
				t.Errorf("block:\n got %q\nwant %q", block, tc.want)
			}
			res, err := s.ResolveSpeaker(SpeakerRequest{Text: tc.text, Channel: "dotty", DeviceID: device, RoomMatchPersonID: tc.room})
			if err != nil {
				t.Fatal(err)
			}
			if person != res.PersonID || (person == "") != (block == "") {
				t.Errorf("person %q, block %q, resolution %+v", person, block, res)
			}
			if res.Ask != tc.wantAsk {
				t.Errorf("ask %v, want %v (confidence %v, votes %+v)", res.Ask, tc.wantAsk, res.Confidence, res.Votes)
			}
			if person == "" && res.Addressee != "family" {
				t.Errorf("nobody resolved: addressee %q, want the default person", res.Addressee)
			}
		})
	}
}

// The resolution's detail: runner-up, rounding, addressee.
func TestResolveSpeakerDetail(t *testing.T) {
	s, _ := newSpeakerService(t, tuesday(16, 0), speakerRoster, func(c *Config) {
		c.Calendar = fakeCalendar{{"Alex", tuesday(16, 5), false}}
	})
	res, err := s.ResolveSpeaker(SpeakerRequest{Text: "hi", Channel: "dotty", DeviceID: "d1"})
	if err != nil {
		t.Fatal(err)
	}
	want := SpeakerResolution{PersonID: "alex", Addressee: "Alex", Confidence: 0.229,
		Votes: []SpeakerVote{{SignalCalendar, "alex", weightCalendar * (0.5 + 0.5*(25.0/30))}},
		Ask:   true, RunnerUpID: "sam", RunnerUpScore: 0.15}
	if d := cmp.Diff(res, want, cmpopts.EquateApprox(0, 1e-12)); d != "" {
		t.Errorf("resolution (-got +want):\n%s", d)
	}
}

// A latched person the roster has since lost is named by the addressee,
// their id.
func TestSpeakerBlockPersonLeftRoster(t *testing.T) {
	s, clock := newSpeakerService(t, tuesday(12, 0), speakerRoster, nil)
	if _, person := s.SpeakerBlock("it's alex", "dotty", "d1", ""); person != "alex" {
		t.Fatalf("person %q", person)
	}
	h := s.Household()
	h.mu.Lock()
	h.recheck = 0
	h.mu.Unlock()
	writeFile(t, h.path, "people:\n  sam:\n    display_name: Sam\n")
	clock.Advance(time.Minute)
	block, person := s.SpeakerBlock("hello", "dotty", "d1", "")
	if want := "[Speaking with] alex  (signals: sticky, conf=0.70)\n"; block != want || person != "alex" {
		t.Errorf("block %q person %q, want %q", block, person, want)
	}
}

// Without a roster nobody is ever resolved, and nothing breaks.
func TestSpeakerBlockNoRoster(t *testing.T) {
	s, _ := newSpeakerService(t, tuesday(16, 0), "", func(c *Config) {
		c.Calendar = fakeCalendar{{"Sam", tuesday(16, 0), false}}
	})
	s.Ingest(Event{DeviceID: "d1", Name: "face_recognized", TS: epochSeconds(tuesday(16, 0)), Data: DataOf(map[string]any{"identity": "sam"})})
	if block, person := s.SpeakerBlock("it's sam", "dotty", "d1", "sam"); block != "" || person != "" {
		t.Errorf("block %q person %q", block, person)
	}
	res, _ := s.ResolveSpeaker(SpeakerRequest{Text: "hi"})
	if res.Addressee != DefaultPerson {
		t.Errorf("addressee %q", res.Addressee)
	}
}

// Negative settings turn their signal off.
func TestSpeakerSignalsOff(t *testing.T) {
	s, clock := newSpeakerService(t, tuesday(12, 0), speakerRoster, func(c *Config) {
		c.Calendar = fakeCalendar{{"Sam", tuesday(12, 0), false}}
		c.Speaker = SpeakerConfig{Sticky: -1, CalendarWindow: -1, PerceptionWindow: -1, AskThreshold: -1}
	})
	s.Ingest(Event{DeviceID: "d1", Name: "face_recognized", TS: epochSeconds(tuesday(12, 0)), Data: DataOf(map[string]any{"identity": "sam"})})
	if _, person := s.SpeakerBlock("it's alex", "dotty", "d1", ""); person != "alex" {
		t.Errorf("self-ID still counts: person %q", person)
	}
	clock.Advance(time.Second)
	if block, _ := s.SpeakerBlock("hello", "dotty", "d1", ""); block != "" {
		t.Errorf("block %q, want none: no latch, calendar or perception", block)
	}
	if s.speaker.latches.len() != 0 {
		t.Errorf("%d latches kept with the latch off", s.speaker.latches.len())
	}
}

// A panic while resolving is logged and costs only the line.
func TestSpeakerBlockPanic(t *testing.T) {
	logs := &testkit.LogBuffer{}
	s, _ := newSpeakerService(t, tuesday(12, 0), speakerRoster, func(c *Config) {
		c.Calendar = panickyCalendar{}
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
	})
	if block, person := s.SpeakerBlock("it's alex", "dotty", "d1", ""); block != "" || person != "" {
		t.Errorf("block %q person %q after a panic", block, person)
	}
	if !strings.Contains(logs.String(), "calendar exploded") || !strings.Contains(logs.String(), "[ERROR]") {
		t.Errorf("logs %q: want the panic at error level", logs.String())
	}
}

// Resolutions are logged: Info with a person, Debug without.
func TestSpeakerLogging(t *testing.T) {
	logs := &testkit.LogBuffer{}
	s, _ := newSpeakerService(t, tuesday(12, 0), speakerRoster, func(c *Config) {
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
	})
	s.SpeakerBlock("hi", "dotty", "d1", "")
	s.SpeakerBlock("it's sam", "dotty", "d1", "")
	out := logs.String()
	if !strings.Contains(out, "[DEBUG] speaker unresolved") || !strings.Contains(out, "[INFO]  speaker resolved") ||
		!strings.Contains(out, "person=sam") || !strings.Contains(out, "confidence=0.95") || !strings.Contains(out, "signals=self_id") {
		t.Errorf("logs:\n%s", out)
	}
}

// A flood of callers naming themselves keeps the latch table at its
// bound; the newest latches survive, and expired ones are dropped.
func TestSpeakerLatchFlood(t *testing.T) {
	s, clock := newSpeakerService(t, tuesday(12, 0), speakerRoster, nil)
	for i := range 10000 {
		s.SpeakerBlock("it's sam", fmt.Sprintf("ch%d", i%100), fmt.Sprintf("dev%d", i), "")
		if n := s.speaker.latches.len(); n > DefaultSpeakerMaxLatches {
			t.Fatalf("after %d self-IDs: %d latches, bound %d", i+1, n, DefaultSpeakerMaxLatches)
		}
	}
	if n := s.speaker.latches.len(); n != DefaultSpeakerMaxLatches {
		t.Errorf("%d latches after the flood, want the bound %d", n, DefaultSpeakerMaxLatches)
	}
	if _, person := s.SpeakerBlock("hello", "ch99", "dev9999", ""); person != "sam" {
		t.Errorf("the newest latch is gone: person %q", person)
	}
	if _, person := s.SpeakerBlock("hello", "ch0", "dev0", ""); person != "" {
		t.Errorf("the oldest latch survived the flood: person %q", person)
	}
	clock.Advance(DefaultSpeakerSticky + time.Second)
	s.SpeakerBlock("it's alex", "late", "dev", "")
	if n := s.speaker.latches.len(); n != 1 {
		t.Errorf("%d latches after every other one expired, want 1", n)
	}

	// A smaller bound holds as well.
	s, _ = newSpeakerService(t, tuesday(12, 0), speakerRoster, func(c *Config) { c.Speaker.MaxLatches = 8 })
	for i := range 10000 {
		s.speaker.latches.set(latchKey{"dotty", fmt.Sprint(i)}, "sam", tuesday(12, 0))
	}
	if n := s.speaker.latches.len(); n != 8 {
		t.Errorf("%d latches, want the bound 8", n)
	}
}

// Concurrent turns share the latch table safely (run with -race).
func TestSpeakerConcurrent(t *testing.T) {
	s, _ := newSpeakerService(t, tuesday(12, 0), speakerRoster, nil)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				text := "hello"
				if i%3 == 0 {
					text = "it's alex"
				}
				s.SpeakerBlock(text, "dotty", fmt.Sprintf("d%d-%d", g, i%10), "")
			}
		}()
	}
	for range 8 {
		testkit.Recv(t, 10*time.Second, done, "concurrent resolutions did not finish")
	}
}

func TestSpeakerConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  SpeakerConfig
		want []string
	}{
		{"zero", SpeakerConfig{}, nil},
		{"off", SpeakerConfig{Sticky: -1, CalendarWindow: -1, PerceptionWindow: -1, AskThreshold: -1}, nil},
		{"negative bound", SpeakerConfig{MaxLatches: -1}, []string{"Speaker.MaxLatches -1: want 0 or more"}},
		{"threshold not a number", SpeakerConfig{AskThreshold: math.Inf(1)}, []string{"Speaker.AskThreshold +Inf: want a finite number"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Speaker = tc.cfg
			testkit.CheckFieldErrors(t, "Config", cfg.Validate(), tc.want...)
		})
	}
	if d := cmp.Diff(SpeakerConfig{}.withDefaults(), SpeakerConfig{Sticky: 600 * time.Second, CalendarWindow: 30 * time.Minute,
		PerceptionWindow: 30 * time.Second, AskThreshold: 0.5, MaxLatches: 256}); d != "" {
		t.Errorf("defaults (-got +want):\n%s", d)
	}
}

func TestTimeBucket(t *testing.T) {
	want := map[int]string{0: "night", 5: "night", 6: "morning", 10: "morning", 11: "afternoon", 14: "afternoon",
		15: "after-school", 17: "after-school", 18: "early-evening", 19: "early-evening", 20: "evening", 21: "evening",
		22: "night", 23: "night"}
	for h, b := range want {
		if got := timeBucket(tuesday(h, 30)); got != b {
			t.Errorf("%02d:30 is %q, want %q", h, got, b)
		}
	}
}
