// Package observe reads what the bridge wrote, without changing it, for
// the household simulator's invariants and report: the daily NDJSON files
// in the log directory, the greeter's state file and brain.db.
package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The kinds of daily file, <dir>/<kind>-YYYY-MM-DD.ndjson, as the bridge
// names them.
const (
	Convo    = "convo"           // one record per voice turn; the greeter's have channel "greeter"
	Security = "security"        // one record per security-watch cycle (dated in DOTTY_LOCAL_TZ)
	Scene    = "scene-synthesis" // scene syntheses
	Idle     = "perception"      // notable idle photos
	Dreams   = "dreams"          // the sleep dreamer's dreams
	Dances   = "dances"          // dance reflections
)

// maxLine bounds one record; the bridge's largest (a conversation turn)
// is a few KiB, so a longer line is reported, not read.
const maxLine = 1 << 20

// Record is one line of a daily file: its time, the device and channel
// when the record has them ("" otherwise), and the whole line.
type Record struct {
	TS      time.Time
	Device  string
	Channel string
	Raw     json.RawMessage
}

// Path is the file of kind for date (YYYY-MM-DD) in dir.
func Path(dir, kind, date string) string {
	return filepath.Join(dir, kind+"-"+date+".ndjson")
}

// Records reads the day's file of kind in order. A missing file is no
// records; a line that is not a JSON object with an RFC 3339 "ts", or is
// longer than 1 MiB, is an error naming the file and line.
func Records(dir, kind, date string) ([]Record, error) {
	path := Path(dir, kind, date)
	data, err := os.ReadFile(path) // #nosec G304 -- the simulator's own log directory
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	var out []Record
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(line) > maxLine {
			return nil, fmt.Errorf("observe: %s:%d: a record of %d bytes (over %d)", path, i+1, len(line), maxLine)
		}
		var head struct {
			TS      string `json:"ts"`
			Device  string `json:"device"`
			Channel string `json:"channel"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, fmt.Errorf("observe: %s:%d: %w", path, i+1, err)
		}
		ts, err := time.Parse(time.RFC3339, head.TS)
		if err != nil {
			return nil, fmt.Errorf("observe: %s:%d: ts: %w", path, i+1, err)
		}
		out = append(out, Record{TS: ts, Device: head.Device, Channel: head.Channel, Raw: slices.Clone(line)})
	}
	return out, nil
}

// DayBytes is the size of the day's file of kind; 0 when there is none.
func DayBytes(dir, kind, date string) (int64, error) {
	fi, err := os.Stat(Path(dir, kind, date))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("observe: %w", err)
	}
	return fi.Size(), nil
}

// Dates lists the dates that have a file of kind in dir, oldest first.
func Dates(dir, kind string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, kind+"-*.ndjson"))
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	var out []string
	for _, f := range files {
		d := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), kind+"-"), ".ndjson")
		if _, err := time.Parse(time.DateOnly, d); err == nil {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out, nil
}
