package fakegws

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/periphery"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestMain doubles as gws: the periphery test points GWS_BIN at the test
// binary, as the simulator points it at itself.
func TestMain(m *testing.M) {
	if Handles(os.Args[1:]) {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
	}
	// The race runtime sleeps 1 s before a clean exit; the gws children
	// inherit this and exit at once.
	_ = os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// london's DST change is at 01:00 on Sunday 2026-03-29: that day has 23 hours.
var london = testkit.Zone("Europe/London")

func at(day, hour, minute int) time.Time {
	return time.Date(2026, 3, day, hour, minute, 0, 0, london)
}

// weekEvents straddle the DST day's edges.
func weekEvents() []Event {
	return []Event{
		{Summary: "[Alex] Late swim", Start: at(28, 23, 30), End: at(29, 0, 30)},
		{Summary: "[Alex] Swimming", Start: at(29, 9, 30), End: at(29, 10, 30)},
		{Summary: "Bin night", Start: at(29, 0, 0), End: at(30, 0, 0), AllDay: true},
		{Summary: "[Sam] Piano", Start: at(29, 16, 15), End: at(29, 17, 0)},
		{Summary: "School pickup", Start: at(29, 0, 0).Add(time.Hour), End: at(29, 3, 0)}, // 02:00 BST, the first hour after the jump
		{Summary: "[Mia] Football", Start: at(30, 0, 0), End: at(30, 1, 0)},
		{Summary: "Dentist", Start: at(29, 11, 0)},                          // no End
		{Summary: "Clocks went forward", Start: at(29, 0, 0), AllDay: true}, // no End
	}
}

func encode(t *testing.T, p map[string]any) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func dayParams(t *testing.T, extra map[string]any) string {
	p := map[string]any{
		"calendarId": "family", "timeMin": at(29, 0, 0).Format(time.RFC3339),
		"timeMax": at(30, 0, 0).Format(time.RFC3339), "singleEvents": true, "orderBy": "startTime", "maxResults": 50,
	}
	for k, v := range extra {
		if v == nil {
			delete(p, k)
		} else {
			p[k] = v
		}
	}
	return encode(t, p)
}

func TestHandles(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"calendar", "events", "list", "--params", "{}"}, true},
		{[]string{"calendar", "events", "list"}, true},
		{[]string{"calendar", "events"}, false},
		{[]string{"calendar", "events", "insert"}, false},
		{[]string{"demo-agent"}, false},
		{nil, false},
	} {
		if got := Handles(c.args); got != c.want {
			t.Errorf("Handles(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestRunAnswersTheWindow(t *testing.T) {
	var out bytes.Buffer
	args := []string{"calendar", "events", "list", "--params", dayParams(t, nil)}
	if err := Run(args, &out, weekEvents()); err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Items []struct {
			Status, Summary string
			Start, End      map[string]string
		}
	}
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		t.Fatalf("answer %q: %v", out.String(), err)
	}
	var got []string
	for _, it := range ans.Items {
		if it.Status != "confirmed" {
			t.Errorf("%s: status %q", it.Summary, it.Status)
		}
		got = append(got, it.Summary+" "+it.Start["date"]+it.Start["dateTime"]+" "+it.End["date"]+it.End["dateTime"])
	}
	want := []string{
		"Bin night 2026-03-29 2026-03-30",
		"Clocks went forward 2026-03-29 2026-03-30",
		"School pickup 2026-03-29T02:00:00+01:00 2026-03-29T03:00:00+01:00",
		"[Alex] Swimming 2026-03-29T09:30:00+01:00 2026-03-29T10:30:00+01:00",
		"Dentist 2026-03-29T11:00:00+01:00 2026-03-29T11:00:00+01:00",
		"[Sam] Piano 2026-03-29T16:15:00+01:00 2026-03-29T17:00:00+01:00",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("items (-got +want):\n%s", diff)
	}
}

func TestRunMaxResultsAndEmpty(t *testing.T) {
	var out bytes.Buffer
	args := []string{"calendar", "events", "list", "--params", dayParams(t, map[string]any{"maxResults": 2})}
	if err := Run(args, &out, weekEvents()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), `"summary"`); n != 2 {
		t.Errorf("maxResults 2 gave %d items: %s", n, out.String())
	}
	out.Reset()
	if err := Run(args, &out, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != `{"kind":"calendar#events","items":[]}` {
		t.Errorf("no events: %s", got)
	}
}

func TestRunRefusesMalformedCalls(t *testing.T) {
	list := []string{"calendar", "events", "list"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no params", list, "usage"},
		{"another flag", append(list[:3:3], "--json", "{}"), "usage"},
		{"extra argument", append(list[:3:3], "--params", "{}", "x"), "usage"},
		{"not json", append(list[:3:3], "--params", "{calendarId"), "--params"},
		{"no calendar", append(list[:3:3], "--params", dayParams(t, map[string]any{"calendarId": nil})), "calendarId"},
		{"no timeMin", append(list[:3:3], "--params", dayParams(t, map[string]any{"timeMin": nil})), "timeMin"},
		{"bad timeMax", append(list[:3:3], "--params", dayParams(t, map[string]any{"timeMax": "tomorrow"})), "timeMax"},
		{"empty window", append(list[:3:3], "--params", dayParams(t, map[string]any{"timeMax": at(29, 0, 0).Format(time.RFC3339)})), "not after timeMin"},
		{"zero results", append(list[:3:3], "--params", dayParams(t, map[string]any{"maxResults": 0})), "maxResults"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Run(c.args, &out, weekEvents())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run(%q) = %v, want an error naming %q", c.args, err, c.want)
			}
			if out.Len() != 0 {
				t.Errorf("a refused call wrote %q", out.String())
			}
		})
	}
}

func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim", "events.json")
	if err := Save(path, weekEvents()); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, weekEvents(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("loaded events (-got +want):\n%s", diff)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"summary":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("bad file: %v", err)
	}
}

func TestMainStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.json")
	if err := Save(path, weekEvents()); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EventsEnv {
				return v
			}
			return ""
		}
	}
	args := []string{"calendar", "events", "list", "--params", dayParams(t, nil)}
	var out, errOut bytes.Buffer
	if code := Main(args, &out, &errOut, env(path)); code != 0 || !strings.Contains(out.String(), "[Sam] Piano") {
		t.Errorf("Main = %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	for _, c := range []struct {
		name, path string
		args       []string
		want       string
	}{
		{"unset", "", args, EventsEnv},
		{"missing file", filepath.Join(t.TempDir(), "none.json"), args, "none.json"},
		{"bad params", path, []string{"calendar", "events", "list", "--params", "["}, "--params"},
	} {
		out.Reset()
		errOut.Reset()
		if code := Main(c.args, &out, &errOut, env(c.path)); code != 1 || !strings.Contains(errOut.String(), c.want) || out.Len() != 0 {
			t.Errorf("%s: Main = %d, stdout %q, stderr %q; want 1 and %q", c.name, code, out.String(), errOut.String(), c.want)
		}
	}
}

// TestBridgeCalendarReadsTheFake runs the bridge's real calendar refresher
// with this test binary as its gws, on the DST day: it sees exactly that
// day's events, with the person tags split off.
func TestBridgeCalendarReadsTheFake(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.json")
	if err := Save(path, weekEvents()); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EventsEnv, path)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := periphery.DefaultConfig()
	cfg.WeatherLocation = ""
	cfg.CalendarIDs = []string{"family"}
	cfg.GWSBin = self
	cfg.Location = london
	cfg.Clock = clockwork.NewFakeClockAt(at(29, 8, 0))
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := periphery.New(cfg)
	testkit.Run(t, p, 10*time.Second)

	testkit.WaitFor(t, 30*time.Second, "a calendar refresh", func() bool {
		_, fetched, fails := p.CalendarStatus()
		return !fetched.IsZero() || fails > 0
	})
	if date, _, fails := p.CalendarStatus(); date != "2026-03-29" || fails != 0 {
		t.Fatalf("CalendarStatus date %q, failures %d; want 2026-03-29, 0", date, fails)
	}
	want := []string{"all-day Bin night", "all-day Clocks went forward", "02:00 School pickup", "09:30 [Alex] Swimming",
		"11:00 Dentist", "16:15 [Sam] Piano"}
	if diff := cmp.Diff(p.Today("", true), want); diff != "" {
		t.Errorf("Today (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(p.Today("alex", false), []string{"09:30 Swimming"}); diff != "" {
		t.Errorf("Alex's day (-got +want):\n%s", diff)
	}
}
