package main

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// The bridge's defaults the positive checks rely on (docs/configuration.md).
const (
	dreamWindow = 8 * time.Hour // DREAM_WINDOW_SECONDS
	dreamCount  = 3             // DREAM_COUNT_PER_NIGHT
	// minCaptureRate is the slowest a security watch may run: one
	// capture a minute (a cycle is its 20 s pause plus the photo and
	// sound round trips).
	minCaptureRate = time.Minute
	// firedMargin keeps a scheduled behaviour that falls this close to a
	// state change or the end of the run out of the count: whether it
	// fired then depends on which came first.
	firedMargin = 10 * time.Minute
	// idleOwed is how long a robot stands idle in a day before an idle
	// photo of it is owed: the photographer takes the idle robots in
	// turn, one every 3 to 5 minutes.
	idleOwed = 2 * time.Hour
)

// fired is what the bridge did on one local day that the script's
// conditions call for.
type fired struct {
	greeted         map[string]bool        // people the proactive greeter greeted
	his             int                    // the face greeter's "Hi!"
	stories, dances int                    // from the dashboard
	idlePhotos      map[string]int         // kept by the idle photographer, per robot
	kidPhotos       int                    // photos described with the kid-mode prompt
	security        map[string][]time.Time // captures per robot
}

// checkFired returns a problem for each behaviour that did not fire on
// date although the script gave it its conditions: everyone seen between
// faceGreetFrom and faceGreetTo is greeted (the day's first sighting is
// hours after the last greeting of the day before); a photo is described
// for a child while kid mode is on for an hour or more; a face seen in those
// hours, outside the appearances windows (the room view greets then),
// gets the face greeter's "Hi!"; every story and dance asked for is
// told and reflected on; a robot idle for two hours or more is photographed; a security watch of
// ten minutes or more captures at least once a minute.
func checkFired(date string, steps []Step, tl map[string][]Span, got fired, loc *time.Location) []string {
	var out []string
	var wantHi bool
	seen := map[string]bool{}
	var stories, dances int
	appearances := false
	for _, s := range steps {
		if s.Kind == KindRoster {
			appearances = s.Text == "appearances"
		}
		local := s.At.In(loc)
		if local.Format(time.DateOnly) != date {
			continue
		}
		inHours := local.Hour() >= faceGreetFrom && local.Hour() < faceGreetTo
		switch s.Kind {
		case KindFace:
			if inHours {
				seen[s.Person] = true
			}
		case KindFaceSeen:
			wantHi = wantHi || inHours && !appearances
		case KindStory:
			stories++
		case KindDance, KindDanceEnd:
			dances++
		}
	}
	for _, who := range slices.Sorted(maps.Keys(seen)) {
		if !got.greeted[who] {
			out = append(out, fmt.Sprintf("%s was seen on %s between %02d:00 and %02d:00 but never greeted", who, date, faceGreetFrom, faceGreetTo))
		}
	}
	if wantHi && got.his == 0 {
		out = append(out, fmt.Sprintf("faces were seen on %s in the face greeter's hours but it never said %q", date, faceGreetText))
	}
	if got.stories != stories || got.dances != dances {
		out = append(out, fmt.Sprintf("on %s the dashboard asked for %d stories and %d dances; %d were told and %d reflected on",
			date, stories, dances, got.stories, got.dances))
	}
	dayStart, _ := time.ParseInLocation(time.DateOnly, date, loc)
	dayEnd := time.Date(dayStart.Year(), dayStart.Month(), dayStart.Day()+1, 0, 0, 0, 0, loc)
	for _, dev := range slices.Sorted(maps.Keys(tl)) {
		var idle time.Duration
		for _, sp := range tl[dev] {
			from, to := later(sp.From, dayStart), earlier(sp.To, dayEnd)
			switch {
			case !to.After(from):
			case sp.State == StateIdle:
				idle += to.Sub(from)
			case sp.State == StateSecurity && to.Sub(from) >= firedMargin:
				n := 0
				for _, c := range got.security[dev] {
					if !c.Before(from) && c.Before(to) {
						n++
					}
				}
				if want := int(to.Sub(from) / minCaptureRate); n < want {
					out = append(out, fmt.Sprintf("%s watched from %s to %s made %d security captures, fewer than one a minute (%d)",
						dev, stamp(from), stamp(to), n, want))
				}
			}
		}
		if idle >= idleOwed && got.idlePhotos[dev] == 0 {
			out = append(out, fmt.Sprintf("%s stood idle for %v on %s but no idle photo of it was kept", dev, idle, date))
		}
	}
	var kidOn time.Duration
	for _, sp := range kidSpans(steps, dayEnd) {
		if from, to := later(sp.From, dayStart), earlier(sp.To, dayEnd); to.After(from) {
			kidOn += to.Sub(from)
		}
	}
	if kidOn >= time.Hour && got.kidPhotos == 0 {
		out = append(out, fmt.Sprintf("kid mode was on for %v on %s but no photo was described with the kid-mode prompt", kidOn, date))
	}
	return out
}

// expectedDreams is how many dreams the sleep spans of tl call for up
// to end: dreamCount a night, spread over dreamWindow, each only if its
// robot still sleeps then. A dream due within firedMargin of its wake or
// of end is uncertain: it is counted in neither bound.
func expectedDreams(tl map[string][]Span, end time.Time) (least, most int) {
	for _, spans := range tl {
		for _, sp := range spans {
			if sp.State != StateSleep {
				continue
			}
			for i := 1; i <= dreamCount; i++ {
				due := sp.From.Add(time.Duration(i) * dreamWindow / (dreamCount + 1))
				stop := earlier(sp.To, end)
				switch {
				case due.Add(firedMargin).Before(stop):
					least++
					most++
				case due.Add(-firedMargin).Before(stop):
					most++
				}
			}
		}
	}
	return least, most
}

// checkDreams returns a problem unless the dreams recorded lie between
// the least and the most the sleep spans call for.
func checkDreams(got, least, most int) []string {
	if got < least || got > most {
		return []string{fmt.Sprintf("%d dreams were recorded; the nights called for %d to %d", got, least, most)}
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
