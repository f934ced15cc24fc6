// Package fakegws answers the one gws command the bridge's calendar runs,
// `gws calendar events list --params <json>`, from a list of events, so
// the household simulator can be its own GWS_BIN. The week's events reach
// the child process through a JSON file named by EventsEnv.
package fakegws

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
)

// EventsEnv names the environment variable holding the events file's path.
const EventsEnv = "SIM_GWS_EVENTS"

// Event is one calendar entry. An all-day event's Start is local midnight
// of its day, in the household's location; it is answered as a date. A
// zero End is the next day for an all-day event, else Start.
type Event struct {
	Summary string    `json:"summary"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	AllDay  bool      `json:"all_day,omitempty"`
}

// params is the part of --params the answer depends on.
type params struct {
	CalendarID string `json:"calendarId"`
	TimeMin    string `json:"timeMin"`
	TimeMax    string `json:"timeMax"`
	MaxResults *int   `json:"maxResults"`
}

// item, when and answer are the Calendar API's events.list shape.
type item struct {
	Status  string `json:"status"`
	Summary string `json:"summary"`
	Start   when   `json:"start"`
	End     when   `json:"end"`
}

type when struct {
	Date     string `json:"date,omitempty"`
	DateTime string `json:"dateTime,omitempty"`
}

type answer struct {
	Kind  string `json:"kind"`
	Items []item `json:"items"`
}

// Handles reports whether args (without the program name) are a
// `calendar events list` command, the only one Run answers.
func Handles(args []string) bool {
	return len(args) >= 3 && args[0] == "calendar" && args[1] == "events" && args[2] == "list"
}

// Run answers `calendar events list --params <json>` on stdout with the
// events whose start is in [timeMin, timeMax), ordered by start and cut to
// maxResults. Arguments or params that gws would refuse are an error, for
// which the caller exits non-zero.
func Run(args []string, stdout io.Writer, events []Event) error {
	if !Handles(args) || len(args) != 5 || args[3] != "--params" {
		return fmt.Errorf("fake gws: usage: calendar events list --params <json>, got %q", args)
	}
	var p params
	if err := json.Unmarshal([]byte(args[4]), &p); err != nil {
		return fmt.Errorf("fake gws: --params: %w", err)
	}
	if p.CalendarID == "" {
		return errors.New("fake gws: --params: calendarId is required")
	}
	lo, err := time.Parse(time.RFC3339, p.TimeMin)
	if err != nil {
		return fmt.Errorf("fake gws: --params: timeMin: %w", err)
	}
	hi, err := time.Parse(time.RFC3339, p.TimeMax)
	if err != nil {
		return fmt.Errorf("fake gws: --params: timeMax: %w", err)
	}
	if !hi.After(lo) {
		return fmt.Errorf("fake gws: --params: timeMax %s is not after timeMin %s", p.TimeMax, p.TimeMin)
	}
	limit := 250 // the Calendar API's default page size
	if p.MaxResults != nil {
		if *p.MaxResults < 1 {
			return fmt.Errorf("fake gws: --params: maxResults %d is not positive", *p.MaxResults)
		}
		limit = *p.MaxResults
	}

	var hit []Event
	for _, e := range events {
		if !e.Start.Before(lo) && e.Start.Before(hi) {
			hit = append(hit, e)
		}
	}
	slices.SortStableFunc(hit, func(a, b Event) int { return a.Start.Compare(b.Start) })
	ans := answer{Kind: "calendar#events", Items: []item{}}
	for _, e := range hit[:min(len(hit), limit)] {
		it := item{Status: "confirmed", Summary: e.Summary}
		end := e.End
		if e.AllDay {
			if end.IsZero() {
				y, m, d := e.Start.Date()
				end = time.Date(y, m, d+1, 0, 0, 0, 0, e.Start.Location())
			}
			it.Start.Date = e.Start.Format(time.DateOnly)
			it.End.Date = end.Format(time.DateOnly)
		} else {
			if end.IsZero() {
				end = e.Start
			}
			it.Start.DateTime = e.Start.Format(time.RFC3339)
			it.End.DateTime = end.Format(time.RFC3339)
		}
		ans.Items = append(ans.Items, it)
	}
	out, err := json.Marshal(ans)
	if err != nil {
		return fmt.Errorf("fake gws: encode answer: %w", err)
	}
	if _, err := stdout.Write(append(out, '\n')); err != nil {
		return fmt.Errorf("fake gws: write answer: %w", err)
	}
	return nil
}

// Main is the whole fake gws for a program acting as GWS_BIN: it loads the
// events file named by EventsEnv (read through getenv) and runs args. It
// returns the exit status: 0, or 1 with the reason on stderr.
func Main(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	err := func() error {
		path := getenv(EventsEnv)
		if path == "" {
			return fmt.Errorf("fake gws: %s is not set (the events file)", EventsEnv)
		}
		evs, err := Load(path)
		if err != nil {
			return err
		}
		return Run(args, stdout, evs)
	}()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// Load reads the events file written by Save.
func Load(path string) ([]Event, error) {
	data, err := os.ReadFile(path) // #nosec G304 -- the simulator's own events file
	if err != nil {
		return nil, fmt.Errorf("fake gws: read events: %w", err)
	}
	var evs []Event
	if err := json.Unmarshal(data, &evs); err != nil {
		return nil, fmt.Errorf("fake gws: decode events %s: %w", path, err)
	}
	return evs, nil
}

// Save writes the events to path as JSON, atomically, for Load in the
// gws child.
func Save(path string, events []Event) error {
	data, err := json.MarshalIndent(events, "", "  ")
	if err != nil {
		return fmt.Errorf("fake gws: encode events: %w", err)
	}
	if err := admin.WriteAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("fake gws: save events: %w", err)
	}
	return nil
}
