package pyjson

import (
	"encoding/json"
	"testing"
)

func TestFalsy(t *testing.T) {
	for raw, want := range map[string]bool{
		"": true, "  ": true, "null": true, "false": true, "0": true, "0.0": true,
		`""`: true, "[]": true, "{}": true,
		"true": false, "1": false, "-1": false, `"0"`: false, `" "`: false,
		"[0]": false, `{"a":null}`: false, "not json": false,
	} {
		if got := Falsy(json.RawMessage(raw)); got != want {
			t.Errorf("Falsy(%q) = %v, want %v", raw, got, want)
		}
	}
}
