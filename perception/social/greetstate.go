package social

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
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
}

// greetState counts greetings per identity for the local day and keeps
// the counts in a file, so a restart does not greet everyone again. The
// file is bridge.py's {"YYYY-MM-DD": {<identity>: {"count", "last_ts"}}}
// with only today kept, replaced atomically at each change.
type greetState struct {
	path   string // "" keeps the counts in memory only
	max    int    // identities kept per day
	log    hclog.Logger
	health *health.Conditions // the file's condition, failing while it cannot be saved

	mu     sync.Mutex
	day    string
	people map[string]greetSlot

	writeMu sync.Mutex // one file write at a time, in order
}

// newGreetState keeps the counts in path; conds nil keeps a private set.
func newGreetState(path string, max int, log hclog.Logger, conds *health.Conditions) *greetState {
	if conds == nil {
		conds = health.New()
	}
	return &greetState{path: path, max: max, log: log, health: conds, people: map[string]greetSlot{}}
}

// load reads today's counts. A missing file is a fresh start; a corrupt
// one is logged and replaced with an empty state; one the file system
// cannot open is the file's health condition (logged once) until a save
// succeeds or its re-check reads the file again (or finds it gone).
func (g *greetState) load(today string) {
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
	people := days[today]
	if people == nil {
		people = map[string]greetSlot{}
	}
	for len(people) > g.max {
		delete(people, oldest(people, ""))
	}
	g.mu.Lock()
	g.day, g.people = today, people
	g.mu.Unlock()
	if len(people) > 0 {
		g.log.Debug("greeter state loaded", "path", g.path, "people", len(people))
	}
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

// take decides whether identity may be greeted at event time at (epoch
// seconds) on day, and counts the greeting when it may. The reason says
// why not.
func (g *greetState) take(identity string, at float64, day string, perDay int, cooldown time.Duration) (bool, string) {
	g.mu.Lock()
	if g.day != day { // a new local day: yesterday's counts are dropped
		g.day, g.people = day, map[string]greetSlot{}
	}
	slot := g.people[identity]
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
	g.people[identity] = slot
	if len(g.people) > g.max { // identities come from events: keep the day's table bounded
		delete(g.people, oldest(g.people, identity))
	}
	g.mu.Unlock()
	g.save()
	return true, ""
}

// oldest is the identity greeted longest ago, other than keep.
func oldest(people map[string]greetSlot, keep string) string {
	id, at := "", math.Inf(1)
	for k, v := range people {
		if k != keep && (v.LastTS < at || (v.LastTS == at && k < id)) {
			id, at = k, v.LastTS
		}
	}
	return id
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

// Greeted returns today's greeting count of each identity.
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
