package perception

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// Limits on what one caller-supplied event may cost.
const (
	// MaxDeviceID is the longest device id accepted, in bytes.
	MaxDeviceID = 128
	// MaxData is the most event data kept per event (state, recent ring,
	// feed frame), as encoded JSON bytes.
	MaxData = 4 << 10
	// maxDataValue is the largest single data value kept whole; a longer
	// string is cut, a larger object or array is replaced by a summary.
	maxDataValue = 256
)

// CheckDeviceID validates a caller's device id: not blank, at most 128
// bytes, no control characters. loc is where it came from ("body",
// "query" or "path"). The item is FastAPI's 422 shape.
func CheckDeviceID(id, loc string) (httpapi.ValidationItem, bool) {
	var msg string
	switch {
	case strings.TrimSpace(id) == "":
		msg = "device_id must not be blank"
	case len(id) > MaxDeviceID:
		msg = "device_id must be at most 128 bytes"
	case strings.ContainsFunc(id, unicode.IsControl) || !utf8.ValidString(id):
		msg = "device_id must not contain control characters"
	default:
		return httpapi.ValidationItem{}, true
	}
	return httpapi.ValidationItem{Type: "value_error", Loc: []any{loc, "device_id"}, Msg: "Value error, " + msg, Input: id}, false
}

// capData bounds an event's data to about MaxData bytes of JSON. Data whose
// encoding (raw) is within it is kept as sent. Otherwise each value is kept
// if small, a long string is cut to 256 bytes ending in "…", and a large
// object or array becomes {"truncated": true, "bytes": <its size>}; keys
// are taken in sorted order while they fit, and "truncated_keys" counts
// any left out. The small fields consumers read (direction, state,
// identity …) always survive.
func capData(d map[string]any, raw json.RawMessage) map[string]any {
	if len(raw) <= MaxData {
		return d
	}
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(map[string]any, len(d))
	size, dropped := 2, 0
	for _, k := range keys {
		v := summarise(d[k])
		enc, err := json.Marshal(v)
		if err != nil {
			dropped++
			continue
		}
		n := len(k) + len(enc) + 4 // quotes, colon, comma
		if len(k) > maxDataValue || size+n > MaxData-64 {
			dropped++
			continue
		}
		out[k] = v
		size += n
	}
	if dropped > 0 {
		out["truncated_keys"] = dropped
	}
	return out
}

// summarise returns v, or a bounded stand-in when it is large.
func summarise(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) <= maxDataValue {
			return x
		}
		cut := maxDataValue - len("…")
		for cut > 0 && !utf8.RuneStart(x[cut]) {
			cut--
		}
		return x[:cut] + "…"
	case map[string]any, []any:
		enc, err := json.Marshal(x)
		if err != nil || len(enc) > maxDataValue {
			return map[string]any{"truncated": true, "bytes": len(enc)}
		}
	}
	return v
}
