// Package pyjson reads JSON values the way the Python programs the bridge
// talks to (bridge.py, the steerable-sidecar) judge them.
package pyjson

import (
	"bytes"
	"encoding/json"
)

// Falsy reports whether Python treats the JSON value raw as false: null,
// false, 0, "", [] and {}. An absent value (empty raw) is falsy too; a
// value that is not JSON is not.
func Falsy(raw json.RawMessage) bool {
	if len(bytes.TrimSpace(raw)) == 0 {
		return true
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}
