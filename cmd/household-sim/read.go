package main

import (
	"encoding/json"
	"fmt"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/household-sim/observe"
)

// record is what the checks need of a line of one of the bridge's daily
// files: observe's record plus a turn's request and error.
type record struct {
	observe.Record
	RequestText string
	Error       *string
}

// daily reads the file of kind for date, and its size.
func daily(dir, kind, date string) ([]record, int64, error) {
	recs, err := observe.Records(dir, kind, date)
	if err != nil {
		return nil, 0, err
	}
	size, err := observe.DayBytes(dir, kind, date)
	if err != nil {
		return nil, 0, err
	}
	out := make([]record, len(recs))
	for i, r := range recs {
		out[i] = record{Record: r}
		if kind == observe.Convo {
			var turn struct {
				RequestText string  `json:"request_text"`
				Error       *string `json:"error"`
			}
			if err := json.Unmarshal(r.Raw, &turn); err != nil {
				return nil, 0, fmt.Errorf("%s: %w", observe.Path(dir, kind, date), err)
			}
			out[i].RequestText, out[i].Error = turn.RequestText, turn.Error
		}
	}
	return out, size, nil
}

// greeterState reads greeter_state.json: its day and counts.
func greeterState(path string) (day string, counts map[string]int, err error) {
	st, err := observe.ReadGreeterState(path)
	if err != nil {
		return "", nil, err
	}
	counts = map[string]int{}
	for who, g := range st.People {
		counts[who] = g.Count
	}
	return st.Date, counts, nil
}

// memories reads brain.db's memories: content → namespace.
func memories(path string) (map[string]string, error) {
	rows, err := observe.Memories(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range rows {
		out[m.Content] = m.Namespace
	}
	return out, nil
}
