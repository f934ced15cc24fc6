package observe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"time"
)

// GreeterState is the proactive greeter's state file (GREETER_STATE_PATH):
// the local day it counts and each identity's greetings that day.
type GreeterState struct {
	// Date is the day counted (YYYY-MM-DD); "" when nobody was greeted yet.
	Date string
	// People maps each identity counted (a roster id, "unknown", or a
	// name) to its greetings.
	People map[string]Greetings
}

// Greetings is one identity's count for the day and its last greeting's
// event time (to the microsecond; zero when never).
type Greetings struct {
	Count int
	Last  time.Time
}

// ReadGreeterState reads the file as the bridge writes it,
// {"YYYY-MM-DD": {<identity>: {"count": n, "last_ts": epoch seconds}}},
// strictly: a file holding more than one day, an unknown field or a
// non-integer count is an error, as the bridge never writes one.
func ReadGreeterState(path string) (GreeterState, error) {
	data, err := os.ReadFile(path) // #nosec G304 -- the simulator's own state file
	if err != nil {
		return GreeterState{}, fmt.Errorf("observe: greeter state: %w", err)
	}
	var top map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return GreeterState{}, fmt.Errorf("observe: greeter state %s: %w", path, err)
	}
	if len(top) > 1 {
		return GreeterState{}, fmt.Errorf("observe: greeter state %s holds %d days %q, want today only", path, len(top), slices.Sorted(maps.Keys(top)))
	}
	out := GreeterState{People: map[string]Greetings{}}
	for day, people := range top {
		if _, err := time.Parse(time.DateOnly, day); err != nil {
			return GreeterState{}, fmt.Errorf("observe: greeter state %s: day %q: %w", path, day, err)
		}
		out.Date = day
		for id, raw := range people {
			var slot struct {
				Count  *int     `json:"count"`
				LastTS *float64 `json:"last_ts"`
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&slot); err != nil || slot.Count == nil || slot.LastTS == nil {
				return GreeterState{}, fmt.Errorf("observe: greeter state %s: %s/%s is not {count, last_ts}: %s", path, day, id, raw)
			}
			g := Greetings{Count: *slot.Count}
			if *slot.LastTS > 0 {
				sec, frac := math.Modf(*slot.LastTS)
				g.Last = time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3)
			}
			out.People[id] = g
		}
	}
	return out, nil
}
