package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // brain.db, read only
)

// record is what the checks need of a line of one of the bridge's daily
// ndjson files.
type record struct {
	TS          string  `json:"ts"`
	Device      string  `json:"device"`
	Channel     string  `json:"channel"`
	RequestText string  `json:"request_text"`
	Error       *string `json:"error"`
	at          time.Time
}

// daily reads the file of kind ("convo", "dreams", …) for date; a missing
// file is no records.
func daily(dir, kind, date string) ([]record, int64, error) {
	f, err := os.Open(filepath.Join(dir, kind+"-"+date+".ndjson")) // #nosec G304 -- the sim's own temp dir
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var out []record
	var size int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		size += int64(len(sc.Bytes())) + 1
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, 0, fmt.Errorf("%s-%s.ndjson: %w", kind, date, err)
		}
		if r.at, err = time.Parse(time.RFC3339Nano, r.TS); err != nil {
			return nil, 0, fmt.Errorf("%s-%s.ndjson: ts %q: %w", kind, date, r.TS, err)
		}
		out = append(out, r)
	}
	return out, size, sc.Err()
}

// greeterState reads greeter_state.json: its day and counts.
func greeterState(path string) (day string, counts map[string]int, err error) {
	b, err := os.ReadFile(path) // #nosec G304 -- the sim's own temp dir
	if err != nil {
		return "", nil, err
	}
	var doc map[string]map[string]struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", nil, fmt.Errorf("greeter_state.json: %w", err)
	}
	if len(doc) > 1 {
		return "", nil, fmt.Errorf("greeter_state.json holds %d days", len(doc))
	}
	counts = map[string]int{}
	for d, people := range doc {
		day = d
		for who, s := range people {
			counts[who] = s.Count
		}
	}
	return day, counts, nil
}

// memories reads brain.db's memories: content → namespace.
func memories(path string) (map[string]string, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT namespace, content FROM memories`)
	if err != nil {
		return nil, fmt.Errorf("brain.db: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, c string
		if err := rows.Scan(&k, &c); err != nil {
			return nil, fmt.Errorf("brain.db: %w", err)
		}
		out[c] = k
	}
	return out, rows.Err()
}
