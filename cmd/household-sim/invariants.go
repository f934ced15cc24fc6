package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Event is something the bridge did, read back from what it wrote or
// sent: when, on which robot, for whom.
type Event struct {
	At     time.Time
	Device string
	Person string
}

// checkInState returns a problem for each of what's events that happened
// while its robot was not in state want by tl; an event of no robot (a
// dream: they are the household's) while no robot was. An event up to
// grace after the robot left the state is allowed: its work began inside
// it.
func checkInState(what string, events []Event, tl map[string][]Span, want string, grace time.Duration) []string {
	var out []string
	for _, e := range events {
		if e.Device == "" {
			if !anyIn(tl, e.At, want, grace) {
				out = append(out, fmt.Sprintf("%s at %s while no robot was %q", what, stamp(e.At), want))
			}
			continue
		}
		spans, ok := tl[e.Device]
		if !ok {
			out = append(out, fmt.Sprintf("%s at %s on unknown robot %q", what, stamp(e.At), e.Device))
			continue
		}
		if stateAt(spans, e.At) == want || stateAt(spans, e.At.Add(-grace)) == want {
			continue
		}
		out = append(out, fmt.Sprintf("%s at %s on %s while it was %q, not %q", what, stamp(e.At), e.Device, stateAt(spans, e.At), want))
	}
	return out
}

// anyIn reports whether some robot of tl was in state at t or grace before.
func anyIn(tl map[string][]Span, t time.Time, state string, grace time.Duration) bool {
	for _, spans := range tl {
		if stateAt(spans, t) == state || stateAt(spans, t.Add(-grace)) == state {
			return true
		}
	}
	return false
}

// checkGreetings returns a problem for each person greeted more than
// perDay times on one local day, and for each greeting closer than
// cooldown to that person's previous one.
func checkGreetings(greetings []Event, perDay int, cooldown time.Duration, loc *time.Location) []string {
	var out []string
	sorted := append([]Event(nil), greetings...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At.Before(sorted[j].At) })
	count := map[string]int{}
	last := map[string]time.Time{}
	for _, g := range sorted {
		key := g.Person + " " + g.At.In(loc).Format(time.DateOnly)
		if count[key]++; count[key] == perDay+1 {
			out = append(out, fmt.Sprintf("%s greeted more than %d times on %s", g.Person, perDay, g.At.In(loc).Format(time.DateOnly)))
		}
		if prev, ok := last[g.Person]; ok && g.At.Sub(prev) < cooldown {
			out = append(out, fmt.Sprintf("%s greeted at %s, %v after the last greeting (cooldown %v)", g.Person, stamp(g.At), g.At.Sub(prev), cooldown))
		}
		last[g.Person] = g.At
	}
	return out
}

// checkHours returns a problem for each of what's events outside the
// local hours [from, to).
func checkHours(what string, events []Event, from, to int, loc *time.Location) []string {
	var out []string
	for _, e := range events {
		if h := e.At.In(loc).Hour(); h < from || h >= to {
			out = append(out, fmt.Sprintf("%s at %s on %s, outside %02d:00–%02d:00", what, stamp(e.At.In(loc)), e.Device, from, to))
		}
	}
	return out
}

// checkDated returns a problem for each record of a daily file (kind,
// date) whose time is not on that local date: the files did not roll over
// at local midnight.
func checkDated(kind, date string, stamps []time.Time, loc *time.Location) []string {
	var out []string
	for _, t := range stamps {
		if d := t.In(loc).Format(time.DateOnly); d != date {
			out = append(out, fmt.Sprintf("%s-%s.ndjson holds a record of %s (%s)", kind, date, d, stamp(t.In(loc))))
		}
	}
	return out
}

// checkGreeterState returns a problem unless the greeter's state file is
// of today and within the daily cap.
func checkGreeterState(date string, counts map[string]int, today string, perDay int) []string {
	var out []string
	if date != today {
		out = append(out, fmt.Sprintf("greeter_state.json is of %q on %s", date, today))
	}
	for _, who := range slices.Sorted(maps.Keys(counts)) {
		if counts[who] > perDay {
			out = append(out, fmt.Sprintf("greeter_state.json counts %d greetings of %s (cap %d)", counts[who], who, perDay))
		}
	}
	return out
}

// checkTurnFailures returns a problem for each failed turn outside every
// window the script caused (an agent killed).
func checkTurnFailures(failed []Event, caused []Span) []string {
	var out []string
	for _, f := range failed {
		ok := false
		for _, w := range caused {
			if !f.At.Before(w.From) && f.At.Before(w.To) {
				ok = true
				break
			}
		}
		if !ok {
			where := ""
			if f.Device != "" {
				where = " on " + f.Device
			}
			out = append(out, fmt.Sprintf("a turn failed at %s%s, not after an agent kill", stamp(f.At), where))
		}
	}
	return out
}

// Write is a memory write the bridge acknowledged: Key is the brain.db
// key the fact must end under, or a prefix of it ("": any).
type Write struct{ Key, Content string }

// checkMemories returns a problem for each acknowledged write whose
// content is not in stored (brain.db's content → key) under its key.
func checkMemories(acked []Write, stored map[string]string) []string {
	var out []string
	for _, w := range acked {
		key, ok := stored[w.Content]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("acknowledged memory %q is not in brain.db", w.Content))
		case !strings.HasPrefix(key, w.Key):
			out = append(out, fmt.Sprintf("memory %q is under %q, not under %q", w.Content, key, w.Key))
		}
	}
	return out
}

// neutralCanary is the canary as the prompt-safety function writes its
// brackets.
var neutralCanary = strings.NewReplacer("[", "(", "]", ")").Replace(Canary)

// checkPromptLines returns a problem for each prompt line that begins
// with the canary, its brackets kept or made parentheses: outside text
// that broke out of its line.
func checkPromptLines(where string, lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, Canary) || strings.HasPrefix(l, neutralCanary) {
			out = append(out, fmt.Sprintf("a line of the %s's prompt starts with planted outside text: %q", where, l))
		}
	}
	return out
}

// checkDayBytes returns a problem for each day whose bytes exceed limit.
func checkDayBytes(what string, perDay map[string]int64, limit int64) []string {
	var out []string
	for _, d := range slices.Sorted(maps.Keys(perDay)) {
		if perDay[d] > limit {
			out = append(out, fmt.Sprintf("%s of %s is %d bytes, over %d", what, d, perDay[d], limit))
		}
	}
	return out
}

// stamp is t as the report prints it.
func stamp(t time.Time) string { return t.Format("2006-01-02 15:04:05 MST") }

// Journal is what the journal card (GET /api/journal/today) shows: its
// local date and the times of its dreams, dances and greetings.
type Journal struct {
	Date   string
	Stamps []time.Time
}

// checkJournal returns a problem unless the journal is of today and holds
// nothing of another local day: it rolled over at local midnight.
func checkJournal(j Journal, today string, loc *time.Location) []string {
	if j.Date != today {
		return []string{fmt.Sprintf("the journal card is of %q on %s", j.Date, today)}
	}
	return checkDated("journal card", today, j.Stamps, loc)
}
