package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func london(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestRosterHasAKidAndAdults(t *testing.T) {
	r, err := parseRoster(householdYAML)
	if err != nil {
		t.Fatal(err)
	}
	if len(r) < 3 || len(r) > 4 {
		t.Fatalf("roster of %d people, want 3–4", len(r))
	}
	if k, ok := r.kid(); !ok || k.ID != "mia" {
		t.Fatalf("kid = %+v, %v; want mia", k, ok)
	}
	if len(r.adults()) != len(r)-1 {
		t.Fatalf("adults %+v", r.adults())
	}
	if _, err := parseRoster([]byte("people: {}\n")); err == nil {
		t.Fatal("an empty roster was accepted")
	}
}

// TestScriptIsDeterministicAndCoversTheWeek: one seed, one script; the
// week has every kind of step, in order, each day's wake-up and bedtime,
// security only on school days, and one model change.
func TestScriptIsDeterministicAndCoversTheWeek(t *testing.T) {
	loc := london(t)
	r, err := parseRoster(householdYAML)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 26, 0, 0, 0, 0, loc)
	a, b := script(r, start, 7, 1), script(r, start, 7, 1)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two scripts of one seed differ")
	}
	if reflect.DeepEqual(a, script(r, start, 7, 2)) {
		t.Fatal("two seeds gave one script")
	}
	kinds := map[Kind]int{}
	security := map[string]bool{}
	for i, s := range a {
		if i > 0 && s.At.Before(a[i-1].At) {
			t.Fatalf("step %d (%v) before step %d (%v)", i, s, i-1, a[i-1])
		}
		if s.At.Before(start) || !s.At.Before(time.Date(2026, 4, 2, 0, 0, 0, 0, loc)) {
			t.Fatalf("step %v outside the week", s)
		}
		kinds[s.Kind]++
		if s.Kind == KindState && s.Text == StateSecurity {
			security[s.At.Format(time.DateOnly)] = true
		}
	}
	for _, k := range []Kind{KindFace, KindFaceSeen, KindFaceLost, KindState, KindTurn, KindStream, KindStory, KindDance, KindKidMode,
		KindRememberPerson, KindApprove, KindRemember, KindKillAgent, KindModel, KindLANEvent, KindRoomView, KindRoster} {
		if kinds[k] == 0 {
			t.Errorf("no %s step in the week", k)
		}
	}
	if kinds[KindModel] != 1 || kinds[KindKillAgent] != 7 || kinds[KindStory] != 7 {
		t.Errorf("model %d, kills %d, stories %d; want 1, 7, 7", kinds[KindModel], kinds[KindKillAgent], kinds[KindStory])
	}
	// Thu, Fri, Mon, Tue, Wed are school days; Sat 28 and Sun 29 (the DST day) are not.
	want := map[string]bool{"2026-03-26": true, "2026-03-27": true, "2026-03-30": true, "2026-03-31": true, "2026-04-01": true}
	if !reflect.DeepEqual(security, want) {
		t.Errorf("security days %v, want %v", security, want)
	}
	if kinds[KindFaceLost] != kinds[KindFace]+kinds[KindFaceSeen] {
		t.Errorf("%d faces lost of %d seen", kinds[KindFaceLost], kinds[KindFace]+kinds[KindFaceSeen])
	}
	canaries := 0
	for _, s := range a {
		if strings.Contains(s.Text, "\n"+Canary) {
			canaries++
		}
	}
	if canaries != 4 {
		t.Errorf("%d steps plant a canary, want 4 (a LAN event, a memory fact, a kid's fact, a dance's name)", canaries)
	}
}

// TestScriptDSTDay: on Sun 29 March the wake-up is at 06:30 BST, 23 hours
// after Saturday's wake-up.
func TestScriptDSTDay(t *testing.T) {
	loc := london(t)
	r, _ := parseRoster(householdYAML)
	steps := script(r, time.Date(2026, 3, 28, 0, 0, 0, 0, loc), 2, 1)
	var wakes []time.Time
	for _, s := range steps {
		if s.Kind == KindState && s.Device == robots[3].Device && s.Text == StateIdle {
			wakes = append(wakes, s.At)
		}
	}
	if len(wakes) != 2 || wakes[1].Sub(wakes[0]) != 23*time.Hour {
		t.Fatalf("wake-ups %v, want two 23 h apart", wakes)
	}
	if wakes[1].In(loc).Hour() != 6 || wakes[1].In(loc).Minute() != 30 {
		t.Fatalf("DST wake-up at %v", wakes[1].In(loc))
	}
}

func TestTimelineAndStateAt(t *testing.T) {
	loc := london(t)
	start := time.Date(2026, 3, 26, 0, 0, 0, 0, loc)
	end := start.Add(24 * time.Hour)
	dev := robots[1].Device
	steps := []Step{
		{At: start.Add(8 * time.Hour), Kind: KindState, Device: dev, Text: StateSecurity},
		{At: start.Add(9 * time.Hour), Kind: KindState, Device: dev, Text: StateSecurity},
		{At: start.Add(15 * time.Hour), Kind: KindState, Device: dev, Text: StateIdle},
		{At: start.Add(17 * time.Hour), Kind: KindStory, Text: "a dragon"},
	}
	tl := timeline(steps, start, end)
	if got := stateAt(tl[robots[0].Device], start.Add(18*time.Hour)); got != StateStory {
		t.Errorf("the first robot after a story is %q, want %q", got, StateStory)
	}
	if got := len(tl[dev]); got != 3 {
		t.Fatalf("spans %+v, want 3", tl[dev])
	}
	for h, want := range map[int]string{1: StateIdle, 8: StateSecurity, 14: StateSecurity, 15: StateIdle} {
		if got := stateAt(tl[dev], start.Add(time.Duration(h)*time.Hour)); got != want {
			t.Errorf("state at %d h = %q, want %q", h, got, want)
		}
	}
	if got := stateAt(tl[dev], end.Add(time.Hour)); got != "" {
		t.Errorf("state after the end = %q", got)
	}
}

func TestKidSpans(t *testing.T) {
	loc := london(t)
	day := time.Date(2026, 3, 29, 0, 0, 0, 0, loc)
	at := func(h int) time.Time { return time.Date(2026, 3, 29, h, 0, 0, 0, loc) }
	end := day.AddDate(0, 0, 1)
	spans := kidSpans([]Step{
		{At: at(9), Kind: KindKidMode, Text: "on"},
		{At: at(10), Kind: KindKidMode, Text: "on"}, // already on
		{At: at(12), Kind: KindKidMode, Text: "off"},
		{At: at(13), Kind: KindKidMode, Text: "off"}, // already off
		{At: at(20), Kind: KindKidMode, Text: "on"},  // on to the end
	}, end)
	if len(spans) != 2 || !spans[0].From.Equal(at(9)) || !spans[0].To.Equal(at(12)) || !spans[1].From.Equal(at(20)) || !spans[1].To.Equal(end) {
		t.Fatalf("kidSpans = %v", spans)
	}
	for _, c := range []struct {
		t        time.Time
		on, sure bool
		whyWrong string
	}{
		{at(8), false, true, "before"},
		{at(11), true, true, "inside"},
		{at(12).Add(30 * time.Second), false, false, "just after the switch off"},
		{at(9).Add(-30 * time.Second), false, false, "just before the switch on"},
		{at(15), false, true, "between"},
		{at(23), true, true, "the last span"},
	} {
		if on, sure := kidModeAt(spans, c.t, kidToggleMargin); on != c.on || sure != c.sure {
			t.Errorf("%s: kidModeAt = %v, %v; want %v, %v", c.whyWrong, on, sure, c.on, c.sure)
		}
	}
}
