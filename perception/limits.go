package perception

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
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

// capData bounds an event's data to about MaxData bytes of JSON (nil
// becomes {}). Data whose encoding is within it is kept as sent.
// Otherwise each value is kept if small, a long string is cut to 256 bytes
// ending in "…", and a large object or array becomes {"truncated": true,
// "bytes": <its size>}; keys are taken in sorted order while they fit, and
// "truncated_keys" counts any left out. The small fields consumers read
// (direction, state, identity …) always survive. Every event's data goes
// through it as it is made (DataOf, and newData for a POSTed event's data
// over MaxData), so nothing retained (state, recent ring, feed frame)
// holds more than this per event.
func capData(d map[string]any) map[string]any {
	if d == nil {
		return map[string]any{}
	}
	if jsonSize(d, MaxData) <= MaxData {
		return d
	}
	out := make(map[string]any, len(d))
	size, dropped := 2, 0
	for _, k := range slices.Sorted(maps.Keys(d)) {
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

// jsonSize is about the length of v's JSON encoding, never less (escapes
// are counted at their longest); past budget it stops early and returns
// some value over budget. It allocates nothing, so the common small event
// costs a short walk.
func jsonSize(v any, budget int) int {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case float64:
		return 24
	case string:
		return quotedSize(x)
	case map[string]any:
		n := 2
		for k, e := range x {
			n += quotedSize(k) + 2 + jsonSize(e, budget-n)
			if n > budget {
				return n
			}
		}
		return n
	case []any:
		n := 2
		for _, e := range x {
			n += 1 + jsonSize(e, budget-n)
			if n > budget {
				return n
			}
		}
		return n
	}
	enc, err := json.Marshal(v) // other types come only from Go callers' synthetic events
	if err != nil {
		return budget + 1
	}
	return len(enc)
}

// quotedSize is a bound on the length of valid UTF-8 s as a JSON string:
// a byte encoding/json may escape counts as a six-byte \u escape, and a
// non-ASCII byte as two (U+2028 and U+2029, three bytes, become six).
func quotedSize(s string) int {
	n := 2 + len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			n += 5
		case c >= 0x80:
			n++
		}
	}
	return n
}

// summarise returns v, or a bounded stand-in when it is large.
func summarise(v any) any {
	switch x := v.(type) {
	case string:
		return text.Truncate(x, text.Cut{Max: maxDataValue, Bytes: true, Mark: "…", MarkInside: true})
	case map[string]any, []any:
		enc, err := json.Marshal(x)
		if err != nil || len(enc) > maxDataValue {
			return map[string]any{"truncated": true, "bytes": len(enc)}
		}
	}
	return v
}
