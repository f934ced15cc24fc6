package social

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
)

// maxStateFile bounds what is read of the greeter's state file; a real
// one is a few hundred bytes.
const maxStateFile = 1 << 20

// greetSlot is one person's greetings today.
type greetSlot struct {
	Count  int     `json:"count"`
	LastTS float64 `json:"last_ts"` // the last greeting's event time, epoch seconds; 0 never
	member bool    // counted as a household member (not in the file: the roster says)
}

// greetState counts greetings per identity for the local day and keeps
// the counts in a file, so a restart does not greet everyone again. The
// file is bridge.py's {"YYYY-MM-DD": {<identity>: {"count", "last_ts"}}}
// with only today kept, replaced atomically at each change.
//
// The table is keyed by what faces are recognised as, so it is bounded
// without ever forgetting a count during the day (forgetting one would
// start its cap again): household members are counted under their roster
// id (bounded by the roster), every face not on it under "unknown", and
// only with greet-anyone on are others counted by name, at most max of
// them a day; past that a new one is not greeted until the next day.
type greetState struct {
	path   string // "" keeps the counts in memory only
	max    int    // identities not on the roster counted per day (0 unless greet-anyone)
	log    hclog.Logger
	health *health.Conditions // the file's condition, failing while it cannot be saved

	mu      sync.Mutex
	day     string
	people  map[string]greetSlot
	fullDay string // the day the table of others was found full (warned once a day)

	writeMu sync.Mutex // one file write at a time, in order
}

// newGreetState keeps the counts in path; conds nil keeps a private set.
func newGreetState(path string, max int, log hclog.Logger, conds *health.Conditions) *greetState {
	if conds == nil {
		conds = health.New()
	}
	return &greetState{path: path, max: max, log: log, health: conds, people: map[string]greetSlot{}}
}

// load reads today's counts, each under the key resolve gives its
// identity (a member's roster id; members under two spellings are merged,
// the higher count and the later time kept). Of the identities not on the
// roster, at most max are kept, the most recently greeted. A missing file
// is a fresh start; a corrupt one is logged and replaced with an empty
// state; one the file system cannot open is the file's health condition
// (logged once) until a save succeeds or its re-check reads the file again
// (or finds it gone).
func (g *greetState) load(today string, resolve func(identity string) (key string, member bool)) {
	if g.path == "" {
		return
	}
	days, err := readGreetFile(g.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) { // the file system's trouble, not the content: nothing to replace
		g.health.Failed(g.log, hclog.Warn, g.key(), "greeter state", err, health.Readable(g.path), "greeter state unreadable; starting fresh", "path", g.path)
		return
	}
	if err != nil {
		g.log.Warn("greeter state unreadable; starting fresh and replacing it", "path", g.path, "error", err)
		g.mu.Lock()
		g.day, g.people = today, map[string]greetSlot{}
		g.mu.Unlock()
		g.save()
		return
	}
	people := g.bounded(days[today], resolve)
	g.mu.Lock()
	g.day, g.people = today, people
	g.mu.Unlock()
	if len(people) > 0 {
		g.log.Debug("greeter state loaded", "path", g.path, "people", len(people))
	}
}

// bounded rekeys a day's counts read from the file (see load).
func (g *greetState) bounded(read map[string]greetSlot, resolve func(string) (string, bool)) map[string]greetSlot {
	people, others := map[string]greetSlot{}, map[string]greetSlot{}
	for id, slot := range read {
		key, member := resolve(id)
		to := people
		if !member && key != Unknown {
			to = others
		}
		if old, ok := to[key]; ok { // two spellings of one person: the stricter count
			slot.Count, slot.LastTS = max(slot.Count, old.Count), max(slot.LastTS, old.LastTS)
		}
		slot.member = member
		to[key] = slot
	}
	keys := slices.Collect(maps.Keys(others))
	slices.SortFunc(keys, func(a, b string) int { // the most recently greeted first
		if c := cmp.Compare(others[b].LastTS, others[a].LastTS); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys[:min(len(keys), g.max)] {
		people[k] = others[k]
	}
	return people
}

// readGreetFile parses the state file. Days and entries that are not
// objects are skipped (as bridge.py did); a count or time that is not a
// number is an error.
func readGreetFile(path string) (map[string]map[string]greetSlot, error) {
	f, err := os.Open(path) // #nosec G304 -- the configured state file
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return nil, fmt.Errorf("read greeter state: %w", err)
	}
	if len(b) > maxStateFile {
		return nil, fmt.Errorf("greeter state over %d bytes", maxStateFile)
	}
	var top map[string]json.RawMessage
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("greeter state is not a JSON object")
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("decode greeter state: %w", err)
	}
	out := make(map[string]map[string]greetSlot, len(top))
	for day, raw := range top {
		var bucket map[string]json.RawMessage
		if json.Unmarshal(raw, &bucket) != nil || bucket == nil {
			continue
		}
		people := map[string]greetSlot{}
		for id, rawSlot := range bucket {
			var slot map[string]any
			if json.Unmarshal(rawSlot, &slot) != nil || slot == nil {
				continue
			}
			count, err := number(slot["count"])
			if err != nil {
				return nil, fmt.Errorf("greeter state %s/%s count: %w", day, id, err)
			}
			last, err := number(slot["last_ts"])
			if err != nil {
				return nil, fmt.Errorf("greeter state %s/%s last_ts: %w", day, id, err)
			}
			people[id] = greetSlot{Count: int(math.Trunc(count)), LastTS: last}
		}
		out[day] = people
	}
	return out, nil
}

// number reads a count or time as bridge.py's int()/float() of "value or
// 0" did: null, false and "" are 0, true is 1, numbers and numeric strings
// are themselves.
func number(v any) (float64, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case float64:
		return x, nil
	case string:
		if x == "" {
			return 0, nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%q is not a number", x)
		}
		return f, nil
	}
	return 0, fmt.Errorf("%T is not a number", v)
}

// take decides whether the face counted under key (a member's roster id
// when member, else "unknown" or, with greet-anyone, its identity) may be
// greeted at event time at (epoch seconds) on day, and counts the greeting
// when it may. The reason says why not.
func (g *greetState) take(key string, member bool, at float64, day string, perDay int, cooldown time.Duration) (bool, string) {
	g.mu.Lock()
	if g.day != day { // a new local day: yesterday's counts are dropped
		g.day, g.people = day, map[string]greetSlot{}
	}
	slot, seen := g.people[key]
	if !seen && !member && key != Unknown && g.othersLocked() >= g.max {
		warn := g.fullDay != day
		g.fullDay = day
		g.mu.Unlock()
		if warn {
			g.log.Warn("greeted as many faces not on the household roster today as are counted; others are not greeted until tomorrow",
				"max", g.max)
		}
		return false, fmt.Sprintf("%d faces not on the roster already greeted today", g.max)
	}
	if slot.Count >= perDay {
		g.mu.Unlock()
		return false, fmt.Sprintf("per-day cap reached (%d)", slot.Count)
	}
	if slot.LastTS > 0 && at-slot.LastTS < cooldown.Seconds() {
		g.mu.Unlock()
		return false, fmt.Sprintf("cooldown active (%.0fs since the last greeting)", at-slot.LastTS)
	}
	slot.Count++
	slot.LastTS = at
	slot.member = slot.member || member
	g.people[key] = slot
	g.mu.Unlock()
	g.save()
	return true, ""
}

// othersLocked counts today's identities neither members nor "unknown".
func (g *greetState) othersLocked() int {
	n := 0
	for k, v := range g.people {
		if !v.member && k != Unknown {
			n++
		}
	}
	return n
}

// snapshot returns the file's content for the current day.
func (g *greetState) snapshot() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]map[string]greetSlot{}
	if g.day != "" && len(g.people) > 0 {
		out[g.day] = g.people
	}
	b, _ := json.Marshal(out) // plain strings and numbers always encode
	return b
}

// save replaces the file with the current counts: written to a temporary
// file beside it, then renamed over it, so a crash leaves the old or the
// new file, never half of one. A failure marks the file's health
// condition and is logged once (Debug while it lasts), never fatal; the
// next save that succeeds clears it, and so does the re-check of a
// directory that was the cause (health.DirCheck) once it takes files.
func (g *greetState) save() {
	if g.path == "" {
		return
	}
	data := g.snapshot()
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if err := writeAtomic(g.path, data); err != nil {
		g.health.Failed(g.log, hclog.Warn, g.key(), "greeter state", err, health.DirCheck(filepath.Dir(g.path), err),
			"cannot save the greeter state; a restart may greet again", "path", g.path)
		return
	}
	g.health.Recovered(g.log, g.key(), "greeter state saved again", "path", g.path)
}

// key is the file's health condition: failing while it cannot be read or
// saved, until a save succeeds or its re-check passes.
func (g *greetState) key() string { return "greeter state " + g.path }

// writeAtomic replaces path with data. Its errors are the file system's,
// each naming its path.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) // #nosec G304 -- the configured state file
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	merr := os.Chmod(tmp, 0o600) // a leftover temporary file may have had another mode
	if err := errors.Join(werr, serr, cerr, merr); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// Greeted returns today's greeting counts, each under what it is counted
// as: a member's roster id, "unknown", or (greet-anyone) a name.
func (s *Service) Greeted() map[string]int {
	g := s.greeter.state
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.day != s.today() {
		return map[string]int{}
	}
	out := make(map[string]int, len(g.people))
	for id, slot := range g.people {
		out[id] = slot.Count
	}
	return out
}
